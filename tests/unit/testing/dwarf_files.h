// Test support for daemon/dwarf/: files read into memory and made Contexts of (the library reads
// no file), with their split units (.dwo files, a .dwp package) and supplementary file (dwz)
// found the simple way a test may, and test programs compiled for the differential tests.
#ifndef JITSYM_TESTS_UNIT_TESTING_DWARF_FILES_H_
#define JITSYM_TESTS_UNIT_TESTING_DWARF_FILES_H_

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "daemon/dwarf/budget.h"
#include "daemon/dwarf/context.h"
#include "daemon/dwarf/elf_image.h"
#include "daemon/dwarf/sections.h"

namespace jitsym::testing {

inline std::string ReadWholeFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// One file: its bytes, sections (inflated) and Context.
struct DwarfFile {
  std::string path;
  std::string bytes;
  std::unique_ptr<dwarf::LoadedSections> sections;
  std::unique_ptr<dwarf::Context> context;
  std::string error;  // why it could not be made

  static std::unique_ptr<DwarfFile> Load(const std::string& path, dwarf::Budget& budget) {
    auto f = std::make_unique<DwarfFile>();
    f->path = path;
    f->bytes = ReadWholeFile(path);
    Result<dwarf::ElfImage> image = dwarf::ReadElfImage(f->bytes);
    if (!image) {
      f->error = image.error().message;
      return f;
    }
    Result<dwarf::LoadedSections> s = dwarf::LoadSections(*image, budget);
    if (!s) {
      f->error = s.error().message;
      return f;
    }
    f->sections = std::make_unique<dwarf::LoadedSections>(std::move(*s));
    f->context = std::make_unique<dwarf::Context>(f->sections->sections());
    return f;
  }
};

// A main file with what it links to: its supplementary file (dwz), its package (<file>.dwp) and
// .dwo files by path (found, as a test may, at <comp_dir>/<dwo_name>).
struct DwarfModule {
  dwarf::Budget budget{dwarf::Budget::Unlimited()};
  std::unique_ptr<DwarfFile> main, sup, dwp;
  std::map<std::string, std::unique_ptr<DwarfFile>> dwo;

  // `use_dwp`: read split units from <path>.dwp when there is one (else from .dwo files).
  static std::unique_ptr<DwarfModule> Load(const std::string& path, bool use_dwp = true) {
    auto m = std::make_unique<DwarfModule>();
    m->main = DwarfFile::Load(path, m->budget);
    if (m->main->context == nullptr) return m;
    Result<std::optional<dwarf::SupplementaryLink>> link =
        dwarf::ReadSupplementaryLink(m->main->sections->sections());
    if (link && *link) {
      std::filesystem::path name((*link)->name);
      if (name.is_relative()) name = std::filesystem::path(path).parent_path() / name;
      m->sup = DwarfFile::Load(name.string(), m->budget);
      if (m->sup->context != nullptr) m->main->context->set_supplementary(m->sup->context.get());
    }
    if (use_dwp && std::filesystem::exists(path + ".dwp")) {
      m->dwp = DwarfFile::Load(path + ".dwp", m->budget);
    }
    return m;
  }

  // The context a skeleton's split unit is in: the package, or the .dwo at comp_dir/dwo_name.
  const dwarf::Context* SplitContext(std::string_view comp_dir, std::string_view dwo_name) {
    if (dwp != nullptr) return dwp->context.get();
    std::filesystem::path p(dwo_name);
    if (p.is_relative()) p = std::filesystem::path(comp_dir) / p;
    auto [it, fresh] = dwo.try_emplace(p.string());
    if (fresh) it->second = DwarfFile::Load(p.string(), budget);
    return it->second->context.get();
  }
};

// Builds test programs from a few C++ sources in a directory of their own (removed after).
class TestPrograms {
 public:
  TestPrograms();
  ~TestPrograms();
  const std::string& dir() const { return dir_; }
  // Compiles the sources with `compiler` and `flags` (run in dir()); the program's path, or ""
  // when the compiler refuses (then the caller skips that variant).
  std::string Build(const std::string& compiler, const std::string& flags,
                    const std::string& name = "");
  // Runs a shell command in dir(); true when it succeeds.
  bool Run(const std::string& command);

 private:
  std::string dir_;
  int count_ = 0;
};

inline TestPrograms::TestPrograms() {
  char tmpl[] = "/tmp/jitsym-dwarf-XXXXXX";
  if (::mkdtemp(tmpl) == nullptr) std::abort();
  dir_ = tmpl;
  std::ofstream(dir_ + "/h.h") << R"(namespace ns {
template <typename T> struct Box {
  T v;
  __attribute__((always_inline)) inline T get() const { return v * 2 + 1; }
  T twice() const;
};
template <typename T> T Box<T>::twice() const { return get() + get(); }
static inline int g(int x) {
  return x > 3 ? x - 3 :
      x + 1; }
struct Widget {
  int n;
  explicit Widget(int k);
  int Work(int x);
  static int Count();
};
}  // namespace ns
)";
  std::ofstream(dir_ + "/a.cc") << R"(#include "h.h"
namespace ns {
Widget::Widget(int k) : n(k) {}
int Widget::Work(int x) {
  auto f = [this](int y) { return y * n + g(y); };
  int s = 0;
  for (int i = 0; i < x; ++i) s += f(i);
  return s;
}
int Widget::Count() { return 7; }
}  // namespace ns
static inline int sq(int x) { return x * x; }
int f(int n) { int s = 0; for (int i = 0; i < n; i++) s += sq(i) + ns::g(i); return s; }
int k(int);
int main(int c, char** v) {
  (void)v;
  ns::Box<int> b{c};
  ns::Widget w(c);
  return f(c) + b.twice() + w.Work(c) + k(c) + ns::Widget::Count();
}
)";
  std::filesystem::create_directories(dir_ + "/b");
  std::ofstream(dir_ + "/b/b.cc") << R"(#include "../h.h"
int k(int a) {
  ns::Box<long> b{a};
  return static_cast<int>(b.twice()) + ns::g(a) * 3;
}
)";
}

inline TestPrograms::~TestPrograms() {
  if (!dir_.empty() && std::getenv("JITSYM_KEEP_DWARF_TESTS") == nullptr) {
    std::filesystem::remove_all(dir_);
  }
}

inline bool TestPrograms::Run(const std::string& command) {
  const std::string cmd = "cd " + dir_ + " && " + command + " >/dev/null 2>&1";
  return std::system(cmd.c_str()) == 0;
}

inline std::string TestPrograms::Build(const std::string& compiler, const std::string& flags,
                                       const std::string& name) {
  const std::string out = dir_ + "/" + (name.empty() ? "prog-" + std::to_string(count_++) : name);
  return Run(compiler + " " + flags + " a.cc b/b.cc -o " + out) ? out : std::string();
}

}  // namespace jitsym::testing

#endif  // JITSYM_TESTS_UNIT_TESTING_DWARF_FILES_H_
