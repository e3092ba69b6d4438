// The path of the running test binary: an ELF file with DWARF that tests symbolize.
#ifndef JITSYM_TESTS_UNIT_TESTING_SELF_PATH_H_
#define JITSYM_TESTS_UNIT_TESTING_SELF_PATH_H_

#include <unistd.h>

#include <string>

namespace jitsym::testing {

inline std::string SelfPath() {
  char buf[4096];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
}

}  // namespace jitsym::testing

#endif  // JITSYM_TESTS_UNIT_TESTING_SELF_PATH_H_
