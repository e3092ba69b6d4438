// Symbol names as llvm-symbolizer prints them: the one demangler of native symbolization (symbol
// tables and DWARF linkage names both go through it). Built with libLLVMDemangle when CMake finds
// it (JITSYM_HAVE_LLVM_DEMANGLE, set on demangle.cc only), else with the C++ runtime's demangler
// and a rewrite of the few spellings where GNU and LLVM differ.
#ifndef JITSYM_DAEMON_NATIVE_DEMANGLE_H_
#define JITSYM_DAEMON_NATIVE_DEMANGLE_H_

#include <string>
#include <string_view>

namespace jitsym::native {

// "_ZN3foo3barEv" -> "foo::bar()", as llvm-symbolizer prints it (GNU's " [clone .cold]" suffix
// becomes " (.cold)"); names that are not mangled are returned unchanged.
std::string Demangle(std::string_view name);

}  // namespace jitsym::native

#endif  // JITSYM_DAEMON_NATIVE_DEMANGLE_H_
