#include "daemon/formats/perfmap/perfmap_parser.h"

#include <array>
#include <cstring>

namespace jitsym::perfmap {
namespace {

constexpr uint8_t kNotHex = 0xff;

constexpr std::array<uint8_t, 256> MakeHexTable() {
  std::array<uint8_t, 256> t{};
  for (auto& v : t) v = kNotHex;
  for (int c = '0'; c <= '9'; ++c) t[c] = static_cast<uint8_t>(c - '0');
  for (int c = 'a'; c <= 'f'; ++c) t[c] = static_cast<uint8_t>(c - 'a' + 10);
  for (int c = 'A'; c <= 'F'; ++c) t[c] = static_cast<uint8_t>(c - 'A' + 10);
  return t;
}
constexpr std::array<uint8_t, 256> kHex = MakeHexTable();

bool IsBlank(char c) { return c == ' ' || c == '\t'; }

enum class Hex { kOk, kNone, kOverflow };

// A hex number at line[*i], with an optional 0x/0X; advances *i past it.
Hex ParseHex(std::string_view line, size_t* i, uint64_t* out) {
  size_t p = *i;
  if (p + 1 < line.size() && line[p] == '0' && (line[p + 1] == 'x' || line[p + 1] == 'X')) p += 2;
  const size_t first = p;
  uint64_t v = 0;
  bool overflow = false;
  for (; p < line.size(); ++p) {
    const uint8_t d = kHex[static_cast<uint8_t>(line[p])];
    if (d == kNotHex) break;
    overflow |= (v >> 60) != 0;
    v = (v << 4) | d;
  }
  if (p == first) return Hex::kNone;
  *i = p;
  *out = v;
  return overflow ? Hex::kOverflow : Hex::kOk;
}

size_t SkipBlanks(std::string_view line, size_t i) {
  while (i < line.size() && IsBlank(line[i])) ++i;
  return i;
}

}  // namespace

std::string_view LineErrorName(LineError error) {
  switch (error) {
    case LineError::kBadStart:
      return "start address missing or not hex";
    case LineError::kBadSize:
      return "size missing or not hex";
    case LineError::kMissingName:
      return "name missing";
    case LineError::kOverflow:
      return "number larger than 64 bits";
    case LineError::kWraps:
      return "start + size beyond the address space";
    case LineError::kTooLong:
      return "line longer than 64 KiB";
  }
  return "malformed";
}

std::optional<Entry> ParseLine(std::string_view line, std::optional<LineError>* error) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  size_t i = SkipBlanks(line, 0);
  if (i == line.size()) return std::nullopt;  // blank
  Entry e;
  // START and SIZE: hex, each followed by a blank.
  // Inlined: called for every line, twice (GCC otherwise keeps it out of line).
  auto field = [&](uint64_t * value, LineError bad) __attribute__((always_inline)) {
    switch (ParseHex(line, &i, value)) {
      case Hex::kNone:
        *error = bad;
        return false;
      case Hex::kOverflow:
        *error = LineError::kOverflow;
        return false;
      case Hex::kOk:
        break;
    }
    if (i < line.size() && !IsBlank(line[i])) {
      *error = bad;
      return false;
    }
    i = SkipBlanks(line, i);
    return true;
  };
  if (!field(&e.start, LineError::kBadStart) || !field(&e.size, LineError::kBadSize)) {
    return std::nullopt;
  }
  if (i == line.size()) {
    *error = LineError::kMissingName;
    return std::nullopt;
  }
  // [start, start + size) must be representable: end <= 2^64 - 1.
  if (e.size > ~uint64_t{0} - e.start) {
    *error = LineError::kWraps;
    return std::nullopt;
  }
  e.name = line.substr(i);
  return e;
}

void Parser::Line(std::string_view line, uint64_t offset, Sink& sink) {
  if (provisional_) [[unlikely]] {
    CompleteProvisional(line, offset, sink);
    return;
  }
  std::optional<LineError> error;
  std::optional<Entry> e = ParseLine(line, &error);
  if (e) {
    e->offset = offset;
    ++entries_;
    sink.OnEntry(*e);
  } else if (error) {
    ++malformed_;
    sink.OnMalformed(offset, *error);
  }
}

void Parser::CompleteProvisional(std::string_view line, uint64_t offset, Sink& sink) {
  std::optional<LineError> error;
  std::optional<Entry> e = ParseLine(line, &error);
  if (e) {
    // Nothing new if it says what the provisional entry said.
    const bool same = e->start == provisional_->start && e->size == provisional_->size &&
                      e->name == provisional_->name;
    provisional_.reset();
    if (same) return;
    e->offset = offset;
    e->replaces = true;
    sink.OnEntry(*e);
    return;
  }
  Withdraw(offset, sink);
  if (error) {
    ++malformed_;
    sink.OnMalformed(offset, *error);
  }
}

void Parser::Withdraw(uint64_t offset, Sink& sink) {
  if (!provisional_) return;
  const Provisional p = std::move(*provisional_);
  provisional_.reset();
  --entries_;
  sink.OnWithdrawn(p.AsEntry(offset));
}

void Parser::Settle(Sink& sink) {
  if (dropping_ || buf_.empty()) return;
  std::optional<LineError> error;
  std::optional<Entry> e = ParseLine(buf_, &error);
  if (!e) {
    // Malformed as it stands (a name not begun yet): the line is judged once complete.
    Withdraw(offset_, sink);
    return;
  }
  e->offset = offset_;
  e->provisional = true;
  if (provisional_) {
    if (e->start == provisional_->start && e->size == provisional_->size &&
        e->name == provisional_->name) {
      return;  // already emitted as it stands
    }
    e->replaces = true;
  } else {
    ++entries_;
  }
  provisional_ = Provisional{e->start, e->size, std::string(e->name)};
  sink.OnEntry(*e);
}

void Parser::Feed(std::span<const uint8_t> data, Sink& sink) {
  const char* p = reinterpret_cast<const char*>(data.data());
  const char* const end = p + data.size();
  while (p < end) {
    const char* nl = static_cast<const char*>(std::memchr(p, '\n', static_cast<size_t>(end - p)));
    if (nl == nullptr) {
      // The writer is mid-line: keep the start of the line, unless it is already too long.
      const size_t n = static_cast<size_t>(end - p);
      if (!dropping_) {
        if (pending_ + n > kMaxLine) {
          Withdraw(offset_, sink);
          dropping_ = true;
          std::string().swap(buf_);
        } else {
          buf_.append(p, n);
        }
      }
      pending_ += n;
      return;
    }
    const size_t n = static_cast<size_t>(nl - p);
    if (dropping_ || pending_ + n > kMaxLine) {
      Withdraw(offset_, sink);
      ++malformed_;
      sink.OnMalformed(offset_, LineError::kTooLong);
    } else if (buf_.empty()) {
      Line({p, n}, offset_, sink);  // fast path: straight from the caller's bytes
    } else {
      buf_.append(p, n);
      Line(buf_, offset_, sink);
    }
    buf_.clear();
    dropping_ = false;
    offset_ += pending_ + n + 1;
    pending_ = 0;
    p = nl + 1;
  }
}

}  // namespace jitsym::perfmap
