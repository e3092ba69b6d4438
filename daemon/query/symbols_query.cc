#include "daemon/query/symbols_query.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
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

SymbolsCursor::Layer::Layer(const index::SourceView* source, uint64_t base, uint64_t limit)
    : source_(source),
      base_(base),
      limit_(limit),
      cursor_(std::make_unique<index::LatestCursor>(source->code->ranges())) {
  Settle();
}

void SymbolsCursor::Layer::Settle() {
  if (!cursor_->done()) {
    const index::LatestPiece& p = cursor_->piece();
    const uint64_t start = p.start + base_, end = p.end + base_;
    // A piece that wraps the address space or ends past the image's end is nowhere: and so is
    // every later one (pieces are sorted).
    if (start >= p.start && end >= p.end && (limit_ == 0 || end <= limit_)) {
      start_ = start;
      end_ = end;
      range_ = p.range;
      return;
    }
  }
  cursor_.reset();  // done: what it held goes at once
}

void SymbolsCursor::Layer::Next() {
  cursor_->Next();
  Settle();
}

void SymbolsCursor::Layer::Seek(uint64_t addr) {
  if (addr > base_) cursor_->Seek(addr - base_);
  Settle();
}

SymbolsCursor::SymbolsCursor(int64_t pid, std::shared_ptr<const index::ProcessView> process,
                             std::vector<ImageLookup::MappedImage> images)
    : pid_(pid), process_(std::move(process)), images_(std::move(images)) {
  // An image's pieces start at its base: it joins the overlay there, below everything before.
  std::stable_sort(images_.begin(), images_.end(),
                   [](const auto& a, const auto& b) { return a.base < b.base; });
  auto layer_bytes = [](const index::SourceView& s) {
    return sizeof(Layer) + sizeof(index::LatestCursor) + 64 * (s.code->ranges().runs() + 1);
  };
  memory_bytes_ = images_.capacity() * sizeof(ImageLookup::MappedImage);
  if (process_ != nullptr) {
    for (const auto& source : process_->sources) {
      memory_bytes_ += layer_bytes(*source);
      overlay_.Add(Layer(source.get(), 0, 0));
    }
  }
  for (const auto& img : images_) memory_bytes_ += layer_bytes(*img.source);
}

bool SymbolsCursor::Next(proto::SymbolEntry* entry) {
  for (;;) {
    const uint64_t before = next_image_ < images_.size() ? images_[next_image_].base : UINT64_MAX;
    index::Overlay<Layer>::Segment s;
    if (overlay_.Next(&s, before)) {
      const Layer& layer = overlay_.layer(s.layer);
      const index::SourceView& source = layer.source();
      entry->start = s.start;
      entry->size = s.end - s.start;
      entry->name.assign(source.code->name(layer.range()));
      entry->origin = source.origin;
      entry->image.assign(source.image);
      return true;
    }
    if (next_image_ == images_.size()) return false;
    const ImageLookup::MappedImage& img = images_[next_image_++];
    overlay_.Add(Layer(img.source.get(), img.base, img.end));
  }
}

SymbolsQuery OpenSymbols(const index::IndexView& view, const proto::SymbolsRequest& request,
                         const security::PeerAccess& access, ImageLookup& images) {
  SymbolsQuery out;
  if (request.pid <= 0 || request.pid > 0x7fffffff) {
    out.error = Error(proto::kErrBadRequest, "\"pid\" must be a positive process id");
    return out;
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
    out.error = std::move(busy);
    return out;
  }
  const std::optional<os::ProcessIdentity>& now = lookup.identity;
  if (process == nullptr && !now) {
    out.error = NotFound(pid);
    return out;
  }
  const security::ProcessAccess verdict =
      access.ForProcess(process != nullptr ? process->uid : std::optional(now->uid), pid);
  if (verdict == security::ProcessAccess::kDenied) {
    out.error = Error(proto::kErrPermission, "only root, the trusted group and the owner of pid " +
                                                 std::to_string(pid) + " may list its symbols");
    return out;
  }
  if (verdict == security::ProcessAccess::kUnknown) {
    out.error = NotFound(pid);
    return out;
  }
  // The live process's mapped images belong to the listed incarnation only if it is that
  // process: same owner, and started when the incarnation did.
  std::vector<ImageLookup::MappedImage> mapped;
  if (now && (process == nullptr || IsIncarnation(*process, *now))) {
    if (auto live = images.LiveMappedImages(view, process_pid);
        live && live->identity.start_ticks == now->start_ticks && live->identity.uid == now->uid) {
      mapped = std::move(live->images);
    }
  }
  if (process == nullptr && mapped.empty()) {
    out.error = NotFound(pid);
    return out;
  }
  // The cursor keeps the incarnation (and so its sources) alive, not the whole view.
  std::shared_ptr<const index::ProcessView> held;
  if (process != nullptr) {
    for (const auto& p : view.processes.at(process->pid)) {  // the process is the view's
      if (p.get() == process) held = p;
    }
  }
  out.cursor = std::make_unique<SymbolsCursor>(request.pid, std::move(held), std::move(mapped));
  return out;
}

proto::Response ListSymbols(const index::IndexView& view, const proto::SymbolsRequest& request,
                            const security::PeerAccess& access, ImageLookup& images) {
  SymbolsQuery query = OpenSymbols(view, request, access, images);
  if (query.error) return std::move(*query.error);
  proto::SymbolsResponse out;
  out.pid = query.cursor->pid();
  out.incarnation = query.cursor->incarnation();
  for (proto::SymbolEntry entry; query.cursor->Next(&entry);) out.symbols.push_back(entry);
  proto::Response response;
  response.body = std::move(out);
  return response;
}

}  // namespace jitsym::query
