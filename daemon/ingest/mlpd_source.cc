// Feeds a Mono log profiler file to the mlpd parser and indexes the code it reports.
#include "daemon/ingest/mlpd_source.h"

#include <stdexcept>

#include "daemon/util/log.h"

namespace jitsym::ingest {

void MlpdSource::Feed(std::span<const uint8_t> data) {
  if (failed()) return;
  // The index refusing more names (NameTable: over 1 GiB of them) stops this file, not the
  // daemon: what was indexed before stays.
  try {
    parser_.Feed(data, *this);
  } catch (const std::length_error& e) {
    SetError(parser_.offset(), e.what());
    return;
  }
  if (parser_.failed()) SetError(parser_.error_offset(), parser_.error());
}

void MlpdSource::Continue() {
  if (failed()) return;
  parser_.Continue(*this);
  if (parser_.failed()) SetError(parser_.error_offset(), parser_.error());
}

void MlpdSource::OnHeader(const mlpd::Header& header) {
  if (header.pid != 0) pid_ = header.pid;
  JITSYM_LOG(kDebug, path_, ": Mono log profiler ", int{header.major}, ".", int{header.minor},
             ", data version ", int{header.data_version}, ", pid ", header.pid, ", ", header.arch,
             "/", header.os, parser_.compressed() ? ", gzip" : "");
}

void MlpdSource::OnCode(const mlpd::Code& code) {
  uint64_t size = code.size;
  if (code.kind == mlpd::Code::Kind::kNativeSymbol && size == 0) size = kUnsizedSymbolBytes;
  // TYPE_JIT may carry no code (allowed since data version 11); METHOD code buffers repeat what
  // TYPE_JIT says, with a worse name.
  if (size == 0 || code.address == 0) return;
  if (code.kind == mlpd::Code::Kind::kHelper && code.helper_type == mlpd::kBufferMethod) return;
  code_.Add(code.address, size, code.time, code_.Intern(code.name));
  ++records_;
}

void MlpdSource::OnImage(const mlpd::ImageLoad& image) {
  if (image.unload || images_.size() >= kMaxImages) return;
  images_.push_back({image.image, image.time,
                     std::string(image.name.substr(0, index::NameTable::kMaxNameLength))});
}

void MlpdSource::OnBadEvent(uint64_t buffer_offset, uint64_t offset, const std::string& why) {
  // Once per file at warning level: a producer that trips the decoder does so in every buffer.
  if (parser_.bad_buffers() == 1) {
    JITSYM_LOG(kWarning, path_, ": offset ", offset, ": ", why,
               "; ignoring the rest of the buffer at offset ", buffer_offset,
               " and reading on (further such buffers are logged at debug level)");
  } else {
    JITSYM_LOG(kDebug, path_, ": offset ", offset, ": ", why, "; rest of buffer at ", buffer_offset,
               " ignored");
  }
}

}  // namespace jitsym::ingest
