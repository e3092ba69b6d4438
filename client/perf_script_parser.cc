#include "client/perf_script_parser.h"

#include <array>

namespace jitsym::client {
namespace {

bool IsSpace(char c) { return c == ' ' || c == '\t'; }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }
int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

struct Token {
  std::string_view text;
  size_t begin = 0;
};

bool AllDigits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!IsDigit(c)) return false;
  }
  return true;
}

std::optional<int64_t> Decimal(std::string_view s) {
  if (!AllDigits(s) || s.size() > 10) return std::nullopt;
  int64_t v = 0;
  for (char c : s) v = v * 10 + (c - '0');
  return v;
}

// "-1" is what perf prints for an unknown pid.
bool ParsePid(std::string_view s, int64_t* pid, int64_t* tid) {
  if (s == "-1" || s == "-1/-1") {
    *pid = *tid = -1;
    return true;
  }
  const size_t slash = s.find('/');
  if (slash == std::string_view::npos) {
    auto v = Decimal(s);
    if (!v) return false;
    *pid = *v;
    *tid = -1;
    return true;
  }
  auto p = Decimal(s.substr(0, slash));
  auto t = Decimal(s.substr(slash + 1));
  if (!p || !t) return false;
  *pid = *p;
  *tid = *t;
  return true;
}

// "7396.716453:" -> ns, rounded up to the end of the printed unit.
std::optional<uint64_t> ParseTimeToken(std::string_view s) {
  if (s.size() < 4 || s.back() != ':') return std::nullopt;
  s.remove_suffix(1);
  const size_t dot = s.find('.');
  if (dot == std::string_view::npos || dot == 0 || dot + 1 >= s.size()) return std::nullopt;
  const std::string_view secs = s.substr(0, dot), frac = s.substr(dot + 1);
  if (!AllDigits(secs) || !AllDigits(frac) || frac.size() > 9 || secs.size() > 11) {
    return std::nullopt;
  }
  uint64_t ns = 0;
  for (char c : secs) ns = ns * 10 + static_cast<uint64_t>(c - '0');
  uint64_t f = 0;
  for (char c : frac) f = f * 10 + static_cast<uint64_t>(c - '0');
  uint64_t unit = 1;
  for (size_t i = frac.size(); i < 9; ++i) unit *= 10;
  return ns * 1000000000ull + f * unit + (unit - 1);
}

bool IsCpuToken(std::string_view s) {
  return s.size() >= 3 && s.front() == '[' && s.back() == ']' &&
         AllDigits(s.substr(1, s.size() - 2));
}

// Up to kMaxTokens whitespace-separated tokens of line[from, to).
constexpr size_t kMaxTokens = 24;
size_t Tokenize(std::string_view line, std::array<Token, kMaxTokens>* out) {
  size_t n = 0, i = 0;
  while (i < line.size() && n < kMaxTokens) {
    while (i < line.size() && IsSpace(line[i])) ++i;
    if (i >= line.size()) break;
    const size_t b = i;
    while (i < line.size() && !IsSpace(line[i])) ++i;
    (*out)[n++] = Token{line.substr(b, i - b), b};
  }
  return n;
}

}  // namespace

std::optional<PerfScriptFrame> ParsePerfScriptFrame(std::string_view line, size_t pos) {
  while (pos < line.size() && IsSpace(line[pos])) ++pos;
  PerfScriptFrame f;
  size_t i = pos;
  uint64_t ip = 0;
  while (i < line.size() && HexValue(line[i]) >= 0) {
    if (i - pos >= 16) return std::nullopt;  // more than 64 bits
    ip = (ip << 4) | static_cast<uint64_t>(HexValue(line[i]));
    ++i;
  }
  if (i == pos || (i < line.size() && !IsSpace(line[i]))) return std::nullopt;
  f.ip = ip;
  f.ip_end = i;
  // The rest: "SYM (DSO)", "SYM", "(DSO)", or nothing; trailing blanks are not part of them.
  size_t b = i;
  while (b < line.size() && IsSpace(line[b])) ++b;
  size_t e = line.size();
  while (e > b && IsSpace(line[e - 1])) --e;
  f.sym_begin = b;
  f.tail_begin = e;
  if (b == e) return f;
  const std::string_view rest = line.substr(b, e - b);
  if (rest.back() == ')') {
    // The '(' that balances the final ')' ("(/memfd:x (deleted))"), preceded by a space.
    size_t open = std::string_view::npos;
    int depth = 0;
    for (size_t j = rest.size(); j-- > 0;) {
      if (rest[j] == ')') ++depth;
      if (rest[j] == '(' && --depth == 0) {
        if (j > 0 && rest[j - 1] == ' ') open = j - 1;
        break;
      }
    }
    if (open == std::string_view::npos) open = rest.rfind(" (");
    if (open != std::string_view::npos) {
      f.has_dso = true;
      f.dso = rest.substr(open + 2, rest.size() - open - 3);
      size_t se = open;
      while (se > 0 && IsSpace(rest[se - 1])) --se;
      f.sym = rest.substr(0, se);
      return f;
    }
    if (rest.front() == '(') {  // -F ip,dso: no symbol
      f.has_dso = true;
      f.dso = rest.substr(1, rest.size() - 2);
      return f;
    }
  }
  f.sym = rest;
  return f;
}

PerfScriptLine ParsePerfScriptLine(std::string_view line, PerfScriptSample* sample,
                                   PerfScriptFrame* frame) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  size_t first = 0;
  while (first < line.size() && IsSpace(line[first])) ++first;
  if (first == line.size()) return PerfScriptLine::kBlank;
  // perf's header and comments (`perf script --header`: "# event : ... bpf_event = 1" would
  // otherwise read as a sample of pid 1). perf prints a comm right-aligned in 16 columns or
  // more, so a sample line starts with "#" only for a 16-character comm that does.
  if (line.starts_with("# ")) return PerfScriptLine::kOther;
  if (line[0] == '\t') {  // a callchain entry
    auto f = ParsePerfScriptFrame(line, first);
    if (!f) return PerfScriptLine::kOther;
    *frame = *f;
    return PerfScriptLine::kFrame;
  }
  std::array<Token, kMaxTokens> tok;
  const size_t n = Tokenize(line, &tok);
  int64_t pid = -1, tid = -1;
  // The anchor is the time token; the pid is the token before it (or before the cpu).
  size_t pid_at = SIZE_MAX, after = SIZE_MAX;
  std::optional<uint64_t> time;
  for (size_t k = 1; k < n; ++k) {
    if (auto t = ParseTimeToken(tok[k].text)) {
      size_t p = k - 1;
      if (IsCpuToken(tok[p].text) && p > 0) --p;
      if (ParsePid(tok[p].text, &pid, &tid)) {
        pid_at = p;
        after = k + 1;
        time = t;
        break;
      }
    }
  }
  if (pid_at == SIZE_MAX) {
    // No time field: the first PID/TID token, else the first numeric one.
    for (int pass = 0; pass < 2 && pid_at == SIZE_MAX; ++pass) {
      for (size_t k = 0; k < n; ++k) {
        const bool has_slash = tok[k].text.find('/') != std::string_view::npos;
        if ((pass == 0) == has_slash && ParsePid(tok[k].text, &pid, &tid)) {
          pid_at = k;
          after = k + 1;
          if (after < n && IsCpuToken(tok[after].text)) ++after;
          break;
        }
      }
    }
    // No pid either (-F comm,time,...): still a sample line when it has a time, so that its
    // frames are known to have no pid, and its time is read.
    for (size_t k = 0; k < n && pid_at == SIZE_MAX; ++k) {
      if (auto t = ParseTimeToken(tok[k].text)) {
        time = t;
        pid = tid = -1;
        pid_at = k;  // the comm ends before it
        after = k + 1;
      }
    }
    if (pid_at == SIZE_MAX) return PerfScriptLine::kOther;
  }
  PerfScriptSample s;
  s.pid = pid;
  s.tid = tid;
  s.time_ns = time;
  if (pid_at > 0) {
    size_t e = tok[pid_at].begin;
    while (e > tok[0].begin && IsSpace(line[e - 1])) --e;
    s.comm = line.substr(tok[0].begin, e - tok[0].begin);
  }
  // The ip, if the line has one: after an optional period and event ("250000 cpu-clock:").
  size_t k = after;
  for (size_t skip = 0; skip < 3 && k < n; ++skip) {
    const std::string_view t = tok[k].text;
    const bool event = t.size() > 1 && t.back() == ':';
    const bool period = AllDigits(t) && k + 1 < n && tok[k + 1].text.back() == ':';
    if (!event && !period) break;
    ++k;
  }
  if (k < n) s.frame = ParsePerfScriptFrame(line, tok[k].begin);
  *sample = s;
  return PerfScriptLine::kSample;
}

bool IsJitDso(std::string_view dso) {
  if (dso == "[unknown]" || dso == "//anon" || dso.rfind("[anon", 0) == 0 ||
      dso.rfind("/memfd:", 0) == 0 || dso.rfind("[JIT]", 0) == 0) {
    return true;
  }
  const size_t slash = dso.rfind('/');
  const std::string_view base = slash == std::string_view::npos ? dso : dso.substr(slash + 1);
  auto numbered = [&](std::string_view prefix, std::string_view suffix) {
    if (base.size() <= prefix.size() + suffix.size()) return false;
    if (base.substr(0, prefix.size()) != prefix) return false;
    if (base.substr(base.size() - suffix.size()) != suffix) return false;
    return AllDigits(base.substr(prefix.size(), base.size() - prefix.size() - suffix.size()));
  };
  return numbered("perf-", ".map") || numbered("jit-", ".dump");
}

std::optional<int64_t> PidOfJitDso(std::string_view dso) {
  const size_t slash = dso.rfind('/');
  const std::string_view base = slash == std::string_view::npos ? dso : dso.substr(slash + 1);
  constexpr std::string_view kPrefix = "perf-", kSuffix = ".map";
  if (base.size() <= kPrefix.size() + kSuffix.size() || !base.starts_with(kPrefix) ||
      !base.ends_with(kSuffix)) {
    return std::nullopt;
  }
  const auto pid =
      Decimal(base.substr(kPrefix.size(), base.size() - kPrefix.size() - kSuffix.size()));
  if (!pid || *pid <= 0) return std::nullopt;
  return pid;
}

bool NeedsJitName(const PerfScriptFrame& frame) {
  // A frame in a file perf knows ("/usr/bin/node") is native code, even when unnamed.
  if (frame.has_dso) return IsJitDso(frame.dso);
  return frame.sym.empty() || frame.sym == "[unknown]";
}

std::string_view StripSymbolOffset(std::string_view sym) {
  const size_t plus = sym.rfind("+0x");
  if (plus == std::string_view::npos || plus == 0) return sym;
  for (size_t i = plus + 3; i < sym.size(); ++i) {
    if (HexValue(sym[i]) < 0) return sym;
  }
  return plus + 3 < sym.size() ? sym.substr(0, plus) : sym;
}

}  // namespace jitsym::client
