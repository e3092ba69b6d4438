#include "daemon/query/processes_query.h"

#include <utility>

namespace jitsym::query {
namespace {

void Describe(const index::ProcessView& p, proto::ProcessInfo* info) {
  *info = proto::ProcessInfo{};
  info->pid = p.pid;
  info->incarnation = p.incarnation;
  info->alive = p.alive;
  info->uid = p.uid;
  if (p.nspid) info->nspid = p.nspid;
  if (p.pid_ns) info->pid_ns = p.pid_ns;
  if (p.mnt_ns) info->mnt_ns = p.mnt_ns;
  if (!p.cgroup.empty()) info->cgroup = p.cgroup;
  if (!p.threads.empty()) info->threads = p.threads.size();
  for (const auto& s : p.sources) {
    proto::SourceInfo si;
    si.origin = s->origin;
    si.path = s->path;
    si.state = s->state;
    si.ranges = s->ranges;
    si.bytes_read = s->bytes_read;
    si.error = s->error;
    info->ranges += s->ranges;
    const auto& ranges = s->code->ranges();
    if (auto t = ranges.first_time(); t && (!info->first_time || *t < *info->first_time)) {
      info->first_time = t;
    }
    if (auto t = ranges.last_time(); t && (!info->last_time || *t > *info->last_time)) {
      info->last_time = t;
    }
    info->sources.push_back(std::move(si));
  }
}

}  // namespace

ProcessesCursor::ProcessesCursor(std::shared_ptr<const index::IndexView> view,
                                 std::optional<security::PeerAccess> access)
    : view_(std::move(view)), access_(std::move(access)) {}

bool ProcessesCursor::NextProcess(proto::ProcessInfo* out) {
  while (!done_) {
    const auto at = view_->processes.LowerBound(next_pid_);
    if (!at) break;
    const auto& [pid, incarnations] = *at;
    while (incarnation_ < incarnations->size()) {
      const index::ProcessView& p = *(*incarnations)[incarnation_++];
      if (access_ && !access_->MaySeeProcess(p.uid)) continue;
      next_pid_ = pid;
      Describe(p, out);
      return true;
    }
    incarnation_ = 0;
    if (pid == UINT32_MAX) break;
    next_pid_ = pid + 1;
  }
  done_ = true;
  return false;
}

bool ProcessesCursor::NextUnattached(proto::UnattachedInfo* out) {
  if (!view_->unattached) return false;
  while (unattached_ < view_->unattached->size()) {
    const index::UnattachedFile& u = (*view_->unattached)[unattached_++];
    // Listed to its owner (and root, the trusted group): the path is the owner's business.
    if (access_ && !access_->MaySeeProcess(u.uid)) continue;
    *out = {u.path, u.uid, u.reason};
    return true;
  }
  return false;
}

proto::ProcessesResponse ListProcesses(std::shared_ptr<const index::IndexView> view,
                                       std::optional<security::PeerAccess> access) {
  ProcessesCursor cursor(std::move(view), std::move(access));
  proto::ProcessesResponse out;
  for (proto::ProcessInfo p; cursor.NextProcess(&p);) out.processes.push_back(std::move(p));
  for (proto::UnattachedInfo u; cursor.NextUnattached(&u);) out.unattached.push_back(std::move(u));
  return out;
}

}  // namespace jitsym::query
