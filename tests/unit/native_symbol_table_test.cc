// The symbol table works out names and aliases when they are first asked for: it must answer
// what choosing among all aliases by their demangled names up front answers, from any thread.
#include <fcntl.h>
#include <gelf.h>
#include <gtest/gtest.h>
#include <libelf.h>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "daemon/native/demangle.h"
#include "daemon/native/symbol_names.h"
#include "daemon/native/symbol_table.h"
#include "tests/unit/testing/self_path.h"

namespace jitsym::native {
namespace {

// Per address, the name the best symbol there shows, by brute force: every symbol of .symtab
// demangled, all aliases compared. *aliased: the addresses several symbols start at.
std::map<uint64_t, std::string> Oracle(Elf* elf, size_t* aliased) {
  struct Candidate {
    AliasFacts facts;
    std::string name, clone;
  };
  std::map<uint64_t, std::vector<Candidate>> at;
  for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn; scn = elf_nextscn(elf, scn)) {
    GElf_Shdr sh;
    if (gelf_getshdr(scn, &sh) == nullptr || sh.sh_type != SHT_SYMTAB) continue;
    Elf_Data* data = elf_getdata(scn, nullptr);
    for (size_t i = 1; i < sh.sh_size / sh.sh_entsize; ++i) {
      GElf_Sym sym;
      gelf_getsym(data, static_cast<int>(i), &sym);
      const int type = GELF_ST_TYPE(sym.st_info);
      if ((type != STT_FUNC && type != STT_OBJECT && type != STT_NOTYPE && type != STT_GNU_IFUNC) ||
          sym.st_shndx == SHN_UNDEF || sym.st_shndx >= SHN_LORESERVE) {
        continue;
      }
      const char* raw = elf_strptr(elf, sh.sh_link, sym.st_name);
      if (raw == nullptr || raw[0] == '\0' || (type == STT_NOTYPE && raw[0] == '$')) continue;
      SymbolVersion version;
      const CloneSplit split = SplitClone(StripVersion(raw, &version));
      Candidate c;
      c.name = Demangle(split.clone.empty() ? StripVersion(raw) : split.base);
      c.clone = std::string(split.clone);
      c.facts.size = sym.st_size;
      c.facts.local = GELF_ST_BIND(sym.st_info) == STB_LOCAL;
      c.facts.function = type == STT_FUNC || type == STT_GNU_IFUNC;
      c.facts.version = version;
      at[sym.st_value].push_back(std::move(c));
    }
  }
  std::map<uint64_t, std::string> best;
  *aliased = 0;
  for (auto& [addr, all] : at) {
    *aliased += all.size() > 1;
    for (Candidate& c : all) {
      c.facts.name = c.name;
      c.facts.clone = c.clone;
    }
    const Candidate* b = &all[0];
    for (const Candidate& c : all) {
      if (BetterAlias(c.facts, b->facts)) b = &c;
    }
    best[addr] = b->name;
  }
  return best;
}

TEST(NativeSymbolTable, NamesAndAliasesWorkedOutWhenAskedAreWhatAllAtOnceGives) {
  elf_version(EV_CURRENT);
  const int fd = ::open(testing::SelfPath().c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  Elf* elf = elf_begin(fd, ELF_C_READ_MMAP, nullptr);
  ASSERT_NE(elf, nullptr);
  size_t aliased = 0;
  const std::map<uint64_t, std::string> want = Oracle(elf, &aliased);
  // C++ constructors and destructors (C1/C2, D1/D2) start at one address, and demangle alike
  // or not (deleting destructors): this binary has hundreds.
  ASSERT_GT(want.size(), 10000u) << "this binary's .symtab";
  ASSERT_GT(aliased, 100u);

  SymbolTable table;
  DemangleBudget budget;
  table.SetContext(testing::SelfPath(), &budget);
  ASSERT_TRUE(table.Load(elf, false));
  table.Finish();
  // Four threads ask for every address, each in its own order: every name is worked out once,
  // by whichever asks first.
  std::vector<uint64_t> addrs;
  for (const auto& [addr, name] : want) addrs.push_back(addr);
  std::vector<std::vector<std::string>> got(4);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < got.size(); ++t) {
    threads.emplace_back([&, t] {
      std::vector<size_t> order(addrs.size());
      for (size_t i = 0; i < order.size(); ++i) order[i] = i;
      std::shuffle(order.begin(), order.end(), std::mt19937(static_cast<unsigned>(t)));
      got[t].resize(addrs.size());
      for (size_t i : order) {
        const SymbolTable::Symbol* s = table.Find(addrs[i]);
        got[t][i] = s == nullptr ? "(none)" : std::string(table.Name(*s));
      }
    });
  }
  for (std::thread& t : threads) t.join();
  size_t differ = 0;
  for (size_t i = 0; i < addrs.size(); ++i) {
    const std::string& name = want.at(addrs[i]);
    for (const auto& g : got) {
      if (g[i] != name && differ++ < 5) {
        ADD_FAILURE() << std::hex << addrs[i] << ": " << g[i] << ", want " << name;
      }
    }
  }
  EXPECT_EQ(differ, 0u);
  elf_end(elf);
  ::close(fd);
}

}  // namespace
}  // namespace jitsym::native
