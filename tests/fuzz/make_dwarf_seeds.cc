// Writes the DWARF fuzz targets' seed corpora from real programs: make_dwarf_seeds DIR builds the
// differential tests' sources (tests/unit/testing/dwarf_files.h) with g++ and clang++ in every
// kind the reader reads (DWARF 2 to 5, 64-bit DWARF, LTO, type units, -gz and .zdebug
// compression, split DWARF with .dwo files and a .dwp package, dwz with a common file) and writes
// DIR/<target>/seed-<kind>-N: whole ELF files (dwarf_elf_fuzz), their sections packed as
// tests/fuzz/dwarf_fuzz.h says (dwarf_sections_fuzz), line tables (dwarf_line_fuzz), package
// indexes, unit headers, abbreviation tables, compressed sections and address range sets
// (dwarf_parts_fuzz).
// A compiler or tool that is missing skips its kinds.
#include <sys/stat.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "daemon/dwarf/elf_image.h"
#include "daemon/dwarf/sections.h"
#include "tests/unit/testing/dwarf_files.h"

namespace {

using jitsym::dwarf::SectionId;

std::string g_dir;

void Write(const std::string& target, const std::string& name, const std::string& bytes) {
  const std::string d = g_dir + "/" + target;
  ::mkdir(d.c_str(), 0755);
  const std::string path = d + "/seed-" + name;
  FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) {
    std::perror(path.c_str());
    std::exit(1);
  }
  std::fwrite(bytes.data(), 1, bytes.size(), f);
  std::fclose(f);
}

void Record(std::string* out, uint8_t file, SectionId id, std::string_view bytes) {
  out->push_back(static_cast<char>(file));
  out->push_back(static_cast<char>(id));
  for (int i = 0; i < 4; ++i) out->push_back(static_cast<char>(bytes.size() >> (8 * i)));
  out->append(bytes);
}

// Seeds of one kind: `files` are the main file, then its split file (.dwp or a .dwo) and its
// supplementary file when there are ("" for none).
void Seeds(const std::string& kind, const std::string& main, const std::string& split = "",
           const std::string& sup = "") {
  jitsym::dwarf::Budget budget(jitsym::dwarf::Budget::Unlimited());
  std::string packed(1, '\0');
  int n = 0;
  const std::string paths[3] = {main, split, sup};
  for (uint8_t file = 0; file < 3; ++file) {
    if (paths[file].empty()) continue;
    std::unique_ptr<jitsym::testing::DwarfFile> f =
        jitsym::testing::DwarfFile::Load(paths[file], budget);
    if (f->context == nullptr) continue;
    Write("dwarf_elf_fuzz", kind + "-" + std::to_string(n++), f->bytes);
    const jitsym::dwarf::Sections& s = f->sections->sections();
    for (size_t id = 0; id < jitsym::dwarf::kSectionCount; ++id) {
      if (!s.data[id].empty()) Record(&packed, file, static_cast<SectionId>(id), s.data[id]);
    }
    if (file == 0) {
      // The line tables with their strings; unit headers; the first abbreviation table.
      const std::string_view strings = s[SectionId::kLineStr].substr(0, 0xffff);
      std::string line(1, '\0');
      line.push_back(static_cast<char>(strings.size()));
      line.push_back(static_cast<char>(strings.size() >> 8));
      Write("dwarf_line_fuzz", kind,
            line + std::string(s[SectionId::kLine]) + std::string(strings));
      Write("dwarf_parts_fuzz", kind + "-units", '\x02' + std::string(s[SectionId::kInfo]));
      Write("dwarf_parts_fuzz", kind + "-abbrev", '\x04' + std::string(s[SectionId::kAbbrev]));
      if (!s[SectionId::kAranges].empty()) {
        Write("dwarf_parts_fuzz", kind + "-aranges", '\x0a' + std::string(s[SectionId::kAranges]));
      }
      // Compressed sections as they are in the file.
      jitsym::Result<jitsym::dwarf::ElfImage> image = jitsym::dwarf::ReadElfImage(f->bytes);
      for (const jitsym::dwarf::ElfSection& e : image->sections) {
        if ((e.flags & jitsym::dwarf::kShfCompressed) != 0) {
          Write("dwarf_parts_fuzz", kind + "-shf" + std::string(e.name),
                "\x12" + std::string(e.data));
        } else if (e.name.starts_with(".zdebug")) {
          Write("dwarf_parts_fuzz", kind + "-z" + std::string(e.name),
                "\x08" + std::string(e.data));
        }
      }
    } else if (!s[SectionId::kCuIndex].empty()) {
      Write("dwarf_parts_fuzz", kind + "-index", '\x00' + std::string(s[SectionId::kCuIndex]));
    }
  }
  Write("dwarf_sections_fuzz", kind, packed);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: make_dwarf_seeds DIR\n");
    return 2;
  }
  g_dir = argv[1];
  std::filesystem::create_directories(g_dir);
  jitsym::testing::TestPrograms p;
  struct Plain {
    const char* kind;
    const char* compiler;
    const char* flags;
  };
  for (const Plain& v :
       {Plain{"gcc5", "g++", "-O2 -gdwarf-5"}, Plain{"gcc4", "g++", "-O2 -gdwarf-4"},
        Plain{"gcc2", "g++", "-O0 -gdwarf-2"}, Plain{"clang5", "clang++", "-O2 -gdwarf-5"},
        Plain{"clang4", "clang++", "-O1 -gdwarf-4"}, Plain{"lto", "g++", "-O2 -g -flto"},
        Plain{"types", "g++", "-O2 -gdwarf-4 -fdebug-types-section"},
        Plain{"types5", "clang++", "-O2 -gdwarf-5 -fdebug-types-section"},
        Plain{"dwarf64", "g++", "-O2 -gdwarf-5 -gdwarf64"},
        Plain{"gz", "g++", "-O2 -g -gz=zlib"}}) {
    const std::string prog = p.Build(v.compiler, v.flags, v.kind);
    if (!prog.empty()) Seeds(v.kind, prog);
  }
  if (const std::string z = p.Build("g++", "-O2 -g", "zdebug");
      !z.empty() && p.Run("objcopy --compress-debug-sections=zlib-gnu zdebug")) {
    Seeds("zdebug", z);
  }
  // Split DWARF: the skeletons with their package, and with one .dwo.
  for (const Plain& v : {Plain{"split5", "g++", "-O2 -gsplit-dwarf -gdwarf-5"},
                         Plain{"split4", "clang++", "-O2 -gsplit-dwarf -gdwarf-4"}}) {
    const std::string prog = p.Build(v.compiler, v.flags, v.kind);
    if (prog.empty()) continue;
    std::string dwo;
    for (const auto& e : std::filesystem::directory_iterator(p.dir())) {
      if (e.path().extension() == ".dwo" && e.path().filename().string().starts_with(v.kind)) {
        dwo = e.path().string();
      }
    }
    if (!dwo.empty()) Seeds(std::string(v.kind) + "-dwo", prog, dwo);
    const std::string name = v.kind;
    if (p.Run("llvm-dwp -e " + name + " -o " + name + ".dwp"))
      Seeds(name + "-dwp", prog, prog + ".dwp");
  }
  // dwz: two programs sharing a common file.
  const std::string a = p.Build("g++", "-O2 -g", "dwz-a");
  const std::string b = p.Build("g++", "-O1 -g", "dwz-b");
  if (!a.empty() && !b.empty() && p.Run("dwz -m common.debug -M common.debug dwz-a dwz-b")) {
    Seeds("dwz", a, "", p.dir() + "/common.debug");
  }
  return 0;
}
