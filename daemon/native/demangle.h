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
// Where LLVM's demangler (when built with it) cannot read a name, the C++ runtime's
// (abi::__cxa_demangle) is asked, and its answer spelled as LLVM spells it.
std::string Demangle(std::string_view name);

// Names longer than this are not given to the C++ runtime's demangler (its stack use grows with
// the input: about 70 bytes per byte).
inline constexpr size_t kMaxRuntimeDemangleInput = 4096;

// abi::__cxa_demangle's reading of an Itanium name, in LLVM's spelling; nullopt when it cannot
// read it, when it is no "_Z" name, or when it is longer than kMaxRuntimeDemangleInput.
std::optional<std::string> RuntimeDemangle(std::string_view name);

}  // namespace jitsym::native

#endif  // JITSYM_DAEMON_NATIVE_DEMANGLE_H_
