// Version and clone suffixes of symbol names, and the choice among aliases (symbol_names.h).
#include "daemon/native/symbol_names.h"

#include <array>
#include <tuple>

namespace jitsym::native {
namespace {

bool VersionChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '.';
}

bool AllDigits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

// The words GCC (ipa-split, ipa-sra, ipa-cp, LTO, -fno-semantic-interposition) and LLVM
// (ThinLTO promotion, -funique-internal-linkage-names, function specialization) append.
bool CloneWord(std::string_view s) {
  static constexpr std::array<std::string_view, 10> kWords = {
      "part",       "cold",  "isra", "constprop", "lto_priv",
      "localalias", "clone", "llvm", "__uniq",    "specialized"};
  for (std::string_view w : kWords) {
    if (s == w) return true;
  }
  return false;
}

size_t LeadingUnderscores(std::string_view s) {
  size_t n = 0;
  while (n < s.size() && s[n] == '_') ++n;
  return n;
}

}  // namespace

std::string_view StripVersion(std::string_view name, SymbolVersion* kind) {
  if (kind != nullptr) *kind = SymbolVersion::kNone;
  const size_t at = name.find('@');
  if (at == std::string_view::npos || at == 0) return name;
  const bool dflt = at + 1 < name.size() && name[at + 1] == '@';
  const std::string_view version = name.substr(at + (dflt ? 2 : 1));
  if (version.empty()) return name;
  for (char c : version) {
    if (!VersionChar(c)) return name;
  }
  if (kind != nullptr) *kind = dflt ? SymbolVersion::kDefault : SymbolVersion::kNonDefault;
  return name.substr(0, at);
}

CloneSplit SplitClone(std::string_view name) {
  // One pass over the '.'-separated components after the first character: `run` is where the
  // current run of clone components began (npos: none), `word_before` whether a number may
  // follow (numbers only qualify a word: "x.part.0", not "counter.1").
  size_t run = std::string_view::npos;
  bool word_before = false;
  size_t dot = name.find('.', 1);
  while (dot != std::string_view::npos) {
    const size_t next = name.find('.', dot + 1);
    const std::string_view part = name.substr(
        dot + 1, next == std::string_view::npos ? std::string_view::npos : next - dot - 1);
    if (CloneWord(part)) {
      if (run == std::string_view::npos) run = dot;
      word_before = true;
    } else if (word_before && AllDigits(part)) {
      // a number after a word (or after another number: ".llvm.123.456" stays one run)
    } else {
      run = std::string_view::npos;
      word_before = false;
    }
    dot = next;
  }
  if (run == std::string_view::npos) return {name, {}};
  return {name.substr(0, run), name.substr(run)};
}

bool BetterAlias(const AliasFacts& a, const AliasFacts& b) {
  // Each key says "smaller is better".
  auto key = [](const AliasFacts& f) {
    return std::make_tuple(~f.size, f.local, !f.function, !f.clone.empty(),
                           LeadingUnderscores(f.name), f.name.size(),
                           static_cast<int>(f.version == SymbolVersion::kNonDefault), f.name,
                           f.clone, static_cast<int>(f.version));
  };
  return key(a) < key(b);
}

}  // namespace jitsym::native
