// Demangling for native symbolization (demangle.h).
#include "daemon/native/demangle.h"

// libiberty.h declares basename() unless told that <string.h> does (glibc's differs).
#define HAVE_DECL_BASENAME 1
#include <libiberty/demangle.h>
#include <pthread.h>

#include <algorithm>
#include <csetjmp>
#include <cstdlib>
#include <memory>
#include <new>
#include <optional>
#include <type_traits>
#include <vector>

#ifdef JITSYM_HAVE_LLVM_DEMANGLE
#include <llvm/Demangle/Demangle.h>
// LLVM 14's parser header uses std::is_pod, deprecated in C++20.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#include <llvm/Demangle/ItaniumDemangle.h>
#pragma GCC diagnostic pop
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

// The printed text of libiberty's demangler (the C++ runtime's, and c++filt's), which hands it
// over piece by piece.
struct GnuOutput {
  std::string text;
  std::jmp_buf too_long;
  static void Put(const char* piece, size_t size, void* self) {
    GnuOutput* out = static_cast<GnuOutput*>(self);
    if (out->text.size() + size > kMaxRuntimeDemangledBytes) std::longjmp(out->too_long, 1);
    out->text.append(piece, size);
  }
};

#ifdef JITSYM_HAVE_LLVM_DEMANGLE
namespace itd = llvm::itanium_demangle;

// The parse tree's memory: nodes are bump-allocated and never destroyed one by one (as in
// LLVM's own demangler); all of it goes with the parser. Records the longest node array, which
// bounds how often a pack expansion prints its pattern.
class Arena {
 public:
  template <class T, class... Args>
  T* makeNode(Args&&... args) {
    return new (Allocate(sizeof(T))) T(std::forward<Args>(args)...);
  }
  void* allocateNodeArray(size_t n) {
    longest_array_ = std::max(longest_array_, n);
    return Allocate(n * sizeof(itd::Node*));
  }
  void reset() {
    blocks_.clear();
    current_ = first_;
    used_ = 0;
    longest_array_ = 0;
  }
  size_t longest_array() const { return longest_array_; }

 private:
  static constexpr size_t kBlock = 4096;
  void* Allocate(size_t bytes) {
    bytes = (bytes + 15) & ~size_t{15};
    if (used_ + bytes > kBlock) {
      // Most names fit in the first block, which costs no allocation.
      blocks_.push_back(
          std::make_unique_for_overwrite<Block[]>((std::max(bytes, kBlock) + 15) / sizeof(Block)));
      if (bytes > kBlock) return blocks_.back().get();
      current_ = reinterpret_cast<char*>(blocks_.back().get());
      used_ = 0;
    }
    void* out = current_ + used_;
    used_ += bytes;
    return out;
  }
  struct alignas(16) Block {
    char bytes[16];
  };
  alignas(16) char first_[kBlock];
  std::vector<std::unique_ptr<Block[]>> blocks_;
  char* current_ = first_;
  size_t used_ = 0;
  size_t longest_array_ = 0;
};
using Parser = itd::ManglingParser<Arena>;

// An upper bound of the length of a parse tree's printed form, found by walking the tree as
// printing does (a shared node counted at each use) and stopping past `limit`: so it costs no
// more than printing would. A node counts as its strings and arrays' separators plus
// kFixedText for the words its kind prints itself (no kind prints more, but the standard
// substitutions and floating-point literals, counted apart). A pack expansion prints its
// pattern once per element of a pack, at most `longest_array` + 1 times (a fold expression
// prints its pack as an expansion).
class PrintedSize {
 public:
  PrintedSize(size_t limit, size_t longest_array) : limit_(limit), pack_(longest_array + 1) {}

  bool Within(const itd::Node* root) {
    Add(root);
    return total_ <= limit_;
  }

 private:
  static constexpr size_t kFixedText = 36;
  static constexpr size_t kLongText = 80;  // "std::basic_string<char, std::char_traits<char>, ..."

  void Add(const itd::Node* node) {
    if (node == nullptr || total_ > limit_) return;
    total_ += kFixedText;
    node->visit([this](const auto* typed) { Walk(typed); });
  }
  template <class T>
  void Walk(const T* node) {
    node->match([&](const auto&... args) { (Arg(args), ...); });
  }
  void Walk(const itd::ForwardTemplateReference* ref) {
    // A reference may lead back to itself; printing stops there, and so does this.
    if (ref->Printing) return;
    itd::SwapAndRestore<bool> printing(ref->Printing, true);
    Add(ref->Ref);
  }
  void Walk(const itd::ParameterPackExpansion* expansion) { Repeated(expansion->getChild()); }
  void Walk(const itd::ExpandedSpecialSubstitution*) { total_ += kLongText; }
  void Walk(const itd::SpecialSubstitution*) { total_ += kLongText; }
  template <class Float>
  void Walk(const itd::FloatLiteralImpl<Float>*) {
    total_ += kLongText;  // printed with "%a" from the mangled digits
  }
  void Walk(const itd::FoldExpr* fold) {
    fold->match([this](bool, itd::StringView op, const itd::Node* pack, const itd::Node* init) {
      total_ += 2 * op.size();
      Repeated(pack);
      Add(init);
    });
  }
  void Repeated(const itd::Node* pattern) {
    const size_t before = total_;
    Add(pattern);
    const size_t once = total_ - before;
    const size_t each = once + 2;  // and ", "
    total_ = pack_ > (limit_ + 1) / each ? limit_ + 1 : total_ + each * pack_;
  }
  template <class T>
  void Arg(const T& arg) {
    if constexpr (std::is_pointer_v<T>) {
      if constexpr (std::is_base_of_v<itd::Node, std::remove_cv_t<std::remove_pointer_t<T>>>) {
        Add(arg);
      }
    } else if constexpr (std::is_same_v<T, itd::NodeArray>) {
      for (const itd::Node* element : arg) {
        total_ += 2;  // ", "
        Add(element);
      }
    } else if constexpr (std::is_same_v<T, itd::StringView>) {
      total_ += arg.size();
    }
  }

  size_t total_ = 0;
  const size_t limit_;
  const size_t pack_;
};

// LLVM's Itanium demangler (what llvm::itaniumDemangle does), with the bound above before
// printing. nullopt when it cannot read the name or (*too_long) the name prints too long.
std::optional<std::string> ItaniumDemangle(const std::string& name, bool* too_long) {
  Parser parser(name.data(), name.data() + name.size());
  const itd::Node* tree = parser.parse();
  if (tree == nullptr) return std::nullopt;
  if (!PrintedSize(kMaxDemangledBytes, parser.ASTAllocator.longest_array()).Within(tree)) {
    *too_long = true;
    return std::nullopt;
  }
  itd::OutputBuffer out;
  if (!itd::initializeOutputBuffer(nullptr, nullptr, out, 1024)) return std::nullopt;
  tree->print(out);
  std::string result(out.getBuffer(), out.getCurrentPosition());
  std::free(out.getBuffer());
  return result;
}

// Rust (v0, "_R") and D ("_D") names go to LLVM's demanglers, which bound neither the nesting
// nor back-references: only short names with few back-references ('B' in Rust, 'Q' in D; each
// may at most double the printed length), so the output stays under 4096 << 8 bytes.
bool FewBackReferences(std::string_view name, char letter) {
  return name.size() <= 4096 && std::count(name.begin(), name.end(), letter) <= 8;
}
#endif  // JITSYM_HAVE_LLVM_DEMANGLE

}  // namespace

std::string DemangleBudget::Describe() const {
  return "demangling printed " + std::to_string(printed() >> 20) + " MiB (" +
         std::to_string(runtime_printed() >> 20) +
         " MiB in the C++ runtime's demangler, which reads what LLVM's cannot; shares " +
         std::to_string(kPrintedBytes >> 20) + " and " + std::to_string(kRuntimeBytes >> 20) +
         " MiB)";
}

std::optional<std::string> RuntimeDemangle(std::string_view name, size_t* printed) {
  if (printed) *printed = 0;
  // Only Itanium names, and only short enough: this demangler keeps its parse nodes on the stack
  // (about 70 bytes per input byte), so a hostile symbol table must not choose that size.
  if (!name.starts_with("_Z") || name.size() > kMaxRuntimeDemangleInput) return std::nullopt;
  const std::string input(name);
  GnuOutput out;
  // Printing stops (longjmp out of the printer's C frames, which hold no heap memory: that is
  // what the callback form is for) once the text passes kMaxRuntimeDemangledBytes; the flags
  // are those of abi::__cxa_demangle.
  if (setjmp(out.too_long) != 0) {
    if (printed) *printed = kMaxRuntimeDemangledBytes;
    return std::nullopt;
  }
  const int ok =
      cplus_demangle_v3_callback(input.c_str(), DMGL_PARAMS | DMGL_TYPES, GnuOutput::Put, &out);
  if (printed) *printed = out.text.size();
  if (ok == 0) return std::nullopt;
  return LlvmStyle(out.text);
}

namespace {

// Stack the demanglers use per input byte (parser and printer recurse once per nesting level,
// and a byte or two opens a level), measured on LLVM 14 over the nesting forms: at most 113
// bytes at -O2 and 3.6 KB under AddressSanitizer. Twice that is what a name may need.
#if defined(__SANITIZE_ADDRESS__)
constexpr size_t kStackPerInputByte = 8192;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr size_t kStackPerInputByte = 8192;
#else
constexpr size_t kStackPerInputByte = 256;
#endif
#else
constexpr size_t kStackPerInputByte = 256;
#endif
constexpr size_t kStackSlack = size_t{128} << 10;

// Bytes of this thread's stack below the caller's frame (0 when unknown).
size_t StackLeft() {
  thread_local const char* const lowest = [] {
    const char* low = nullptr;
    pthread_attr_t attr;
    if (pthread_getattr_np(pthread_self(), &attr) != 0) return low;
    void* addr = nullptr;
    size_t size = 0;
    size_t guard = 0;
    if (pthread_attr_getstack(&attr, &addr, &size) == 0) {
      pthread_attr_getguardsize(&attr, &guard);
      low = static_cast<const char*>(addr) + guard;
    }
    pthread_attr_destroy(&attr);
    return low;
  }();
  const char* here = static_cast<const char*>(__builtin_frame_address(0));
  return lowest != nullptr && here > lowest ? static_cast<size_t>(here - lowest) : 0;
}

std::string DemangleHere(std::string_view name, DemangleBudget* budget);

struct OwnStackCall {
  std::string_view name;
  DemangleBudget* budget;
  std::string out;
  static void* Run(void* self) {
    auto* call = static_cast<OwnStackCall*>(self);
    try {
      call->out = DemangleHere(call->name, call->budget);
    } catch (const std::bad_alloc&) {
      call->out.assign(call->name);
    }
    return nullptr;
  }
};

// Demangles on a thread whose stack holds `stack` bytes; the name unchanged if there is none.
std::string DemangleOnOwnStack(std::string_view name, DemangleBudget* budget, size_t stack) {
  OwnStackCall call{name, budget, {}};
  pthread_attr_t attr;
  if (pthread_attr_init(&attr) != 0) return std::string(name);
  pthread_t thread;
  const bool started = pthread_attr_setstacksize(&attr, stack) == 0 &&
                       pthread_create(&thread, &attr, OwnStackCall::Run, &call) == 0;
  pthread_attr_destroy(&attr);
  if (!started) return std::string(name);
  pthread_join(thread, nullptr);
  return std::move(call.out);
}

}  // namespace

std::string Demangle(std::string_view name, DemangleBudget* budget) {
  // The stack a name may need is known from its length; a name that needs more than the
  // caller's thread has left (a deep name on a small stack, or any long one under the
  // sanitizers) is demangled on a thread of its own with enough.
  if (name.size() > kMaxDemangleInput || (budget && !budget->Allows())) return std::string(name);
  const size_t need = name.size() * kStackPerInputByte + kStackSlack;
  if (StackLeft() >= need) return DemangleHere(name, budget);
  return DemangleOnOwnStack(name, budget, need);
}

namespace {

// The C++ runtime's demangler, if the budget allows it, charged with what it printed.
std::optional<std::string> BudgetedRuntimeDemangle(std::string_view name, DemangleBudget* budget) {
  if (budget && !budget->AllowsRuntime()) return std::nullopt;
  size_t printed = 0;
  std::optional<std::string> out = RuntimeDemangle(name, &printed);
  if (budget) budget->Spend(printed, /*runtime=*/true);
  return out;
}

std::string DemangleHere(std::string_view name, DemangleBudget* budget) {
#ifdef JITSYM_HAVE_LLVM_DEMANGLE
  // What llvm-symbolizer calls: Itanium (and Rust) names demangled; where LLVM 14's demangler
  // cannot read a name (GCC's transaction clones "_ZGTt...", "operator __alignof__" in
  // decltype, ...), the C++ runtime's, which c++filt also uses; else the name unchanged.
  // (llvm::nonMicrosoftDemangle, with bounds: demangle.h.)
  std::string input(name);
  if (name.size() > kMaxDemangleInput) return input;
  if (name.starts_with("_Z") || name.starts_with("___Z")) {
    bool too_long = false;
    if (std::optional<std::string> out = ItaniumDemangle(input, &too_long)) {
      if (budget) budget->Spend(out->size(), /*runtime=*/false);
      return *std::move(out);
    }
    if (too_long) return input;
  } else if (name.starts_with("_R") || name.starts_with("_D")) {
    std::string out;
    if (FewBackReferences(name, name[1] == 'R' ? 'B' : 'Q') &&
        llvm::nonMicrosoftDemangle(input.c_str(), out)) {
      if (budget) budget->Spend(out.size(), /*runtime=*/false);
      return out;
    }
    return input;
  }
  if (std::optional<std::string> gnu = BudgetedRuntimeDemangle(name, budget)) {
    return *std::move(gnu);
  }
  return input;
#else
  std::optional<std::string> gnu = BudgetedRuntimeDemangle(name, budget);
  return gnu ? *std::move(gnu) : std::string(name);
#endif
}

}  // namespace

}  // namespace jitsym::native
