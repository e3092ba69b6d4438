// Symbol names as llvm-symbolizer prints them: the one demangler of native symbolization (symbol
// tables and DWARF linkage names both go through it). Built with libLLVMDemangle when CMake finds
// it (JITSYM_HAVE_LLVM_DEMANGLE, set on demangle.cc only), else with the C++ runtime's demangler
// and a rewrite of the few spellings where GNU and LLVM differ.
#ifndef JITSYM_DAEMON_NATIVE_DEMANGLE_H_
#define JITSYM_DAEMON_NATIVE_DEMANGLE_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace jitsym::native {

// What demangling may cost one module (its symbol tables and its debug info's linkage names
// together), counted in the text the demanglers print: printing is what a hostile name makes
// expensive (a name of a few hundred bytes prints as gigabytes; the C++ runtime's demangler
// prints about 8 ms per MiB), and parsing is linear in the input, which is bounded per name.
// Counted, not timed, so that what is demangled does not depend on the machine's load. Past a
// share, names stay mangled: all of them past kPrintedBytes, those only the C++ runtime's
// demangler reads past kRuntimeBytes. Thread-safe (a module's units are read on two threads).
class DemangleBudget {
 public:
  // A module with 500,000 symbols of 200 printed bytes takes 100 MB.
  static constexpr uint64_t kPrintedBytes = uint64_t{512} << 20;
  // Names LLVM cannot read (GCC's transaction clones "_ZGTt..."): a few hundred per libstdc++.
  static constexpr uint64_t kRuntimeBytes = uint64_t{16} << 20;

  bool Allows() const { return printed_.load(std::memory_order_relaxed) < kPrintedBytes; }
  bool AllowsRuntime() const {
    return Allows() && runtime_.load(std::memory_order_relaxed) < kRuntimeBytes;
  }
  void Spend(uint64_t bytes, bool runtime) {
    printed_.fetch_add(bytes, std::memory_order_relaxed);
    if (runtime) runtime_.fetch_add(bytes, std::memory_order_relaxed);
  }
  // True once, the first time it is asked after a share ran out: the caller logs it.
  bool TakeExhaustedReport() {
    return !AllowsRuntime() && !reported_.exchange(true, std::memory_order_relaxed);
  }
  // "demangling printed 512 MiB (16 MiB in the C++ runtime's demangler)".
  std::string Describe() const;
  uint64_t printed() const { return printed_.load(std::memory_order_relaxed); }
  uint64_t runtime_printed() const { return runtime_.load(std::memory_order_relaxed); }

 private:
  std::atomic<uint64_t> printed_{0};
  std::atomic<uint64_t> runtime_{0};
  std::atomic<bool> reported_{false};
};

// "_ZN3foo3barEv" -> "foo::bar()", as llvm-symbolizer prints it (GNU's " [clone .cold]" suffix
// becomes " (.cold)"); names that are not mangled are returned unchanged.
// Where LLVM's demangler (when built with it) cannot read a name, the C++ runtime's (libiberty's,
// what abi::__cxa_demangle and c++filt run) is asked, and its answer spelled as LLVM spells it.
// With a budget, what is printed is charged to it, and a name it no longer allows stays mangled.
std::string Demangle(std::string_view name, DemangleBudget* budget = nullptr);

// Names longer than this are not given to the C++ runtime's demangler (its stack use grows with
// the input).
inline constexpr size_t kMaxRuntimeDemangleInput = 4096;

// Every name is hostile: a symbol table is written by anyone. Both demanglers recurse once per
// level of nesting (LLVM 14's overflows an 8 MiB thread stack on a 100 KiB "_Z1fPPPP...i"), and
// back-references let a 258-byte name print as 142 MB. So LLVM's demangler reads names of at
// most kMaxDemangleInput bytes, and a name whose printed form would be longer than
// kMaxDemangledBytes (bounded over LLVM's parse tree before printing; the runtime's printer is
// stopped there) stays mangled. A name longer than the caller's remaining stack can take (a
// bound per input byte) is demangled on a thread with a stack of that size.
inline constexpr size_t kMaxDemangleInput = 16384;
inline constexpr size_t kMaxDemangledBytes = size_t{1} << 20;

// The C++ runtime's demangler prints at most this much of one name (its printer is the slow
// one: a longer name stays mangled after about half a millisecond).
inline constexpr size_t kMaxRuntimeDemangledBytes = size_t{64} << 10;

// The C++ runtime's reading of an Itanium name, in LLVM's spelling; nullopt when it cannot
// read it, when it is no "_Z" name, longer than kMaxRuntimeDemangleInput, or prints longer than
// kMaxRuntimeDemangledBytes (printing stops there). *printed: what its printer produced.
std::optional<std::string> RuntimeDemangle(std::string_view name, size_t* printed = nullptr);

}  // namespace jitsym::native

#endif  // JITSYM_DAEMON_NATIVE_DEMANGLE_H_
