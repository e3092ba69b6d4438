// What an ELF symbol's name says besides the function it names, taken apart before the name is
// demangled and stored (symbol_table.h), and the choice among symbols that start at one address.
// Pure functions over strings: no ELF reading here.
//
//   mtx_init@GLIBC_2.28            -> mtx_init            (symbol version, .symver)
//   memcpy@@GLIBC_2.14             -> memcpy              (default version)
//   ptmalloc_init.part.0           -> ptmalloc_init  clone ".part.0"
//   _Z3fooi.constprop.0.isra.0     -> _Z3fooi        clone ".constprop.0.isra.0"
//   foo.cold / foo.lto_priv.0 / foo.localalias / foo.llvm.1234 / foo.__uniq.99
//
// docs/formats.md (Native, names) says which name wins and where that differs from perf and
// llvm-symbolizer.
#ifndef JITSYM_DAEMON_NATIVE_SYMBOL_NAMES_H_
#define JITSYM_DAEMON_NATIVE_SYMBOL_NAMES_H_

#include <cstdint>
#include <string_view>

namespace jitsym::native {

enum class SymbolVersion : uint8_t {
  kNone,        // no "@" suffix
  kDefault,     // "name@@VER": what a new link binds to
  kNonDefault,  // "name@VER": kept for binaries linked against an older version
};

// "name@VER" / "name@@VER" -> "name" (and which kind it was). VER is what a version node may
// be called (letters, digits, '_', '.'); anything else after '@' is left as it is.
std::string_view StripVersion(std::string_view name, SymbolVersion* kind = nullptr);

struct CloneSplit {
  std::string_view base;   // the function's own name
  std::string_view clone;  // ".part.0", ".cold", ...; empty when the name is no clone's
};

// Splits a GCC/LLVM clone suffix off a (mangled or plain) symbol name: one or more components
// ".part", ".cold", ".isra", ".constprop", ".lto_priv", ".localalias", ".clone", ".llvm",
// ".__uniq", ".specialized", each optionally followed by ".N" numbers, reaching the end of the
// name. A bare ".N" (GCC's name for a function-local static, "counter.1") is no clone. Linear.
CloneSplit SplitClone(std::string_view name);

// What decides among the symbols that start at one address.
struct AliasFacts {
  uint64_t size = 0;
  bool local = false;     // STB_LOCAL (weak and global count alike)
  bool function = false;  // STT_FUNC or STT_GNU_IFUNC
  SymbolVersion version = SymbolVersion::kNone;
  std::string_view name;   // demangled, version and clone suffix removed
  std::string_view clone;  // the clone suffix, if any
};

// True if `a` names the address better than `b`: the larger (a symbol of size 0 says least),
// then non-local over local, a function over data or a label, no clone suffix over one, fewer
// leading underscores ("setbuffer" over "_IO_setbuffer", "malloc" over "__libc_malloc"), the
// shorter name ("stat" over "stat64", "strtol" over "strtoimax"), the default version, and last
// the name's byte order, so that the choice never depends on symbol table order. A strict weak
// ordering.
bool BetterAlias(const AliasFacts& a, const AliasFacts& b);

}  // namespace jitsym::native

#endif  // JITSYM_DAEMON_NATIVE_SYMBOL_NAMES_H_
