// The line program reader (daemon/native/line_program.h) against its oracle, libdw: on real
// binaries (this test binary, programs gcc and clang build here for DWARF 2 to 5 and LTO,
// installed debug files such as glibc's, whose sections Debian compresses) every unit it reads
// gives libdw's rows and file names, and it reads them all; hand-made programs for what it leaves
// to libdw; every truncation of a real program read or refused, never past its end.
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <libelf.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "daemon/native/line_program.h"
#include "tests/unit/testing/self_path.h"

namespace jitsym::native {
namespace {

// A row as both readers give it: the file by name.
struct NamedRow {
  uint64_t addr;
  std::string file;
  int line;
  int column;
  bool end;
  bool operator==(const NamedRow&) const = default;
};

std::ostream& operator<<(std::ostream& os, const NamedRow& r) {
  return os << std::hex << "0x" << r.addr << std::dec << " " << r.file << ":" << r.line << ":"
            << r.column << (r.end ? " end" : "");
}

struct Agreement {
  size_t units = 0;  // units with a line program
  size_t read = 0;   // read by ReadLineProgram
  size_t rows = 0;   // rows compared
  std::string first_difference;
};

// Every unit of `path`: libdw's rows and files against ReadLineProgram's.
Agreement Compare(const std::string& path) {
  Agreement a;
  elf_version(EV_CURRENT);
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return a;
  Elf* elf = elf_begin(fd, ELF_C_READ_MMAP, nullptr);
  Dwarf* dwarf = elf ? dwarf_begin_elf(elf, DWARF_C_READ, nullptr) : nullptr;
  const LineSections sections = FindLineSections(elf);
  Dwarf_CU* cu = nullptr;
  Dwarf_CU* next = nullptr;
  Dwarf_Half version;
  uint8_t unit_type;
  Dwarf_Die cudie;
  while (dwarf != nullptr &&
         dwarf_get_units(dwarf, cu, &next, &version, &unit_type, &cudie, nullptr) == 0) {
    cu = next;
    Dwarf_Attribute attr;
    Dwarf_Word offset;
    uint8_t address_size = 0;
    if (unit_type == DW_UT_skeleton || dwarf_attr(&cudie, DW_AT_stmt_list, &attr) == nullptr ||
        dwarf_formudata(&attr, &offset) != 0 ||
        dwarf_cu_info(cudie.cu, nullptr, nullptr, nullptr, nullptr, nullptr, &address_size,
                      nullptr) != 0) {
      continue;
    }
    Dwarf_Lines* lines;
    size_t nlines;
    if (dwarf_getsrclines(&cudie, &lines, &nlines) != 0) continue;
    ++a.units;
    Dwarf_Attribute comp_attr;
    const char* comp_dir =
        dwarf_attr(&cudie, DW_AT_comp_dir, &comp_attr) ? dwarf_formstring(&comp_attr) : nullptr;
    LineProgram program;
    if (!ReadLineProgram(sections, offset, address_size, comp_dir, &program)) continue;
    ++a.read;
    std::vector<NamedRow> theirs, ours;
    for (size_t i = 0; i < nlines; ++i) {
      Dwarf_Line* line = dwarf_onesrcline(lines, i);
      Dwarf_Addr addr;
      int lineno = 0, col = 0;
      bool end = false;
      dwarf_lineaddr(line, &addr);
      dwarf_lineno(line, &lineno);
      dwarf_linecol(line, &col);
      dwarf_lineendsequence(line, &end);
      const char* src = dwarf_linesrc(line, nullptr, nullptr);
      theirs.push_back({addr, src ? src : "(none)", std::max(lineno, 0), col, end});
    }
    for (const CuTables::Row& r : program.rows) {
      ours.push_back({r.addr, r.file < program.files.size() ? program.files[r.file] : "(none)",
                      static_cast<int>(r.line), static_cast<int>(r.column), r.end_sequence});
    }
    a.rows += theirs.size();
    if (ours != theirs && a.first_difference.empty()) {
      size_t i = 0;
      while (i < ours.size() && i < theirs.size() && ours[i] == theirs[i]) ++i;
      std::ostringstream os;
      os << path << " unit at " << dwarf_dieoffset(&cudie) << ": " << ours.size() << " vs "
         << theirs.size() << " rows, first difference at row " << i;
      if (i < ours.size()) os << " ours " << ours[i];
      if (i < theirs.size()) os << " libdw " << theirs[i];
      a.first_difference = os.str();
    }
    // The file table, which inlined frames' DW_AT_call_file index.
    Dwarf_Files* files;
    size_t nfiles;
    if (dwarf_getsrcfiles(&cudie, &files, &nfiles) == 0) {
      std::vector<std::string> names;
      for (size_t i = 0; i < nfiles; ++i)
        names.push_back(dwarf_filesrc(files, i, nullptr, nullptr));
      if (names != program.files && a.first_difference.empty()) {
        a.first_difference = path + ": file tables differ at unit " +
                             std::to_string(dwarf_dieoffset(&cudie)) + " (" +
                             std::to_string(program.files.size()) + " vs " +
                             std::to_string(names.size()) + " files)";
      }
    }
  }
  if (dwarf != nullptr) dwarf_end(dwarf);
  if (elf != nullptr) elf_end(elf);
  ::close(fd);
  return a;
}

class LineProgramBuilds : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/jitsym-lines-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    std::ofstream(dir_ + "/a.c") << "#include \"h.h\"\n"
                                    "static inline int sq(int x) { return x * x; }\n"
                                    "int f(int n) { int s = 0; for (int i = 0; i < n; i++)\n"
                                    "  s += sq(i) + g(i); return s; }\n"
                                    "int main(int c, char** v) { (void)v; return f(c); }\n";
    std::ofstream(dir_ + "/h.h") << "static inline int g(int x) {\n  return x > 3 ? x - 3 :\n"
                                    "    x + 1; }\n";
    std::filesystem::create_directories(dir_ + "/b");
    std::ofstream(dir_ + "/b/b.c") << "#include \"../h.h\"\nint k(int a) { return g(a) * 3; }\n";
  }
  void TearDown() override {
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }
  // Builds a.c and b/b.c (a relative path and one in another directory) into one program.
  std::string Build(const std::string& compiler, const std::string& flags) {
    const std::string out = dir_ + "/prog-" + std::to_string(count_++);
    const std::string cmd = "cd " + dir_ + " && " + compiler + " " + flags + " a.c b/b.c -o " +
                            out + " >/dev/null 2>&1";
    return std::system(cmd.c_str()) == 0 ? out : std::string();
  }
  std::string dir_;
  int count_ = 0;
};

void ExpectAgreement(const std::string& path) {
  const Agreement a = Compare(path);
  EXPECT_GT(a.units, 0u) << path << ": no line tables";
  EXPECT_EQ(a.read, a.units) << path << ": units left to libdw";
  EXPECT_TRUE(a.first_difference.empty()) << a.first_difference;
}

TEST(LineProgram, ReadsThisBinaryAsLibdwDoes) { ExpectAgreement(jitsym::testing::SelfPath()); }

TEST_F(LineProgramBuilds, GccAndClangInEveryDwarfVersion) {
  size_t built = 0;
  for (const char* compiler : {"gcc", "clang"}) {
    for (const char* flags : {"-O2 -gdwarf-5", "-O2 -gdwarf-4", "-O0 -gdwarf-3", "-O2 -gdwarf-2",
                              "-Os -gdwarf-4 -gstrict-dwarf", "-O3 -g -flto"}) {
      const std::string prog = Build(compiler, flags);
      if (prog.empty()) continue;  // clang lacks -flto's plugin on some hosts
      ++built;
      SCOPED_TRACE(std::string(compiler) + " " + flags);
      ExpectAgreement(prog);
    }
  }
  EXPECT_GE(built, 10u) << "gcc and clang are needed to build the test programs";
}

TEST(LineProgram, ReadsInstalledDebugFilesAsLibdwDoes) {
  // Two large separate debug files (libc6-dbg's, when it is installed).
  const std::string dir = "/usr/lib/debug/.build-id";
  size_t checked = 0;
  std::error_code ec;
  for (const auto& sub : std::filesystem::directory_iterator(dir, ec)) {
    for (const auto& f : std::filesystem::directory_iterator(sub.path(), ec)) {
      if (f.path().extension() != ".debug" || f.file_size(ec) < (1u << 20) || checked >= 2) {
        continue;
      }
      SCOPED_TRACE(f.path().string());
      const Agreement a = Compare(f.path().string());
      if (a.units == 0) continue;
      ++checked;
      EXPECT_EQ(a.read, a.units);
      EXPECT_TRUE(a.first_difference.empty()) << a.first_difference;
    }
  }
  if (checked == 0) GTEST_SKIP() << "no debug file of 1 MiB or more under " << dir;
}

// A DWARF 4 line program: header fields, no directories, one file "x.c", then `program`.
std::string Program4(const std::string& program, uint8_t opcode_base = 13) {
  std::string body;
  body += '\x01';                 // minimum_instruction_length
  body += '\x01';                 // maximum_operations_per_instruction
  body += '\x01';                 // default_is_stmt
  body += static_cast<char>(-5);  // line_base
  body += '\x0e';                 // line_range
  body += static_cast<char>(opcode_base);
  const uint8_t lengths[] = {0, 1, 1, 1, 1, 0, 0, 0, 1, 0, 0, 1};
  for (unsigned i = 1; i < opcode_base; ++i)
    body += static_cast<char>(i <= 12 ? lengths[i - 1] : 0);
  body += '\0';                           // no include directories
  body += std::string("x.c\0\0\0\0", 7);  // x.c, dir 0, mtime, length
  body += '\0';                           // end of files
  std::string unit;
  unit += std::string("\x04\x00", 2);  // version 4
  const uint32_t header_length = static_cast<uint32_t>(body.size());
  unit.append(reinterpret_cast<const char*>(&header_length), 4);
  unit += body + program;
  const uint32_t length = static_cast<uint32_t>(unit.size());
  return std::string(reinterpret_cast<const char*>(&length), 4) + unit;
}

std::string SetAddress(uint64_t addr) {
  return std::string("\x00\x09\x02", 3) + std::string(reinterpret_cast<const char*>(&addr), 8);
}
const std::string kEndSequence("\x00\x01\x01", 3);

TEST(LineProgram, HandMadeProgram) {
  // Address 0x1000 line 1, a special opcode (+2 bytes, +1 line), column 7 then copy, advance
  // the pc, end the sequence.
  const std::string special(1, static_cast<char>(13 + (1 + 5) + 14 * 2));
  const std::string line = Program4(SetAddress(0x1000) + std::string("\x01", 1) + special +
                                    std::string("\x05\x07\x01\x02\x04", 5) + kEndSequence);
  LineSections s;
  s.line = line;
  LineProgram p;
  ASSERT_TRUE(ReadLineProgram(s, 0, 8, "/src", &p));
  ASSERT_EQ(p.files.size(), 2u);
  EXPECT_EQ(p.files[0], "???");
  EXPECT_EQ(p.files[1], "/src/x.c");
  ASSERT_EQ(p.rows.size(), 4u);
  EXPECT_EQ(p.rows[0].addr, 0x1000u);
  EXPECT_EQ(p.rows[0].line, 1u);
  EXPECT_EQ(p.rows[1].addr, 0x1002u);
  EXPECT_EQ(p.rows[1].line, 2u);
  EXPECT_EQ(p.rows[2].column, 7u);
  EXPECT_EQ(p.rows[3].addr, 0x1006u);
  EXPECT_TRUE(p.rows[3].end_sequence);
  EXPECT_EQ(p.rows[3].file, 1u);
  // Without DW_AT_comp_dir, a name relative to directory 0 stays relative, as libdw leaves it.
  ASSERT_TRUE(ReadLineProgram(s, 0, 8, nullptr, &p));
  EXPECT_EQ(p.files[1], "x.c");
}

TEST(LineProgram, SequencesInAddressOrderAndTheLastRowEnded) {
  // Two sequences, the later one first; the second does not end (compilers that forget): rows
  // by address, an end row before a row at its address, the highest row marked as an end.
  const std::string line =
      Program4(SetAddress(0x2000) + std::string("\x01\x02\x04", 3) + kEndSequence +
               SetAddress(0x1000) + std::string("\x01\x02\x04\x01\x02\x04\x01", 7));
  LineSections s;
  s.line = line;
  LineProgram p;
  ASSERT_TRUE(ReadLineProgram(s, 0, 8, "/src", &p));
  std::vector<std::pair<uint64_t, bool>> got;
  for (const CuTables::Row& r : p.rows) got.emplace_back(r.addr, r.end_sequence);
  EXPECT_EQ(
      got,
      (std::vector<std::pair<uint64_t, bool>>{
          {0x1000, false}, {0x1004, false}, {0x1008, false}, {0x2000, false}, {0x2004, true}}));
}

TEST(LineProgram, LeavesToLibdwWhatLibdwReadsItsOwnWay) {
  LineSections s;
  LineProgram p;
  auto reads = [&](const std::string& program) {
    const std::string line = Program4(SetAddress(0x1000) + program + kEndSequence);
    s.line = line;
    return ReadLineProgram(s, 0, 8, "/src", &p);
  };
  EXPECT_TRUE(reads(""));
  // DW_LNE_define_file.
  EXPECT_FALSE(reads(std::string("\x00\x06\x03y.c\x00\x00", 7)));
  // An extended opcode whose length takes two LEB128 bytes (libdw reads one byte).
  EXPECT_FALSE(reads(std::string("\x00\x81\x01\x80", 4) + std::string(128, '\0')));
  // A column past 16 bits, then a row.
  EXPECT_FALSE(reads(std::string("\x05\x80\x80\x04\x01", 5)));
  // A set_file operand past 32 bits.
  EXPECT_FALSE(reads(std::string("\x04\x80\x80\x80\x80\x10\x01", 7)));
  // An unknown extended opcode.
  EXPECT_FALSE(reads(std::string("\x00\x02\x99\x00", 4)));
  // A DW_LNE_set_address whose length is not the address size's.
  EXPECT_FALSE(reads(std::string("\x00\x05\x02\x00\x00\x00\x00", 7)));
  // Out of the section, or a version libdw does not read.
  s.line = Program4("");
  EXPECT_FALSE(ReadLineProgram(s, s.line.size(), 8, "/src", &p));
  std::string v6 = Program4("");
  v6[4] = 6;
  s.line = v6;
  EXPECT_FALSE(ReadLineProgram(s, 0, 8, "/src", &p));
}

TEST(LineProgram, EveryTruncationOfARealProgramStaysInside) {
  // This binary's first line program, cut short at every length (up to 4,096 cuts spread over
  // it) with its length field left lying: refused, never read past the cut (ASan watches the
  // build that runs this); whole, read.
  const int fd = ::open(jitsym::testing::SelfPath().c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  elf_version(EV_CURRENT);
  Elf* elf = elf_begin(fd, ELF_C_READ_MMAP, nullptr);
  Dwarf* dwarf = dwarf_begin_elf(elf, DWARF_C_READ, nullptr);
  ASSERT_NE(dwarf, nullptr);
  const LineSections whole = FindLineSections(elf);
  ASSERT_GE(whole.line.size(), 4u);
  uint32_t length;
  std::memcpy(&length, whole.line.data(), 4);
  ASSERT_LT(length, 0xfffffff0u) << "a 32-bit DWARF unit";
  const size_t unit = 4 + size_t{length};
  ASSERT_LE(unit, whole.line.size());
  LineProgram p;
  auto reads = [&](size_t cut) {
    const std::string copy(whole.line.substr(0, cut));  // its own allocation: ASan sees the end
    LineSections s = whole;
    s.line = copy;
    return ReadLineProgram(s, 0, 8, "/src", &p);
  };
  const size_t step = std::max<size_t>(1, unit / 4096);
  size_t read = 0;
  for (size_t cut = 0; cut < unit; cut += step) read += reads(cut) ? 1 : 0;
  EXPECT_EQ(read, 0u) << "a program cut short was read";
  EXPECT_TRUE(reads(unit)) << "the whole first program of this binary";
  dwarf_end(dwarf);
  elf_end(elf);
  ::close(fd);
}

}  // namespace
}  // namespace jitsym::native
