// daemon/dwarf/ against its oracle, libdw: for every unit of real binaries (built here by gcc and
// clang at -O0 to -O3, with LTO, DWARF 2 to 5, 64-bit DWARF, type units, compressed sections,
// dwz, split DWARF in .dwo files and .dwp packages; libc6-dbg's debug file; this test binary)
// the unit's ranges, its subprogram/inline tree (names, call sites, pcs) and its line rows are
// what libdw reports, walked as daemon/native/cu_tables.cc walks them
// (tests/unit/testing/dwarf_oracle.h). Where the reader answers differently on purpose,
// docs/dwarf.md says so and a test here shows it.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <set>
#include <string>

#include "tests/unit/testing/dwarf_files.h"
#include "tests/unit/testing/dwarf_oracle.h"
#include "tests/unit/testing/self_path.h"

namespace jitsym::testing {
namespace {

// Compares every unit of `path` and returns the comparison (checked by the caller).
Comparison Check(const std::string& path, bool use_dwp = true, const std::string& alt = "") {
  std::unique_ptr<DwarfModule> m = DwarfModule::Load(path, use_dwp);
  EXPECT_TRUE(m->main->error.empty()) << path << ": " << m->main->error;
  const std::vector<FlatUnit> ours = OurUnits(*m);
  const std::vector<FlatUnit> theirs = LibdwUnits(path, alt);
  Comparison c = CompareUnits(ours, theirs, path);
  for (const std::string& d : c.differences) ADD_FAILURE() << d;
  std::printf("%s: %zu units (%zu split), %zu nodes, %zu ranges, %zu rows alike\n", path.c_str(),
              c.units, c.split_units, c.nodes, c.ranges, c.rows);
  return c;
}

void ExpectAgreement(const std::string& path, const std::string& alt = "") {
  const Comparison c = Check(path, true, alt);
  EXPECT_GT(c.units, 0u) << path;
  EXPECT_GT(c.nodes, 0u) << path;
  EXPECT_GT(c.rows, 0u) << path;
}

class DwarfVsLibdw : public ::testing::Test {
 protected:
  TestPrograms programs_;
};

TEST_F(DwarfVsLibdw, GccAndClangAtEveryOptimizationLevelAndDwarfVersion) {
  size_t built = 0;
  for (const char* compiler : {"g++", "clang++"}) {
    for (const char* flags :
         {"-O0 -g", "-O1 -g", "-O2 -g", "-O3 -g", "-O2 -gdwarf-2", "-O2 -gdwarf-3", "-O2 -gdwarf-4",
          "-O2 -gdwarf-5", "-Os -gdwarf-4 -gstrict-dwarf"}) {
      const std::string prog = programs_.Build(compiler, flags);
      if (prog.empty()) continue;
      ++built;
      SCOPED_TRACE(std::string(compiler) + " " + flags);
      ExpectAgreement(prog);
    }
  }
  EXPECT_GE(built, 16u) << "g++ and clang++ are needed to build the test programs";
}

TEST_F(DwarfVsLibdw, LinkTimeOptimization) {
  // GCC's LTO units refer to each other's DIEs (DW_AT_abstract_origin across units).
  const std::string prog = programs_.Build("g++", "-O2 -g -flto");
  ASSERT_FALSE(prog.empty());
  ExpectAgreement(prog);
  if (const std::string c = programs_.Build("clang++", "-O2 -g -flto -fuse-ld=lld"); !c.empty()) {
    ExpectAgreement(c);
  }
}

TEST_F(DwarfVsLibdw, SixtyFourBitDwarf) {
  const std::string prog = programs_.Build("g++", "-O2 -gdwarf-5 -gdwarf64");
  ASSERT_FALSE(prog.empty());
  ExpectAgreement(prog);
}

TEST_F(DwarfVsLibdw, TypeUnits) {
  for (const char* compiler : {"g++", "clang++"}) {
    for (const char* flags :
         {"-O2 -gdwarf-4 -fdebug-types-section", "-O2 -gdwarf-5 -fdebug-types-section"}) {
      const std::string prog = programs_.Build(compiler, flags);
      if (prog.empty()) continue;
      SCOPED_TRACE(std::string(compiler) + " " + flags);
      ExpectAgreement(prog);
    }
  }
}

TEST_F(DwarfVsLibdw, CompressedSections) {
  // SHF_COMPRESSED (ELFCOMPRESS_ZLIB) from the linker, and GNU .zdebug sections from objcopy.
  const std::string gz = programs_.Build("g++", "-O2 -g -gz=zlib");
  ASSERT_FALSE(gz.empty());
  ExpectAgreement(gz);
  const std::string plain = programs_.Build("g++", "-O2 -g", "zdebug");
  ASSERT_FALSE(plain.empty());
  ASSERT_TRUE(programs_.Run("objcopy --compress-debug-sections=zlib-gnu zdebug"));
  ExpectAgreement(plain);
}

TEST_F(DwarfVsLibdw, Dwz) {
  // One file shrunk alone (partial units, DW_FORM_ref_addr), and two sharing a common file
  // (DW_FORM_GNU_ref_alt, DW_FORM_GNU_strp_alt), as distributions ship debug files.
  const std::string one = programs_.Build("g++", "-O2 -g", "dwz-one");
  ASSERT_FALSE(one.empty());
  ASSERT_TRUE(programs_.Run("dwz dwz-one"));
  ExpectAgreement(one);
  const std::string a = programs_.Build("g++", "-O2 -g", "dwz-a");
  const std::string b = programs_.Build("g++", "-O1 -g", "dwz-b");
  ASSERT_TRUE(programs_.Run("dwz -m common.debug -M common.debug dwz-a dwz-b"));
  ExpectAgreement(a, programs_.dir() + "/common.debug");
  ExpectAgreement(b, programs_.dir() + "/common.debug");
}

// The subprograms with code of a file, as (entry pc, name) pairs.
std::multiset<std::pair<uint64_t, std::string>> NamedEntries(const std::vector<FlatUnit>& units) {
  std::multiset<std::pair<uint64_t, std::string>> out;
  for (const FlatUnit& u : units) {
    for (const FlatRange& r : u.ranges) out.emplace(u.nodes[r.node].low_pc, u.nodes[r.node].name);
  }
  return out;
}

TEST_F(DwarfVsLibdw, DwarfFiveSupplementaryFile) {
  // dwz -5 moves shared DIEs and strings to a supplementary file named by .debug_sup
  // (DW_FORM_ref_sup4, DW_FORM_strp_sup). libdw 0.188 follows neither and leaves the names that
  // are there empty: a better answer of this reader (docs/dwarf.md). It is held to libdw on all
  // else, and its names to those of the same program before dwz.
  const std::string a = programs_.Build("g++", "-O2 -gdwarf-5", "sup-a");
  const std::string b = programs_.Build("g++", "-O1 -gdwarf-5", "sup-b");
  ASSERT_TRUE(programs_.Run("cp sup-a sup-a.before"));
  if (!programs_.Run("dwz -5 -m sup.debug -M sup.debug sup-a sup-b")) {
    GTEST_SKIP() << "dwz cannot write DWARF 5 supplementary files here";
  }
  std::unique_ptr<DwarfModule> m = DwarfModule::Load(a);
  ASSERT_NE(m->sup, nullptr) << "no .debug_sup link followed";
  std::vector<FlatUnit> ours = OurUnits(*m);
  const std::vector<FlatUnit> theirs = LibdwUnits(a, programs_.dir() + "/sup.debug");
  size_t better = 0;
  std::vector<FlatUnit> ours_as_libdw = ours;
  for (size_t i = 0; i < ours_as_libdw.size() && i < theirs.size(); ++i) {
    for (size_t n = 0; n < ours_as_libdw[i].nodes.size() && n < theirs[i].nodes.size(); ++n) {
      FlatNode& node = ours_as_libdw[i].nodes[n];
      if (theirs[i].nodes[n].name.empty() && !node.name.empty()) {
        node.name.clear();
        ++better;
      }
    }
  }
  Comparison c = CompareUnits(ours_as_libdw, theirs, a);
  for (const std::string& d : c.differences) ADD_FAILURE() << d;
  EXPECT_GT(better, 0u) << "libdw now reads supplementary files: drop the exception";
  std::unique_ptr<DwarfModule> before = DwarfModule::Load(a + ".before");
  EXPECT_EQ(NamedEntries(ours), NamedEntries(OurUnits(*before)));
}

TEST_F(DwarfVsLibdw, SplitDwarfInDwoFiles) {
  for (const char* compiler : {"g++", "clang++"}) {
    for (const char* flags : {"-O2 -gsplit-dwarf -gdwarf-4", "-O2 -gsplit-dwarf -gdwarf-5"}) {
      const std::string prog = programs_.Build(compiler, flags);
      if (prog.empty()) continue;
      SCOPED_TRACE(std::string(compiler) + " " + flags);
      const Comparison c = Check(prog);
      EXPECT_GT(c.split_units, 0u) << "libdw linked no split unit";
      EXPECT_GT(c.nodes, 0u);
    }
  }
}

TEST_F(DwarfVsLibdw, SplitDwarfInPackages) {
  // libdw (0.188) reads no package: a unit read from the .dwp must be the one read from its
  // .dwo, which the test above holds to libdw's.
  struct Variant {
    const char* compiler;
    const char* flags;
    const char* dwp;
  };
  size_t packages = 0;
  for (const Variant& v : {Variant{"g++", "-O2 -gsplit-dwarf -gdwarf-4", "dwp"},
                           Variant{"g++", "-O2 -gsplit-dwarf -gdwarf-5", "llvm-dwp"},
                           Variant{"clang++", "-O2 -gsplit-dwarf -gdwarf-5", "llvm-dwp"},
                           Variant{"clang++", "-O2 -gsplit-dwarf -gdwarf-4", "llvm-dwp"}}) {
    const std::string prog = programs_.Build(v.compiler, v.flags);
    if (prog.empty()) continue;
    SCOPED_TRACE(std::string(v.compiler) + " " + v.flags + " " + v.dwp);
    const std::string name = std::filesystem::path(prog).filename();
    if (!programs_.Run(std::string(v.dwp) + " -e " + name + " -o " + name + ".dwp")) continue;
    ++packages;
    std::unique_ptr<DwarfModule> from_dwp = DwarfModule::Load(prog, true);
    std::unique_ptr<DwarfModule> from_dwo = DwarfModule::Load(prog, false);
    ASSERT_NE(from_dwp->dwp, nullptr);
    ASSERT_NE(from_dwp->dwp->context, nullptr) << from_dwp->dwp->error;
    EXPECT_TRUE(from_dwp->dwp->context->package());
    EXPECT_EQ(from_dwp->dwp->context->index_error(), nullptr);
    const std::vector<FlatUnit> packaged = OurUnits(*from_dwp);
    const std::vector<FlatUnit> loose = OurUnits(*from_dwo);
    Comparison c = CompareUnits(packaged, loose, prog + " (.dwp vs .dwo)");
    for (const std::string& d : c.differences) ADD_FAILURE() << d;
    size_t split = 0;
    for (const FlatUnit& u : packaged) split += u.split_found;
    EXPECT_GT(split, 0u);
  }
  EXPECT_GE(packages, 2u) << "dwp and llvm-dwp are needed";
}

TEST(DwarfVsLibdwInstalled, LibcDebugFile) {
  // libc6-dbg's debug file of libc.so.6 (compressed sections, DWARF 5), when installed.
  const std::string dir = "/usr/lib/debug/.build-id";
  size_t checked = 0;
  std::error_code ec;
  for (const auto& sub : std::filesystem::directory_iterator(dir, ec)) {
    for (const auto& f : std::filesystem::directory_iterator(sub.path(), ec)) {
      if (f.path().extension() != ".debug" || f.file_size(ec) < (1u << 20) || checked >= 2) {
        continue;
      }
      SCOPED_TRACE(f.path().string());
      ExpectAgreement(f.path().string());
      ++checked;
    }
  }
  if (checked == 0) GTEST_SKIP() << "no debug file of 1 MiB or more under " << dir;
}

TEST(DwarfVsLibdwInstalled, ThisBinary) { ExpectAgreement(SelfPath()); }

}  // namespace
}  // namespace jitsym::testing
