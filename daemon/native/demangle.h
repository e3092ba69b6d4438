// Symbol names as llvm-symbolizer prints them: the one demangler of native symbolization (symbol
// tables and DWARF linkage names both go through it). Built with libLLVMDemangle when CMake finds
// it (JITSYM_HAVE_LLVM_DEMANGLE, set on demangle.cc only), else with the C++ runtime's demangler
// and a rewrite of the few spellings where GNU and LLVM differ.
#ifndef JITSYM_DAEMON_NATIVE_DEMANGLE_H_
#define JITSYM_DAEMON_NATIVE_DEMANGLE_H_

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace jitsym::native {

// "_ZN3foo3barEv" -> "foo::bar()", as llvm-symbolizer prints it (GNU's " [clone .cold]" suffix
// becomes " (.cold)"); names that are not mangled are returned unchanged.
// Where LLVM's demangler (when built with it) cannot read a name, the C++ runtime's (libiberty's,
// what abi::__cxa_demangle and c++filt run) is asked, and its answer spelled as LLVM spells it.
std::string Demangle(std::string_view name);

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

// The C++ runtime's reading of an Itanium name, in LLVM's spelling; nullopt when it cannot
// read it, when it is no "_Z" name, longer than kMaxRuntimeDemangleInput, or prints longer than
// kMaxDemangledBytes (printing stops there).
std::optional<std::string> RuntimeDemangle(std::string_view name);

}  // namespace jitsym::native

#endif  // JITSYM_DAEMON_NATIVE_DEMANGLE_H_
