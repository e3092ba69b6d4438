#include "daemon/ingest/r2rmap_source.h"

#include <stdexcept>

#include "daemon/util/log.h"

namespace jitsym::ingest {
namespace {

constexpr std::string_view kSuffix = ".ni.r2rmap";

bool IsHex(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

// "{8-4-4-4-12}" hex digits, as StringFromGUID2 writes an MVID.
bool IsBracedGuid(std::string_view s) {
  if (s.size() != 38 || s.front() != '{' || s.back() != '}') return false;
  for (size_t i = 1; i < 37; ++i) {
    const bool dash = i == 9 || i == 14 || i == 19 || i == 24;
    if (dash ? s[i] != '-' : !IsHex(s[i])) return false;
  }
  return true;
}

}  // namespace

std::optional<std::string> R2rmapImageName(std::string_view filename, std::string* mvid) {
  if (filename.size() > kSuffix.size() && filename.ends_with(kSuffix)) {
    return std::string(filename.substr(0, filename.size() - kSuffix.size()));
  }
  // <name>.ni.{GUID}.map
  constexpr size_t kLegacyTail = 4 + 38 + 4;  // ".ni." GUID ".map"
  if (filename.size() > kLegacyTail && filename.ends_with(".map")) {
    const std::string_view tail = filename.substr(filename.size() - kLegacyTail);
    if (tail.starts_with(".ni.") && IsBracedGuid(tail.substr(4, 38))) {
      if (mvid) *mvid = std::string(tail.substr(4, 38));
      return std::string(filename.substr(0, filename.size() - kLegacyTail));
    }
  }
  return std::nullopt;
}

R2rmapSource::R2rmapSource(std::string path, std::string legacy_signature)
    : Source(std::move(path)),
      parser_(r2rmap::Options{.allow_headerless = !legacy_signature.empty()}),
      legacy_signature_(std::move(legacy_signature)) {}

std::string R2rmapSource::image_signature() const {
  const std::string& sig = parser_.header().signature;
  return sig.empty() ? legacy_signature_ : sig;
}

void R2rmapSource::Feed(std::span<const uint8_t> data) {
  if (failed()) return;
  // The index refusing more names (NameTable: over 1 GiB of them) stops this file, not the
  // daemon: what was indexed before stays.
  try {
    parser_.Feed(data, *this);
  } catch (const std::length_error& e) {
    SetError(parser_.offset(), e.what());
    records_ = parser_.records() - 1;  // the parser counted the record that did not fit
    return;
  }
  AfterParse();
}

bool R2rmapSource::Settle() {
  if (failed()) return false;
  const uint32_t ranges = code_.ranges().size();
  const uint64_t records = records_;
  try {
    parser_.Settle(*this);
  } catch (const std::length_error& e) {
    SetError(parser_.offset(), e.what());
    records_ = parser_.records() - 1;
    return true;
  }
  AfterParse();
  return code_.ranges().size() != ranges || records_ != records || failed();
}

void R2rmapSource::AfterParse() {
  records_ = parser_.records();
  if (parser_.failed()) {
    // A wrong header rejects the whole file, even the records a late error follows.
    code_ = index::CodeMap();
    records_ = 0;
    SetError(parser_.error_offset(), parser_.error() + "; file rejected");
  } else if (parser_.refused()) {
    SetError(parser_.error_offset(), parser_.error());
  }
  if (parser_.malformed() > 0 && !reported_malformed_) {
    reported_malformed_ = true;
    JITSYM_LOG(kWarning, path_, ": offset ", parser_.first_malformed_offset(),
               ": line is not \"RVA LENGTH NAME\"; skipped (later ones are skipped silently)");
  }
}

void R2rmapSource::OnWithdrawn(const r2rmap::Record& r) {
  // The completed line is malformed: its addresses hold nothing known.
  code_.Remove(r.rva, r.length, 0);
}

void R2rmapSource::OnHeader(const r2rmap::Header& h) {
  if (h.legacy) {
    JITSYM_LOG(kDebug, path_, ": headerless crossgen1 perf map (format version 0)");
    return;
  }
  JITSYM_LOG(kDebug, path_, ": r2rmap signature ", h.signature, " version ", *h.version, " OS ",
             h.os ? r2rmap::OsName(*h.os) : "?", " arch ", h.arch ? r2rmap::ArchName(*h.arch) : "?",
             " ABI ", h.abi ? r2rmap::AbiName(*h.abi) : "?");
}

void R2rmapSource::OnRecord(const r2rmap::Record& r) {
  // Time 0: an image's layout is static. Zero-length records define nothing.
  code_.Add(r.rva, r.length, 0, code_.Intern(r.name));
}

}  // namespace jitsym::ingest
