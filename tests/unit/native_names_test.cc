// The pure parts of native names: version and clone suffixes, the choice among aliases of one
// address, and the C++ runtime's demangler behind LLVM's.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "daemon/native/demangle.h"
#include "daemon/native/symbol_names.h"

namespace jitsym::native {
namespace {

TEST(NativeVersion, StripsVersionsAsTheyAppearInSymtab) {
  SymbolVersion kind;
  EXPECT_EQ(StripVersion("mtx_init@GLIBC_2.28", &kind), "mtx_init");
  EXPECT_EQ(kind, SymbolVersion::kNonDefault);
  EXPECT_EQ(StripVersion("mtx_init@@GLIBC_2.34", &kind), "mtx_init");
  EXPECT_EQ(kind, SymbolVersion::kDefault);
  EXPECT_EQ(StripVersion("_ZNSt6thread6_StateD1Ev@@GLIBCXX_3.4.22", &kind),
            "_ZNSt6thread6_StateD1Ev");
  EXPECT_EQ(StripVersion("memcpy", &kind), "memcpy");
  EXPECT_EQ(kind, SymbolVersion::kNone);
}

TEST(NativeVersion, LeavesWhatIsNoVersion) {
  SymbolVersion kind;
  for (const char* name : {"f@", "f@@", "@GLIBC_2.2.5", "f@x y", "f@GLIBC-2", "f@@@"}) {
    EXPECT_EQ(StripVersion(name, &kind), name) << name;
    EXPECT_EQ(kind, SymbolVersion::kNone) << name;
  }
}

TEST(NativeClone, SplitsGccAndLlvmCloneSuffixes) {
  struct Case {
    const char* name;
    const char* base;
    const char* clone;
  };
  const std::vector<Case> cases = {
      {"ptmalloc_init.part.0", "ptmalloc_init", ".part.0"},
      {"f.cold", "f", ".cold"},
      {"f.cold.12", "f", ".cold.12"},
      {"f.isra.0", "f", ".isra.0"},
      {"_Z3fooi.constprop.0", "_Z3fooi", ".constprop.0"},
      {"_Z3fooi.constprop.0.isra.0", "_Z3fooi", ".constprop.0.isra.0"},
      {"f.isra.0.cold", "f", ".isra.0.cold"},
      {"f.lto_priv.0", "f", ".lto_priv.0"},
      {"f.part.0.lto_priv.3", "f", ".part.0.lto_priv.3"},
      {"f.localalias", "f", ".localalias"},
      {"f.llvm.9876543210", "f", ".llvm.9876543210"},
      {"_ZL1fv.__uniq.1234567", "_ZL1fv", ".__uniq.1234567"},
      {"f.specialized.1", "f", ".specialized.1"},
  };
  for (const Case& c : cases) {
    const CloneSplit s = SplitClone(c.name);
    EXPECT_EQ(s.base, c.base) << c.name;
    EXPECT_EQ(s.clone, c.clone) << c.name;
  }
}

TEST(NativeClone, LeavesNamesThatAreNoClones) {
  for (const char* name : {"main", "counter.1", ".part.0", "f.parts.0", "f.part.x", "f.", "f..",
                           "a.b.c", "f.part.0.extra", "", "."}) {
    const CloneSplit s = SplitClone(name);
    EXPECT_EQ(s.base, name) << name;
    EXPECT_TRUE(s.clone.empty()) << name;
  }
}

TEST(NativeClone, LongHostileNamesAreLinear) {
  std::string name = "f";
  for (int i = 0; i < 200000; ++i) name += ".part";
  EXPECT_EQ(SplitClone(name).base, "f");
  name += ".x";
  EXPECT_EQ(SplitClone(name).base, name);
}

AliasFacts Facts(std::string_view name, uint64_t size = 16, bool local = false,
                 SymbolVersion version = SymbolVersion::kNone, std::string_view clone = {}) {
  AliasFacts f;
  f.name = name;
  f.size = size;
  f.local = local;
  f.function = true;
  f.version = version;
  f.clone = clone;
  return f;
}

// The best of `all` by BetterAlias, whatever the order they come in.
std::string_view Best(std::vector<AliasFacts> all) {
  std::string_view best;
  std::sort(all.begin(), all.end(), [](const AliasFacts& a, const AliasFacts& b) {
    return a.name < b.name;  // one order of many
  });
  do {
    const AliasFacts* b = &all[0];
    for (const AliasFacts& f : all) {
      if (BetterAlias(f, *b)) b = &f;
    }
    if (best.empty()) best = b->name;
    EXPECT_EQ(best, b->name) << "the choice depends on the order";
  } while (std::next_permutation(
      all.begin(), all.end(),
      [](const AliasFacts& a, const AliasFacts& b) { return a.name < b.name; }));
  return best;
}

TEST(NativeAlias, PublicNameOverInternalOnes) {
  // glibc: setbuffer is a weak alias of the global _IO_setbuffer; weak and global count alike.
  EXPECT_EQ(Best({Facts("_IO_setbuffer"), Facts("setbuffer")}), "setbuffer");
  EXPECT_EQ(Best({Facts("__libc_malloc"), Facts("malloc"), Facts("__malloc"),
                  Facts("__GI___libc_malloc", 16, true)}),
            "malloc");
}

TEST(NativeAlias, GlobalOverLocal) {
  EXPECT_EQ(Best({Facts("f.localalias_", 16, true), Facts("zzz_long_global_name")}),
            "zzz_long_global_name");
  EXPECT_EQ(Best({Facts("a", 16, true), Facts("__b")}), "__b");
}

TEST(NativeAlias, LargestFirstThenShorterThenByteOrder) {
  EXPECT_EQ(Best({Facts("sized", 32), Facts("s", 0)}), "sized");
  EXPECT_EQ(Best({Facts("strtoimax"), Facts("strtol"), Facts("strtoq"), Facts("strtoll")}),
            "strtol");
  EXPECT_EQ(Best({Facts("stat"), Facts("stat64")}), "stat");
  EXPECT_EQ(Best({Facts("strtoul"), Facts("strtouq")}), "strtoul");
}

TEST(NativeAlias, FunctionOverLabelAndNoCloneOverClone) {
  AliasFacts label = Facts("a");
  label.function = false;
  EXPECT_EQ(Best({label, Facts("bbbb")}), "bbbb");
  EXPECT_TRUE(BetterAlias(Facts("f"), Facts("f", 16, false, SymbolVersion::kNone, ".part.0")));
}

TEST(NativeAlias, DefaultVersionOverOlderOne) {
  const AliasFacts old = Facts("mtx_init", 16, false, SymbolVersion::kNonDefault);
  const AliasFacts cur = Facts("mtx_init", 16, false, SymbolVersion::kDefault);
  EXPECT_TRUE(BetterAlias(cur, old));
  EXPECT_FALSE(BetterAlias(old, cur));
  EXPECT_FALSE(BetterAlias(cur, cur));
}

TEST(NativeDemangleFallback, RuntimeReadsWhatLlvm14CannotRead) {
  // GCC's transaction clone (g++ -fgnu-tm): LLVM 14's demangler has no "GTt".
  EXPECT_EQ(Demangle("_ZGTt3fooi"), "transaction clone for foo(int)");
  EXPECT_EQ(RuntimeDemangle("_ZGTt3fooi").value_or(""), "transaction clone for foo(int)");
  // Spelled as LLVM spells what both read.
  EXPECT_EQ(RuntimeDemangle("_ZZ1fvENKUlvE_clEv").value_or(""),
            "f()::'lambda'()::operator()() const");
  // What LLVM reads is read by LLVM.
  EXPECT_EQ(Demangle("_ZN3foo3barEv"), "foo::bar()");
}

TEST(NativeDemangleFallback, RefusesHostileInput) {
  EXPECT_FALSE(RuntimeDemangle("foo").has_value());
  EXPECT_FALSE(RuntimeDemangle("_Z").has_value());
  EXPECT_FALSE(RuntimeDemangle("_Zxyz").has_value());
  // Too long for the runtime: left as it is (LLVM's demangler reads it or not).
  std::string huge = "_ZGTt" + std::to_string(kMaxRuntimeDemangleInput) +
                     std::string(kMaxRuntimeDemangleInput, 'a') + "v";
  EXPECT_FALSE(RuntimeDemangle(huge).has_value());
  EXPECT_EQ(Demangle(huge), huge);
  // A long name within the limit is read (libstdc++'s demangler has limits of its own, near
  // 1,000 parameters or identifier bytes).
  const std::string params(1000, 'i');
  std::string want = "transaction clone for f(int";
  for (int i = 1; i < 1000; ++i) want += ", int";
  EXPECT_EQ(Demangle("_ZGTt1f" + params), want + ")");
}

}  // namespace
}  // namespace jitsym::native
