#include "daemon/query/symbols_query.h"

#include <sys/stat.h>

#include <algorithm>
#include <string>
#include <vector>

#include "daemon/ingest/proc.h"

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

}  // namespace

proto::Response ListSymbols(const index::IndexView& view, const proto::SymbolsRequest& request,
                            const security::PeerAccess& access, ImageLookup& images) {
  if (request.pid <= 0 || request.pid > 0x7fffffff) {
    return Error(proto::kErrBadRequest, "\"pid\" must be a positive process id");
  }
  const uint32_t pid = static_cast<uint32_t>(request.pid);
  const index::ProcessView* process = view.FindProcess(pid, std::nullopt);
  std::optional<uint32_t> owner;
  std::vector<ImageLookup::MappedImage> mapped = images.MappedImages(view, pid, &owner);
  if (process == nullptr && mapped.empty()) {
    return Error(proto::kErrNotFound, "no symbols known for pid " + std::to_string(pid));
  }
  if (!owner && process != nullptr) owner = process->uid;  // recorded while it lived
  if (!owner && process != nullptr) {
    // Never seen alive: its side files were written by it, so their owner is its owner.
    for (const auto& source : process->sources) {
      struct stat st {};
      if (::stat(source->path.c_str(), &st) == 0) {
        owner = st.st_uid;
        break;
      }
    }
  }
  if (!access.MaySeeProcess(owner)) {
    return Error(proto::kErrPermission, "only root, the trusted group and the owner of pid " +
                                            std::to_string(pid) + " may list its symbols");
  }

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
        entry.origin = source.origin;
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
