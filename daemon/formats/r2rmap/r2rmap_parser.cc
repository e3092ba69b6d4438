#include "daemon/formats/r2rmap/r2rmap_parser.h"

#include <algorithm>
#include <cstring>

#include "daemon/util/log.h"

namespace jitsym::r2rmap {
namespace {

constexpr const char* kEntryNames[kHeaderEntries] = {"signature", "format version", "OS",
                                                     "architecture", "ABI"};

bool IsSpace(char c) { return c == ' ' || c == '\t'; }

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// 1 to 8 hex digits (the fields are 32-bit; crossgen2 pads with zeros, never more than 8).
std::optional<uint32_t> ParseHex32(std::string_view s) {
  while (s.size() > 8 && s.front() == '0') s.remove_prefix(1);
  if (s.empty() || s.size() > 8) return std::nullopt;
  uint32_t v = 0;
  for (char c : s) {
    const int d = HexDigit(c);
    if (d < 0) return std::nullopt;
    v = (v << 4) | static_cast<uint32_t>(d);
  }
  return v;
}

std::optional<uint32_t> ParseDecimal32(std::string_view s) {
  if (s.empty() || s.size() > 10) return std::nullopt;
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  if (v > 0xFFFFFFFFu) return std::nullopt;
  return static_cast<uint32_t>(v);
}

struct Fields {
  uint32_t rva = 0;
  uint32_t length = 0;
  std::string_view rest;
};

// "RVA LENGTH REST": fields separated by spaces or tabs; REST is the rest of the line.
std::optional<Fields> Split(std::string_view line) {
  auto token = [&line]() -> std::string_view {
    size_t end = 0;
    while (end < line.size() && !IsSpace(line[end])) ++end;
    std::string_view t = line.substr(0, end);
    line.remove_prefix(end);
    while (!line.empty() && IsSpace(line.front())) line.remove_prefix(1);
    return t;
  };
  Fields f;
  auto rva = ParseHex32(token());
  if (!rva) return std::nullopt;
  auto length = ParseHex32(token());
  if (!length) return std::nullopt;
  f.rva = *rva;
  f.length = *length;
  f.rest = line;
  return f;
}

std::string TokenText(uint32_t token) { return log::Cat(std::hex, std::uppercase, token); }

std::string EntryText(int index) {
  return log::Cat(TokenText(kTokenSignature - static_cast<uint32_t>(index)), " (",
                  kEntryNames[index], ")");
}

std::string EnumName(uint32_t v, std::initializer_list<const char*> names) {
  if (v < names.size()) return names.begin()[v];
  return log::Cat("unknown(", v, ")");
}

}  // namespace

std::string OsName(uint32_t os) {
  return EnumName(os, {"Unknown", "Windows", "Linux", "OSX", "FreeBSD", "NetBSD", "SunOS"});
}
std::string ArchName(uint32_t arch) {
  return EnumName(arch, {"Unknown", "ARM", "ARM64", "X64", "X86"});
}
std::string AbiName(uint32_t abi) { return EnumName(abi, {"Unknown", "Default", "Armel"}); }

void Parser::Feed(std::span<const uint8_t> data, Sink& sink) {
  const char* p = reinterpret_cast<const char*>(data.data());
  const char* end = p + data.size();
  while (p < end && (state_ == State::kHeader || state_ == State::kRecords)) {
    const char* nl = static_cast<const char*>(std::memchr(p, '\n', static_cast<size_t>(end - p)));
    const char* stop = nl ? nl : end;
    if (dropping_ || partial_.size() + static_cast<size_t>(stop - p) > options_.max_line) {
      if (state_ == State::kHeader) {
        Fail(offset_, log::Cat("line longer than ", options_.max_line, " bytes"));
        return;
      }
      // A record line this long (a hostile name) costs that line, not the file: its bytes are
      // dropped up to its end, never buffered, and it counts as malformed.
      if (!dropping_) {
        Withdraw(offset_, sink);
        dropping_ = true;
        dropped_ = partial_.size();
        std::vector<char>().swap(partial_);
      }
      if (nl == nullptr) {
        dropped_ += static_cast<size_t>(end - p);
        return;
      }
      if (malformed_++ == 0) first_malformed_offset_ = offset_;
      offset_ += dropped_ + static_cast<size_t>(nl - p) + 1;
      dropped_ = 0;
      dropping_ = false;
      p = nl + 1;
      continue;
    }
    if (nl == nullptr) {
      partial_.insert(partial_.end(), p, end);
      return;
    }
    const uint64_t line_offset = offset_;
    const size_t taken = static_cast<size_t>(nl - p) + 1;
    if (partial_.empty()) {
      offset_ += taken;
      Line({p, static_cast<size_t>(nl - p)}, line_offset, sink);
    } else {
      partial_.insert(partial_.end(), p, nl);
      offset_ += partial_.size() + 1;
      Line({partial_.data(), partial_.size()}, line_offset, sink);
      partial_.clear();
    }
    p += taken;
  }
}

void Parser::Line(std::string_view line, uint64_t offset, Sink& sink) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  std::optional<Fields> f = Split(line);
  if (state_ == State::kHeader) {
    if (!f) {
      if (next_entry_ == 0 && !options_.allow_headerless) {
        Fail(offset, "not an r2rmap: the first line is not \"FFFFFFFF 00 <signature>\"");
      } else if (next_entry_ < 2) {
        Fail(offset, log::Cat("r2rmap header: expected entry ", EntryText(next_entry_),
                              ", found a line that is not \"TOKEN LENGTH VALUE\""));
      } else {
        Fail(offset, log::Cat("r2rmap header: expected entry ", EntryText(next_entry_),
                              " or a record, found a line that is not \"RVA LENGTH NAME\""));
      }
      return;
    }
    HeaderLine(f->rva, f->length, f->rest, offset, sink);
    return;
  }
  if (!f || f->rest.empty()) {
    Withdraw(offset, sink);
    if (line.find_first_not_of(" \t") == std::string_view::npos) return;  // blank line
    if (malformed_++ == 0) first_malformed_offset_ = offset;
    return;
  }
  RecordLine(f->rva, f->length, f->rest, offset, sink);
}

void Parser::HeaderLine(uint32_t rva, uint32_t length, std::string_view value, uint64_t offset,
                        Sink& sink) {
  const bool pseudo = rva >= kTokenAbi;
  if (!pseudo) {
    if (next_entry_ == 0) {
      if (!options_.allow_headerless) {
        Fail(offset, log::Cat("not an r2rmap: the first line has RVA ", TokenText(rva),
                              ", not the signature entry FFFFFFFF"));
        return;
      }
      header_.legacy = true;
    } else if (next_entry_ == 1) {
      Fail(offset, log::Cat("r2rmap header: entry ", EntryText(1),
                            " is missing (a record follows the signature)"));
      return;
    }
    // The header stopped after the version: older writers; the rest is unknown.
    EndHeader(sink, offset);
    if (state_ == State::kRecords) {
      if (value.empty()) {
        if (malformed_++ == 0) first_malformed_offset_ = offset;
      } else {
        RecordLine(rva, length, value, offset, sink);
      }
    }
    return;
  }
  const int index = static_cast<int>(kTokenSignature - rva);
  if (index != next_entry_) {
    if (index < next_entry_) {
      Fail(offset, log::Cat("r2rmap header: entry ", EntryText(index),
                            " repeated or out of order (expected ", EntryText(next_entry_), ")"));
    } else {
      Fail(offset,
           log::Cat("r2rmap header: entry ", EntryText(index), " where ", EntryText(next_entry_),
                    " was expected (entries skipped or out of ", "order)"));
    }
    return;
  }
  if (length != 0) {
    Fail(offset, log::Cat("r2rmap header: entry ", EntryText(index), " has length ",
                          TokenText(length), "; header entries have length 00"));
    return;
  }
  if (index == 0) {
    const bool hex =
        std::all_of(value.begin(), value.end(), [](char c) { return HexDigit(c) >= 0; });
    if (value.size() != kSignatureHexDigits || !hex) {
      Fail(offset,
           log::Cat("r2rmap header: signature \"", value.substr(0, 80), "\" is not 32 hex digits"));
      return;
    }
    header_.signature = std::string(value);
  } else {
    const std::optional<uint32_t> v = ParseDecimal32(value);
    if (!v) {
      Fail(offset, log::Cat("r2rmap header: entry ", EntryText(index), " value \"",
                            value.substr(0, 80), "\" is not a decimal 32-bit number"));
      return;
    }
    std::optional<uint32_t>* fields[kHeaderEntries] = {nullptr, &header_.version, &header_.os,
                                                       &header_.arch, &header_.abi};
    *fields[index] = *v;
  }
  if (++next_entry_ == kHeaderEntries) EndHeader(sink, offset);
}

void Parser::EndHeader(Sink& sink, uint64_t offset) {
  state_ = State::kRecords;
  sink.OnHeader(header_);
  if (!header_.legacy && header_.version != kSupportedVersion) {
    state_ = State::kRefused;
    error_offset_ = offset;
    error_ = log::Cat("r2rmap format version ", *header_.version, " is not supported (only ",
                      kSupportedVersion, "); header read, records ignored");
  }
}

void Parser::RecordLine(uint32_t rva, uint32_t length, std::string_view name, uint64_t offset,
                        Sink& sink) {
  if (rva >= kTokenAbi && !header_.legacy) {
    const int index = static_cast<int>(kTokenSignature - rva);
    Fail(offset,
         log::Cat("r2rmap header: entry ", EntryText(index), " repeated after the ", "header"));
    return;
  }
  if (provisional_) {
    // Completes a line emitted provisionally: nothing new if it says the same.
    const bool same =
        provisional_->rva == rva && provisional_->length == length && provisional_->name == name;
    provisional_.reset();
    if (!same) sink.OnRecord({offset, rva, length, name, false, true});
    return;
  }
  ++records_;
  sink.OnRecord({offset, rva, length, name});
}

void Parser::Withdraw(uint64_t offset, Sink& sink) {
  if (!provisional_) return;
  const Provisional p = std::move(*provisional_);
  provisional_.reset();
  --records_;
  sink.OnWithdrawn({offset, p.rva, p.length, p.name, true, false});
}

void Parser::Settle(Sink& sink) {
  if ((state_ != State::kHeader && state_ != State::kRecords) || dropping_ || partial_.empty()) {
    return;
  }
  std::string_view line(partial_.data(), partial_.size());
  if (line.back() == '\r') line.remove_suffix(1);
  const std::optional<Fields> f = Split(line);
  // Only a record: an RVA below the header's tokens, a name begun. Anything else waits for its
  // end (a header entry, a line that does not parse yet).
  if (!f || f->rest.empty() || f->rva >= kTokenAbi) {
    Withdraw(offset_, sink);
    return;
  }
  if (state_ == State::kHeader) {
    // A record where the header may end (after the version; a headerless file's first line)
    // ends it whatever the rest of the line turns out to be. Elsewhere the line fails the file
    // once complete.
    const bool may_end = next_entry_ >= 2 || (next_entry_ == 0 && options_.allow_headerless);
    if (!may_end) return;
    if (next_entry_ == 0) header_.legacy = true;
    EndHeader(sink, offset_);
    if (state_ != State::kRecords) return;
  }
  if (provisional_) {
    if (provisional_->rva == f->rva && provisional_->length == f->length &&
        provisional_->name == f->rest) {
      return;  // already emitted as it stands
    }
    provisional_ = Provisional{f->rva, f->length, std::string(f->rest)};
    sink.OnRecord({offset_, f->rva, f->length, provisional_->name, true, true});
    return;
  }
  ++records_;
  provisional_ = Provisional{f->rva, f->length, std::string(f->rest)};
  sink.OnRecord({offset_, f->rva, f->length, provisional_->name, true, false});
}

void Parser::Fail(uint64_t offset, std::string message) {
  state_ = State::kFailed;
  error_offset_ = offset;
  error_ = std::move(message);
  partial_.clear();
}

}  // namespace jitsym::r2rmap
