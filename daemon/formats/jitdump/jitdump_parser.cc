#include "daemon/formats/jitdump/jitdump_parser.h"

#include <algorithm>

#include "daemon/util/byte_reader.h"
#include "daemon/util/log.h"

namespace jitsym::jitdump {

void Parser::Skip(uint64_t n) {
  n = std::min(n, skip_);
  skip_ -= n;
  offset_ += n;
}

void Parser::Feed(std::span<const uint8_t> data, Sink& sink) {
  while (!data.empty() && state_ != State::kFailed) {
    if (skip_ > 0) {
      size_t n = static_cast<size_t>(std::min<uint64_t>(skip_, data.size()));
      Skip(n);
      data = data.subspan(n);
      continue;
    }
    if (buf_.empty()) {
      // Fast path: parse straight from the caller's bytes.
      Outcome o = Step(data, sink);
      if (o.consumed > 0) {
        offset_ += o.consumed;
        data = data.subspan(o.consumed);
        continue;
      }
      if (state_ == State::kFailed) return;
      // Step only asks for more than it was given, and never more than max_buffered.
      buf_.assign(data.begin(), data.end());
      need_ = o.need;
      return;
    }
    size_t take = std::min(data.size(), need_ - buf_.size());
    buf_.insert(buf_.end(), data.begin(), data.begin() + take);
    data = data.subspan(take);
    if (buf_.size() < need_) return;
    // The unit may complete now, or reveal that it needs more (a LOAD's name region).
    for (;;) {
      Outcome o = Step(buf_, sink);
      if (state_ == State::kFailed) return;
      if (o.consumed == 0) {
        need_ = o.need;
        break;
      }
      offset_ += o.consumed;
      buf_.erase(buf_.begin(), buf_.begin() + static_cast<ptrdiff_t>(o.consumed));
      if (buf_.empty()) break;
      // Bytes left over belong to what follows; re-examine them (only after a skip is exhausted).
      if (skip_ > 0) {
        size_t n = static_cast<size_t>(std::min<uint64_t>(skip_, buf_.size()));
        Skip(n);
        buf_.erase(buf_.begin(), buf_.begin() + static_cast<ptrdiff_t>(n));
        if (buf_.empty()) break;
      }
    }
    if (!buf_.empty() && need_ <= buf_.size()) need_ = buf_.size() + 1;
  }
}

Parser::Outcome Parser::Fail(uint64_t offset, std::string message) {
  state_ = State::kFailed;
  error_offset_ = offset;
  error_ = std::move(message);
  buf_.clear();
  return {};
}

Parser::Outcome Parser::Step(std::span<const uint8_t> in, Sink& sink) {
  return state_ == State::kHeader ? StepHeader(in, sink) : StepRecord(in, sink);
}

Parser::Outcome Parser::StepHeader(std::span<const uint8_t> in, Sink& sink) {
  // Reject a file that is not a jitdump as soon as its first four bytes are there.
  if (in.size() >= 4) {
    const uint32_t magic = ByteReader(in, kHostByteOrder).U32();
    if (magic == kMagic) {
      order_ = kHostByteOrder;
    } else if (magic == kMagicSwapped) {
      order_ = kHostByteOrder == ByteOrder::kLittle ? ByteOrder::kBig : ByteOrder::kLittle;
    } else {
      return Fail(0, log::Cat("bad magic 0x", std::hex, magic, " (not a jitdump file)"));
    }
  }
  if (in.size() < kHeaderSize) return {0, kHeaderSize};
  ByteReader r(in, order_);
  r.U32();  // magic
  header_.version = r.U32();
  header_.total_size = r.U32();
  header_.elf_mach = r.U32();
  header_.pad1 = r.U32();
  header_.pid = r.U32();
  header_.timestamp = r.U64();
  header_.flags = r.U64();
  header_.swapped = r.swaps();
  if (header_.total_size > kMaxHeaderSize) {
    return Fail(0, log::Cat("header total_size ", header_.total_size, " exceeds ", kMaxHeaderSize));
  }
  size_t size = std::max<uint32_t>(header_.total_size, kHeaderSize);
  if (in.size() < size) return {0, size};
  sink.OnHeader(header_);
  state_ = State::kRecords;
  return {size, 0};
}

Parser::Outcome Parser::StepRecord(std::span<const uint8_t> in, Sink& sink) {
  if (in.size() < kRecordHeaderSize) return {0, kRecordHeaderSize};
  ByteReader r(in, order_);
  const uint32_t id = r.U32();
  const uint32_t size = r.U32();
  const uint64_t timestamp = r.U64();
  const uint64_t at = offset_;
  if (size < kRecordHeaderSize) {
    return Fail(at, log::Cat("record id ", id, ": total_size ", size, " < 16"));
  }
  if (size > limits_.max_record_size) {
    return Fail(at, log::Cat("record id ", id, ": total_size ", size, " exceeds limit ",
                             limits_.max_record_size));
  }
  switch (id) {
    case kCodeLoad: {
      if (size < kLoadFixedSize + 1) {
        return Fail(at, log::Cat("LOAD: total_size ", size, " too small for its fields"));
      }
      if (in.size() < kLoadFixedSize) return {0, kLoadFixedSize};
      CodeLoad load;
      load.offset = at;
      load.timestamp = timestamp;
      load.pid = r.U32();
      load.tid = r.U32();
      load.vma = r.U64();
      load.code_addr = r.U64();
      load.code_size = r.U64();
      load.code_index = r.U64();
      if (load.code_size > size - kLoadFixedSize - 1) {
        return Fail(at, log::Cat("LOAD: code_size ", load.code_size,
                                 " larger than the record (total_size ", size, ")"));
      }
      const size_t name_region = size - kLoadFixedSize - static_cast<size_t>(load.code_size);
      if (name_region > limits_.max_buffered) {
        return Fail(at, log::Cat("LOAD: name region of ", name_region, " bytes exceeds limit"));
      }
      const size_t head = kLoadFixedSize + name_region;
      if (in.size() < head) return {0, head};
      ByteReader name(r.Bytes(name_region), order_);
      load.name = name.CString();
      if (!name.ok()) return Fail(at, "LOAD: function name is not NUL-terminated");
      if (debug_pending_) {
        if (debug_code_addr_ == load.code_addr) {
          load.debug = debug_entries_;
        } else {
          sink.OnOrphanDebugInfo(debug_offset_, debug_code_addr_);
        }
      }
      sink.OnCodeLoad(load);
      debug_pending_ = false;
      ++records_;
      skip_ = load.code_size;
      return {head, 0};
    }
    case kCodeMove: {
      if (size < kMoveSize) return Fail(at, log::Cat("MOVE: total_size ", size, " < 64"));
      if (in.size() < kMoveSize) return {0, kMoveSize};
      CodeMove move;
      move.offset = at;
      move.timestamp = timestamp;
      move.pid = r.U32();
      move.tid = r.U32();
      move.vma = r.U64();
      move.old_code_addr = r.U64();
      move.new_code_addr = r.U64();
      move.code_size = r.U64();
      move.code_index = r.U64();
      sink.OnCodeMove(move);
      ++records_;
      skip_ = size - kMoveSize;
      return {kMoveSize, 0};
    }
    case kCodeDebugInfo: {
      if (size < kDebugFixedSize)
        return Fail(at, log::Cat("DEBUG_INFO: total_size ", size, " < 32"));
      if (size > limits_.max_buffered) {
        return Fail(at, log::Cat("DEBUG_INFO: total_size ", size, " exceeds limit"));
      }
      if (in.size() < size) return {0, size};
      debug_raw_.assign(in.begin(), in.begin() + size);
      ByteReader d(debug_raw_, order_);
      d.Skip(kRecordHeaderSize);
      const uint64_t code_addr = d.U64();
      const uint64_t nr = d.U64();
      if (nr > (size - kDebugFixedSize) / kDebugEntryMinSize) {
        return Fail(at, log::Cat("DEBUG_INFO: nr_entry ", nr, " cannot fit in ", size, " bytes"));
      }
      debug_entries_.clear();
      debug_entries_.reserve(nr);
      for (uint64_t i = 0; i < nr; ++i) {
        DebugEntry e;
        e.addr = d.U64();
        e.line = d.U32();
        e.discrim = d.U32();
        e.file = d.CString();
        if (!d.ok()) {
          return Fail(at, log::Cat("DEBUG_INFO: entry ", i, " of ", nr, " is truncated"));
        }
        debug_entries_.push_back(e);
      }
      if (debug_pending_) sink.OnOrphanDebugInfo(debug_offset_, debug_code_addr_);
      debug_pending_ = true;
      debug_code_addr_ = code_addr;
      debug_offset_ = at;
      ++records_;
      return {size, 0};
    }
    case kCodeClose: {
      sink.OnClose(at, timestamp);
      closed_ = true;
      ++records_;
      skip_ = size - kRecordHeaderSize;
      return {kRecordHeaderSize, 0};
    }
    case kCodeUnwindingInfo: {
      if (size < kUnwindFixedSize) {
        return Fail(at, log::Cat("UNWINDING_INFO: total_size ", size, " < 40"));
      }
      if (in.size() < kUnwindFixedSize) return {0, kUnwindFixedSize};
      UnwindingInfo u;
      u.offset = at;
      u.timestamp = timestamp;
      u.unwind_data_size = r.U64();
      u.eh_frame_hdr_size = r.U64();
      u.mapped_size = r.U64();
      if (u.unwind_data_size > size - kUnwindFixedSize) {
        return Fail(at, log::Cat("UNWINDING_INFO: unwind_data_size ", u.unwind_data_size,
                                 " larger than the record (total_size ", size, ")"));
      }
      if (u.eh_frame_hdr_size > u.unwind_data_size) {
        return Fail(at, log::Cat("UNWINDING_INFO: eh_frame_hdr_size ", u.eh_frame_hdr_size,
                                 " larger than unwind_data_size ", u.unwind_data_size));
      }
      sink.OnUnwindingInfo(u);
      ++records_;
      skip_ = size - kUnwindFixedSize;
      return {kUnwindFixedSize, 0};
    }
    default:
      sink.OnUnknownRecord(at, id, size);
      ++records_;
      skip_ = size - kRecordHeaderSize;
      return {kRecordHeaderSize, 0};
  }
}

}  // namespace jitsym::jitdump
