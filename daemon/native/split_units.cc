// Finding a skeleton unit's split unit through libdw, checked first (split_units.h).
#include "daemon/native/split_units.h"

#include <dwarf.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>

#include "daemon/native/dwp_package.h"

namespace jitsym::native {
namespace {

// A .dwo larger than this is not handed to libdw (which maps it whole).
constexpr uint64_t kMaxDwoBytes = uint64_t{4} << 30;

std::string Join(std::string_view dir, std::string_view name) {
  std::string out(dir);
  if (!out.empty() && out.back() != '/') out.push_back('/');
  out.append(name);
  return out;
}

const char* AttrString(Dwarf_Die* die, unsigned name) {
  Dwarf_Attribute attr;
  if (dwarf_attr(die, name, &attr) == nullptr) return nullptr;
  return dwarf_formstring(&attr);
}

// What is at a candidate path, as libdw's open() would see it (symbolic links followed).
enum class Found { kAbsent, kRegular, kRefused };
Found Inspect(const std::string& path, std::string* why) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return Found::kAbsent;  // libdw's open fails the same way
  if (!S_ISREG(st.st_mode)) {
    *why = path + " is not a regular file: not read";
    return Found::kRefused;
  }
  if (st.st_size == 0 || static_cast<uint64_t>(st.st_size) > kMaxDwoBytes) {
    *why = path + ": " + std::to_string(st.st_size) + " bytes: not read";
    return Found::kRefused;
  }
  return Found::kRegular;
}

}  // namespace

std::vector<std::string> DwoCandidates(std::string_view skeleton_dir, std::string_view comp_dir,
                                       std::string_view dwo_name) {
  std::vector<std::string> out;
  if (dwo_name.empty()) return out;
  auto add = [&out](std::string path) {
    for (const std::string& p : out) {
      if (p == path) return;
    }
    out.push_back(std::move(path));
  };
  if (dwo_name.front() == '/') {
    add(std::string(dwo_name));
    return out;
  }
  if (!skeleton_dir.empty()) add(Join(skeleton_dir, dwo_name));
  if (!comp_dir.empty()) {
    if (comp_dir.front() == '/') {
      add(Join(comp_dir, dwo_name));
    } else if (!skeleton_dir.empty()) {
      add(Join(Join(skeleton_dir, comp_dir), dwo_name));
    }
  }
  return out;
}

std::string DirectoryOfFd(int fd) {
  if (fd < 0) return {};
  char link[64];
  std::snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
  char* real = ::realpath(link, nullptr);
  if (real == nullptr) return {};
  std::string path(real);
  ::free(real);
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return {};
  return path.substr(0, slash + 1);
}

SplitUnit FindSplitUnit(Dwarf_Die* skeleton, const std::string& file,
                        const std::string& skeleton_dir, DwpPackage* dwp) {
  SplitUnit out;
  const char* dwo_name = AttrString(skeleton, DW_AT_dwo_name);
  if (dwo_name == nullptr) dwo_name = AttrString(skeleton, DW_AT_GNU_dwo_name);
  const char* comp_dir = AttrString(skeleton, DW_AT_comp_dir);
  const char* source = AttrString(skeleton, DW_AT_name);
  uint64_t dwo_id = 0;
  dwarf_cu_info(skeleton->cu, nullptr, nullptr, nullptr, nullptr, &dwo_id, nullptr, nullptr);
  char id_text[32];
  std::snprintf(id_text, sizeof(id_text), "0x%016" PRIx64, dwo_id);
  const std::string what = source != nullptr && source[0] != '\0'
                               ? std::string("the split DWARF of ") + source + ", dwo id " + id_text
                               : std::string("dwo id ") + id_text;
  if (dwo_name == nullptr || dwo_name[0] == '\0') {
    out.missing = file + ": a skeleton unit without DW_AT_dwo_name (" + what + ")";
    return out;
  }
  const std::vector<std::string> candidates =
      DwoCandidates(skeleton_dir, comp_dir != nullptr ? comp_dir : "", dwo_name);
  bool any_regular = false;  // outside the package's directory
  for (const std::string& c : candidates) {
    // The package's directory holds only what WriteUnit wrote (or is writing, for another
    // handle: not looked at here, WriteUnit waits for it).
    if (dwp != nullptr && c.starts_with(dwp->dir())) continue;
    std::string why;
    const Found f = Inspect(c, &why);
    if (f == Found::kRefused) {
      // libdw would open it: never let it.
      out.missing = why + " (" + what + ")";
      return out;
    }
    any_regular = any_regular || f == Found::kRegular;
  }
  std::string dwp_error;
  if (dwp != nullptr) {
    // libdw tries <skeleton_dir>/<dwo_name> first: the unit from the package goes there, and
    // wins over a .dwo, as in llvm-symbolizer (a package is made from the build's .dwo files;
    // those left behind may be older).
    any_regular = dwp->WriteUnit(dwo_id, dwo_name, &dwp_error) || any_regular;
  }
  if (any_regular) {
    Dwarf_Die split;
    if (dwarf_cu_info(skeleton->cu, nullptr, nullptr, nullptr, &split, nullptr, nullptr, nullptr) ==
            0 &&
        split.addr != nullptr && dwarf_tag(&split) == DW_TAG_compile_unit) {
      out.found = true;
      out.die = split;
      return out;
    }
  }
  // Named as a person would look for it: where comp_dir says, then the other places tried
  // (not the package's private directory: the package is named instead).
  std::string names;
  for (size_t i = candidates.size(); i-- > 0;) {
    if (dwp != nullptr && candidates[i].starts_with(dwp->dir())) continue;
    if (!names.empty()) names += " nor ";
    names += candidates[i];
  }
  if (candidates.empty()) names = dwo_name;
  out.missing = (any_regular ? "no split unit with the skeleton's dwo id in " : "no ") + names;
  if (dwp != nullptr) {
    out.missing += " nor " + dwp->path();
    if (!dwp_error.empty()) out.missing += " (" + dwp_error + ")";
  } else {
    struct stat st {};
    out.missing += " nor " + file + ".dwp";
    if (::stat((file + ".dwp").c_str(), &st) == 0) out.missing += " (unreadable: see the log)";
  }
  out.missing += " (" + what + ")";
  return out;
}

}  // namespace jitsym::native
