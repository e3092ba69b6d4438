#include "daemon/ingest/jitdump_source.h"

#include <algorithm>
#include <stdexcept>

#include "daemon/util/log.h"

namespace jitsym::ingest {

void JitdumpSource::Feed(std::span<const uint8_t> data) {
  if (failed()) return;
  // The index refusing more names (NameTable: over 1 GiB of them) stops this file, not the
  // daemon: what was indexed before stays.
  try {
    parser_.Feed(data, *this);
  } catch (const std::length_error& e) {
    SetError(parser_.offset(), e.what());
  }
  records_ = parser_.records();
  if (failed()) return;
  if (parser_.failed()) SetError(parser_.error_offset(), parser_.error());
}

void JitdumpSource::OnHeader(const jitdump::Header& header) {
  pid_ = header.pid;
  debug_bias_ = header.debug_addr_bias();
  if (header.arch_timestamp()) {
    JITSYM_LOG(kWarning, path_,
               ": jitdump uses an architecture timestamp (e.g. TSC), not CLOCK_MONOTONIC: "
               "time-qualified lookups compare against that clock");
  }
}

void JitdumpSource::OnCodeLoad(const jitdump::CodeLoad& load) {
  const uint32_t name = code_.Intern(load.name);
  lines_.clear();
  for (const jitdump::DebugEntry& e : load.debug) {
    // Entry addresses are absolute; V8's are biased (see Header::debug_addr_bias()).
    if (e.addr < load.code_addr + debug_bias_) continue;
    const uint64_t offset = e.addr - debug_bias_ - load.code_addr;
    if (offset >= load.code_size) continue;
    lines_.push_back({static_cast<uint32_t>(offset), e.line, e.discrim, code_.Intern(e.file)});
  }
  std::stable_sort(lines_.begin(), lines_.end(),
                   [](const auto& a, const auto& b) { return a.offset < b.offset; });
  code_.Add(load.code_addr, load.code_size, load.timestamp, name, lines_);
}

void JitdumpSource::OnCodeMove(const jitdump::CodeMove& move) {
  // The moved function is whatever was last loaded at the old address.
  auto snapshot = code_.Publish();
  auto sym = snapshot->Find(move.old_code_addr, std::nullopt);
  if (!sym || sym->start != move.old_code_addr) {
    ++unresolved_moves_;
    JITSYM_LOG(kDebug, path_, ": offset ", move.offset, ": MOVE of code_index ", move.code_index,
               " from 0x", std::hex, move.old_code_addr, " which holds no loaded code; ignored");
    return;
  }
  const uint32_t name = code_.Intern(sym->name);
  code_.Remove(sym->start, sym->size, move.timestamp);
  code_.Add(move.new_code_addr, move.code_size ? move.code_size : sym->size, move.timestamp, name);
}

}  // namespace jitsym::ingest
