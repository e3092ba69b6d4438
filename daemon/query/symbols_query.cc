#include "daemon/query/symbols_query.h"

#include <algorithm>
#include <string>
#include <vector>

#include "daemon/os/proc.h"
#include "daemon/query/access_checks.h"
#include "daemon/query/process_finder.h"

namespace jitsym::query {
namespace {

proto::Response Error(std::string_view code, std::string message) {
  proto::Response r;
  r.body = proto::ErrorResponse{std::string(code), std::move(message)};
  return r;
}

// The parts of [start, end) that `covered` (sorted, disjoint intervals) does not cover.
std::vector<std::pair<uint64_t, uint64_t>> Uncovered(
    const std::vector<std::pair<uint64_t, uint64_t>>& covered, uint64_t start, uint64_t end) {
  std::vector<std::pair<uint64_t, uint64_t>> out;
  auto it = std::upper_bound(covered.begin(), covered.end(), std::make_pair(start, UINT64_MAX));
  if (it != covered.begin() && std::prev(it)->second > start) start = std::prev(it)->second;
  for (; start < end; ++it) {
    if (it == covered.end() || it->first >= end) {
      out.emplace_back(start, end);
      break;
    }
    if (it->first > start) out.emplace_back(start, it->first);
    start = std::max(start, it->second);
  }
  return out;
}

// The answer for a pid nothing is known of; also for one the peer may not see and which is no
// live process of someone else (DecideProcess), so that it cannot tell the two apart.
proto::Response NotFound(uint32_t pid) {
  return Error(proto::kErrNotFound, "no symbols known for pid " + std::to_string(pid));
}

// Whether the live process `now` is the incarnation `process` (not a later process that reused
// the pid). /proc start times tick at 100 Hz and the index may place an incarnation's start a
// little later than /proc does (after its predecessor's last record): a second of slack. The
// owner must match exactly, which is what the access decision rests on.
bool IsIncarnation(const index::ProcessView& process, const os::ProcessIdentity& now) {
  if (!process.alive || !process.uid || *process.uid != now.uid || !process.start_time) {
    return false;
  }
  const uint64_t live = os::StartTicksToMonotonicNs(now.start_ticks);
  const uint64_t recorded = *process.start_time;
  const uint64_t diff = live > recorded ? live - recorded : recorded - live;
  return diff <= 1000000000ull;
}

}  // namespace

proto::Response ListSymbols(const index::IndexView& view, const proto::SymbolsRequest& request,
                            const security::PeerAccess& access, ImageLookup& images) {
  if (request.pid <= 0 || request.pid > 0x7fffffff) {
    return Error(proto::kErrBadRequest, "\"pid\" must be a positive process id");
  }
  const uint32_t pid = static_cast<uint32_t>(request.pid);
  // The incarnation listed is the latest one the index knows; a live process the index does
  // not know is listed from its mappings only. Who may list it is decided per incarnation, from
  // the owner recorded while it lived (as for lookups), before /proc or any file is read.
  // `pid` may be a thread id (ProcessFinder): what /proc says is then read for its process
  // (a thread's start time is not the process's).
  const index::ProcessView* process = ProcessFinder(view, pid).Find(std::nullopt);
  const uint32_t process_pid = process != nullptr ? process->pid : pid;
  const os::ProcessLookup lookup = os::LookUpProcess(process_pid);
  if (lookup.error != 0) {
    proto::Response busy;
    busy.body = OwnerUnknown(process_pid, lookup.error);
    return busy;
  }
  const std::optional<os::ProcessIdentity>& now = lookup.identity;
  if (process == nullptr && !now) return NotFound(pid);
  const security::ProcessAccess verdict =
      access.ForProcess(process != nullptr ? process->uid : std::optional(now->uid), pid);
  if (verdict == security::ProcessAccess::kDenied) {
    return Error(proto::kErrPermission, "only root, the trusted group and the owner of pid " +
                                            std::to_string(pid) + " may list its symbols");
  }
  if (verdict == security::ProcessAccess::kUnknown) return NotFound(pid);
  // The live process's mapped images belong to the listed incarnation only if it is that
  // process: same owner, and started when the incarnation did.
  std::vector<ImageLookup::MappedImage> mapped;
  if (now && (process == nullptr || IsIncarnation(*process, *now))) {
    if (auto live = images.LiveMappedImages(view, process_pid);
        live && live->identity.start_ticks == now->start_ticks && live->identity.uid == now->uid) {
      mapped = std::move(live->images);
    }
  }
  if (process == nullptr && mapped.empty()) return NotFound(pid);

  proto::SymbolsResponse out;
  out.pid = request.pid;
  // (start, end) of everything listed so far, sorted; earlier sources win, as in lookups.
  std::vector<std::pair<uint64_t, uint64_t>> covered;
  std::vector<proto::SymbolEntry> entries;
  auto add_source = [&](const index::SourceView& source, uint64_t base, uint64_t limit) {
    std::vector<std::pair<uint64_t, uint64_t>> added;
    for (const index::LatestPiece& piece : source.code->ranges().Latest()) {
      const uint64_t start = piece.start + base, end = piece.end + base;
      if (end < start || (limit != 0 && end > limit)) continue;  // wraps, or outside the image
      for (const auto& [s, e] : Uncovered(covered, start, end)) {
        proto::SymbolEntry& entry = entries.emplace_back();
        entry.start = s;
        entry.size = e - s;
        entry.name = source.code->name(*piece.range);
        entry.origin = proto::OriginFromName(source.origin).value_or(proto::Origin::kUnknown);
        entry.image = source.image;
        added.emplace_back(s, e);
      }
    }
    covered.insert(covered.end(), added.begin(), added.end());
    std::sort(covered.begin(), covered.end());
  };
  if (process != nullptr) {
    out.incarnation = process->incarnation;
    for (const auto& source : process->sources) add_source(*source, 0, 0);
  }
  for (const auto& img : mapped) add_source(*img.source, img.base, img.end);
  std::sort(
      entries.begin(), entries.end(),
      [](const proto::SymbolEntry& a, const proto::SymbolEntry& b) { return a.start < b.start; });
  out.symbols = std::move(entries);
  proto::Response response;
  response.body = std::move(out);
  return response;
}

}  // namespace jitsym::query
