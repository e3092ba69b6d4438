// Every debug section of real programs (gcc and clang, DWARF 4 and 5) cut short at every length
// (up to 2,048 cuts spread over each), the cut copy placed right before an unmapped page: the
// reader refuses or reads less, never a byte past the cut (a read there faults, in any build),
// and never misuses itself (no kUsage error). Whole, every unit reads without an error.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <string>

#include "daemon/dwarf/context.h"
#include "daemon/dwarf/unit.h"
#include "daemon/dwarf/unit_symbols.h"
#include "tests/unit/testing/dwarf_files.h"

namespace jitsym::dwarf {
namespace {

// `bytes` copied to the end of a mapping whose next page is unmapped.
class GuardedCopy {
 public:
  explicit GuardedCopy(std::string_view bytes) {
    const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
    const size_t data_pages = (bytes.size() + page - 1) / page;
    size_ = (data_pages + 1) * page;
    base_ = static_cast<char*>(
        ::mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    if (base_ == MAP_FAILED) std::abort();
    ::mprotect(base_ + data_pages * page, page, PROT_NONE);
    char* at = base_ + data_pages * page - bytes.size();
    std::memcpy(at, bytes.data(), bytes.size());
    view_ = std::string_view(at, bytes.size());
  }
  ~GuardedCopy() { ::munmap(base_, size_); }
  std::string_view view() const { return view_; }

 private:
  char* base_;
  size_t size_;
  std::string_view view_;
};

struct Outcome {
  size_t units = 0, failed = 0, misuse = 0;
  std::string misuse_message;
};

// Everything symbolization reads: every unit opened, its tree and line table.
Outcome ReadEverything(const Sections& s) {
  Outcome o;
  Context ctx(s);
  Budget budget(Budget::Unlimited());
  auto note = [&o](const Error& e) {
    ++o.failed;
    if (e.kind == ErrorKind::kUsage) {
      ++o.misuse;
      o.misuse_message = e.message;
    }
  };
  for (const UnitHeader& h : ctx.units()) {
    ++o.units;
    Result<Unit> u = Unit::Open(ctx, h, budget);
    if (!u) {
      note(u.error());
      continue;
    }
    Result<UnitSymbols> r = ReadUnitSymbols(*u, budget);
    if (!r) {
      note(r.error());
      continue;
    }
    for (const Error& e : r->notes) note(e);
  }
  return o;
}

void CutEverySection(const std::string& program) {
  ASSERT_FALSE(program.empty());
  std::unique_ptr<testing::DwarfModule> m = testing::DwarfModule::Load(program, false);
  ASSERT_NE(m->main->context, nullptr) << m->main->error;
  const Sections whole = m->main->sections->sections();
  const Outcome all = ReadEverything(whole);
  EXPECT_GT(all.units, 0u);
  EXPECT_EQ(all.failed, 0u) << program;
  size_t cuts = 0;
  for (size_t id = 0; id < kSectionCount; ++id) {
    const std::string_view section = whole.data[id];
    if (section.empty()) continue;
    SCOPED_TRACE(std::string(SectionName(static_cast<SectionId>(id))));
    const size_t step = std::max<size_t>(1, section.size() / 2048);
    for (size_t cut = 0; cut < section.size(); cut += step) {
      GuardedCopy copy(section.substr(0, cut));
      Sections s = whole;
      s.data[id] = copy.view();
      const Outcome o = ReadEverything(s);
      ++cuts;
      ASSERT_EQ(o.misuse, 0u) << "cut at " << cut << ": " << o.misuse_message;
    }
  }
  EXPECT_GT(cuts, 1000u);
}

class DwarfTruncation : public ::testing::Test {
 protected:
  testing::TestPrograms programs_;
};

TEST_F(DwarfTruncation, GccDwarf5) { CutEverySection(programs_.Build("g++", "-O2 -gdwarf-5")); }
TEST_F(DwarfTruncation, GccDwarf4) { CutEverySection(programs_.Build("g++", "-O2 -gdwarf-4")); }
TEST_F(DwarfTruncation, ClangDwarf5) {
  CutEverySection(programs_.Build("clang++", "-O2 -gdwarf-5"));
}
TEST_F(DwarfTruncation, GccTypeUnits) {
  CutEverySection(programs_.Build("g++", "-O2 -gdwarf-4 -fdebug-types-section"));
}

}  // namespace
}  // namespace jitsym::dwarf
