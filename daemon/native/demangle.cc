// Demangling for native symbolization (demangle.h).
#include "daemon/native/demangle.h"

#include <cxxabi.h>

#include <cstdlib>
#include <optional>

#ifdef JITSYM_HAVE_LLVM_DEMANGLE
#include <llvm/Demangle/Demangle.h>
#endif

namespace jitsym::native {
namespace {

// Rewrites what GNU's demangler prints differently from LLVM's (which llvm-symbolizer uses):
//   "f() [clone .constprop.0] [clone .cold]"  ->  "f() (.constprop.0.cold)"
//   "{lambda(auto:1&, int)#3}"                ->  "'lambda1'(auto&, int)"
//   "{unnamed type#1}"                        ->  "'unnamed'"
//   "decltype(nullptr)"                       ->  "std::nullptr_t"
std::string LlvmStyle(const std::string& in) {
  std::string out;
  out.reserve(in.size());
  size_t i = 0;
  auto number_after = [](std::string_view text, size_t hash) -> std::optional<unsigned> {
    unsigned n = 0;
    size_t k = hash + 1;
    if (k >= text.size() || text[k] < '0' || text[k] > '9') return std::nullopt;
    for (; k < text.size() && text[k] >= '0' && text[k] <= '9'; ++k) n = n * 10 + (text[k] - '0');
    if (k >= text.size() || text[k] != '}') return std::nullopt;
    return n;
  };
  auto discriminator = [](unsigned n) { return n <= 1 ? std::string() : std::to_string(n - 2); };
  while (i < in.size()) {
    const std::string_view rest(in.data() + i, in.size() - i);
    if (rest.starts_with(" [clone ")) {
      std::string suffix;
      size_t j = i;
      while (std::string_view(in.data() + j, in.size() - j).starts_with(" [clone ")) {
        const size_t end = in.find(']', j);
        if (end == std::string::npos) break;
        suffix += in.substr(j + 8, end - j - 8);
        j = end + 1;
      }
      if (j == i) {
        out += in.substr(i);
        break;
      }
      out += " (" + suffix + ")";
      i = j;
      continue;
    }
    if (rest.starts_with("{lambda(")) {
      // Parameters up to the matching ')', then "#N}".
      size_t k = i + 8;
      int depth = 1;
      for (; k < in.size() && depth > 0; ++k) {
        if (in[k] == '(') ++depth;
        if (in[k] == ')') --depth;
      }
      if (depth == 0 && k < in.size() && in[k] == '#') {
        if (std::optional<unsigned> n = number_after(in, k)) {
          std::string params = in.substr(i + 8, k - 1 - (i + 8));
          for (size_t a; (a = params.find("auto:")) != std::string::npos;) {
            size_t b = a + 5;
            while (b < params.size() && params[b] >= '0' && params[b] <= '9') ++b;
            params.erase(a + 4, b - a - 4);
          }
          out += "'lambda" + discriminator(*n) + "'(" + params + ")";
          i = in.find('}', k) + 1;
          continue;
        }
      }
    }
    if (rest.starts_with("decltype(nullptr)")) {
      out += "std::nullptr_t";
      i += 17;
      continue;
    }
    if (rest.starts_with("{unnamed type#")) {
      if (std::optional<unsigned> n = number_after(in, i + 13)) {
        out += "'unnamed" + discriminator(*n) + "'";
        i = in.find('}', i + 13) + 1;
        continue;
      }
    }
    out.push_back(in[i++]);
  }
  return out;
}

}  // namespace

std::optional<std::string> RuntimeDemangle(std::string_view name) {
  // Only Itanium names, and only short enough: the runtime's demangler keeps two parse nodes per
  // input byte on the stack (and the result on the heap), so a hostile symbol table must not
  // choose those sizes.
  if (!name.starts_with("_Z") || name.size() > kMaxRuntimeDemangleInput) return std::nullopt;
  const std::string input(name);
  int status = 0;
  char* out = abi::__cxa_demangle(input.c_str(), nullptr, nullptr, &status);
  if (out == nullptr || status != 0) {
    std::free(out);
    return std::nullopt;
  }
  std::string result(out);
  std::free(out);
  return LlvmStyle(result);
}

std::string Demangle(std::string_view name) {
#ifdef JITSYM_HAVE_LLVM_DEMANGLE
  // What llvm-symbolizer calls: Itanium (and Rust) names demangled; where LLVM 14's demangler
  // cannot read a name (GCC's transaction clones "_ZGTt...", "operator __alignof__" in
  // decltype, ...), the C++ runtime's, which c++filt also uses; else the name unchanged.
  std::string input(name), out;
  if (llvm::nonMicrosoftDemangle(input.c_str(), out)) return out;
  if (std::optional<std::string> gnu = RuntimeDemangle(name)) return *std::move(gnu);
  return input;
#else
  std::optional<std::string> gnu = RuntimeDemangle(name);
  return gnu ? *std::move(gnu) : std::string(name);
#endif
}

}  // namespace jitsym::native
