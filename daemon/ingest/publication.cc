// Building the IndexView (publication.h).
#include "daemon/ingest/publication.h"

#include <algorithm>
#include <set>
#include <string_view>

#include "daemon/util/log.h"

namespace jitsym::ingest {
namespace {

// Sources of a process in answer order: exact timestamps first, then the newer file first.
int OriginRank(Origin origin) {
  switch (origin) {
    case Origin::kJitdump:
      return 0;
    case Origin::kMlpd:
      return 1;
    case Origin::kPerfmap:
      return 2;
    default:
      return 3;
  }
}

std::optional<uint64_t> FirstTime(const index::ProcessView& view) {
  std::optional<uint64_t> first;
  for (const auto& s : view.sources) {
    auto t = s->code->ranges().first_time();
    if (t && (!first || *t < *first)) first = t;
  }
  return first;
}

std::shared_ptr<const index::SourceView> SourceViewOf(const FollowedFile& f) {
  auto v = std::make_shared<index::SourceView>();
  v->origin = f.source->origin();
  v->path = f.path;
  v->state =
      f.state == SourceState::kFollowing && f.source->closed() ? SourceState::kClosed : f.state;
  v->error = f.source->failed()
                 ? log::Cat("offset ", f.source->error_offset(), ": ", f.source->error())
                 : "";
  v->bytes_read = f.bytes_read;
  v->owner = f.uid;
  v->records = f.source->records();
  if (f.image) {
    v->image = *f.image;
    v->image_signature = f.source->image_signature();
  }
  v->code = f.source->code().Publish();
  v->ranges = v->code->ranges().size();
  v->memory_bytes = f.source->code().memory_bytes();
  return v;
}

std::shared_ptr<const index::ProcessView> ProcessViewOf(const Incarnation& inc) {
  auto v = std::make_shared<index::ProcessView>();
  v->pid = inc.pid;
  v->incarnation = inc.id;
  v->alive = inc.alive;
  v->uid = inc.uid;
  v->exit_time = inc.exit_time;
  v->start_time = inc.start_time;
  if (inc.ns) {
    v->nspid = inc.ns->nspid;
    v->pid_ns = inc.ns->pid_ns;
    v->mnt_ns = inc.ns->mnt_ns;
    v->cgroup = inc.ns->cgroup;
  }
  v->threads = inc.threads;
  // Exact timestamps first (by origin), and within an origin the newer file (a replacement).
  std::vector<FollowedFile*> order(inc.files.rbegin(), inc.files.rend());
  std::stable_sort(order.begin(), order.end(), [](FollowedFile* a, FollowedFile* b) {
    return OriginRank(a->source->origin()) < OriginRank(b->source->origin());
  });
  for (FollowedFile* f : order) {
    if (f->view) v->sources.push_back(f->view);
  }
  if (!v->start_time) v->start_time = FirstTime(*v);
  return v;
}

// Where time-qualified lookups switch from one incarnation of a pid to the next. /proc start
// times tick at 100 Hz, and a pid can be reused within one tick; but a process writes nothing
// after it exits and its successor starts after that, so the successor starts after the
// predecessor's last record, and after its observed exit if that came before the successor's
// first record.
void SetStartTimes(std::vector<std::unique_ptr<Incarnation>>& incs) {
  std::optional<uint64_t> prev_last, prev_exit;
  for (auto& inc : incs) {
    if (!inc->view) continue;
    const std::optional<uint64_t> first = FirstTime(*inc->view);
    uint64_t start = inc->start_time ? *inc->start_time : first.value_or(0);
    if (prev_last) start = std::max(start, *prev_last + 1);
    if (prev_exit && (!first || *prev_exit <= *first)) start = std::max(start, *prev_exit);
    if (first && start > *first) start = *first;
    if (inc->view->start_time != start) {
      auto v = std::make_shared<index::ProcessView>(*inc->view);
      v->start_time = start;
      inc->view = std::move(v);
    }
    for (const auto& src : inc->view->sources) {
      auto t = src->code->ranges().last_time();
      if (t && (!prev_last || *t > *prev_last)) prev_last = t;
    }
    prev_exit = inc->exit_time;
  }
}

}  // namespace

std::shared_ptr<index::IndexView> BuildView(const std::vector<std::unique_ptr<FollowedFile>>& files,
                                            ProcessTable::Map& processes,
                                            const IngestCounters& counters,
                                            const index::IndexView& current, bool force,
                                            const std::vector<uint32_t>& removed_pids) {
  bool any = false;
  for (auto& f : files) {
    if (!f->changed) continue;
    any = true;
    f->changed = false;
    f->view = SourceViewOf(*f);
    if (f->incarnation) f->incarnation->changed = true;
  }
  std::set<uint32_t> changed_pids(removed_pids.begin(), removed_pids.end());
  for (auto& [pid, incs] : processes) {
    for (auto& inc : incs) {
      if (!inc->changed) continue;
      any = true;
      inc->changed = false;
      inc->view = ProcessViewOf(*inc);
      changed_pids.insert(pid);
    }
  }
  if (!removed_pids.empty()) any = true;
  for (uint32_t pid : changed_pids) {
    if (auto it = processes.find(pid); it != processes.end()) SetStartTimes(it->second);
  }
  const index::IndexCounters& before = current.counters;
  if (!any && !force && current.processes.size() == processes.size() &&
      before.files_untrusted == counters.files_untrusted &&
      before.files_pending == counters.files_pending &&
      before.files_over_limit == counters.files_over_limit &&
      before.files_unattached == counters.files_unattached) {
    return nullptr;
  }
  auto view = std::make_shared<index::IndexView>();
  // Only the pids that changed are set again; the rest is shared with the current view.
  view->processes = current.processes;
  for (uint32_t pid : changed_pids) {
    index::ProcessMap::Incarnations out;
    if (auto it = processes.find(pid); it != processes.end()) {
      for (auto& inc : it->second) {
        if (inc->view) out.push_back(inc->view);
      }
    }
    view->processes.Set(pid, std::move(out));
  }
  for (auto it = files.rbegin(); it != files.rend(); ++it) {  // newest first
    if ((*it)->image && (*it)->view) view->images[*(*it)->image].push_back((*it)->view);
  }
  index::IndexCounters& c = view->counters;
  // From each file's published view, computed when it changed: what the view holds, and no
  // work per unchanged file but reading it.
  for (auto& f : files) {
    if (f->fd >= 0) ++c.files_followed;
    if (!f->view) continue;
    c.records_ingested += f->view->records.value_or(0);
    c.ranges += f->view->ranges;
    c.memory_bytes += f->view->memory_bytes;
  }
  c.files_failed = counters.files_failed;
  c.files_untrusted = counters.files_untrusted;
  c.files_pending = counters.files_pending;
  c.files_over_limit = counters.files_over_limit;
  c.files_unattached = counters.files_unattached;
  c.bytes_ingested = counters.bytes_ingested;
  for (const auto& [pid, incs] : processes) {
    for (const auto& inc : incs) c.processes_exited += !inc->alive;
  }
  c.evictions = counters.evictions;
  c.memory_budget_bytes = counters.memory_budget_bytes;
  return view;
}

}  // namespace jitsym::ingest
