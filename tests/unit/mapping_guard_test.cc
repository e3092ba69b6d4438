#include "daemon/native/mapping_guard.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "daemon/native/elf_file.h"
#include "tests/unit/testing/self_path.h"

namespace jitsym::native {
namespace {

// A file of `pages` pages of 'x', mapped whole; removed with the fixture.
class MappedFile : public ::testing::Test {
 protected:
  void Map(size_t pages) {
    page_ = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
    char name[] = "/tmp/jitsym-guard-XXXXXX";
    fd_ = ::mkstemp(name);
    ASSERT_GE(fd_, 0);
    path_ = name;
    size_ = pages * page_;
    const std::string bytes(size_, 'x');
    ASSERT_EQ(::write(fd_, bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
    void* p = ::mmap(nullptr, size_, PROT_READ, MAP_SHARED, fd_, 0);
    ASSERT_NE(p, MAP_FAILED);
    map_ = static_cast<const volatile char*>(p);
  }
  void TearDown() override {
    if (map_ != nullptr) ::munmap(const_cast<char*>(map_), size_);
    if (fd_ >= 0) ::close(fd_);
    if (!path_.empty()) ::unlink(path_.c_str());
  }

  size_t page_ = 0;
  int fd_ = -1;
  std::string path_;
  size_t size_ = 0;
  const volatile char* map_ = nullptr;
};

TEST_F(MappedFile, PagesPastTheNewEndReadAsZerosAndTheRestStays) {
  Map(3);
  MappingGuard guard = MappingGuard::Register(const_cast<char*>(map_), size_, path_);
  ASSERT_TRUE(guard.registered());
  EXPECT_EQ(map_[0], 'x');
  ::testing::internal::CaptureStderr();
  ASSERT_EQ(::ftruncate(fd_, static_cast<off_t>(page_)), 0);
  EXPECT_EQ(map_[2 * page_ + 5], 0);  // without the guard: SIGBUS
  EXPECT_EQ(map_[page_], 0);
  EXPECT_EQ(map_[page_ + 1], 0);  // the same replaced page: no second fault
  EXPECT_EQ(map_[10], 'x');       // inside the file as it is now
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(guard.faults(), 2u);
  // One line, for the first fault, naming the file and where it now ends.
  EXPECT_EQ(log, "jitsymd: warning: native: " + path_ + ": shrank while mapped: from offset " +
                     std::to_string(2 * page_) +
                     " on, it reads as zeros; answers from it may be wrong until it is opened "
                     "again\n");
}

TEST_F(MappedFile, AMovedGuardStillGuardsAndAReleasedOneNoLonger) {
  Map(2);
  MappingGuard first = MappingGuard::Register(const_cast<char*>(map_), size_, path_);
  MappingGuard moved = std::move(first);
  EXPECT_FALSE(first.registered());  // NOLINT(bugprone-use-after-move): what a move leaves
  ASSERT_TRUE(moved.registered());
  ASSERT_EQ(::ftruncate(fd_, 0), 0);
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(map_[page_], 0);
  ::testing::internal::GetCapturedStderr();
  moved.Release();
  EXPECT_FALSE(moved.registered());
  // Unguarded, a read past the end is the fault it always was: SIGBUS's default action, or the
  // handler that was there before the guard's (under AddressSanitizer, its report).
  EXPECT_DEATH(static_cast<void>(map_[0]), "");
}

TEST(MappingGuard, EmptyRangesAreNotGuarded) {
  EXPECT_FALSE(MappingGuard::Register(nullptr, 4096, "x").registered());
  char byte = 0;
  EXPECT_FALSE(MappingGuard::Register(&byte, 0, "x").registered());
}

TEST(MappingGuard, WithEverySlotTakenOpenElfReadsACopy) {
  InitElf();
  const std::string self = jitsym::testing::SelfPath();
  OpenedElf mapped = OpenElf(self, nullptr, ElfRead::kMap);
  ASSERT_NE(mapped.elf, nullptr);
  EXPECT_TRUE(mapped.guard.registered());
  mapped.Close();
  char byte = 0;
  std::vector<MappingGuard> all;
  for (MappingGuard g; (g = MappingGuard::Register(&byte, 1, "x")).registered();) {
    all.push_back(std::move(g));
  }
  EXPECT_GE(all.size(), static_cast<size_t>(MappingGuard::kSlots) - 8);  // a few may be in use
  std::string error;
  OpenedElf copied = OpenElf(self, &error, ElfRead::kMap);
  ASSERT_NE(copied.elf, nullptr) << error;  // still open: read into memory instead
  EXPECT_FALSE(copied.guard.registered());
  EXPECT_TRUE(HasDwarf(copied.elf));
  copied.Close();
  all.clear();
  OpenedElf again = OpenElf(self, nullptr, ElfRead::kMap);
  EXPECT_TRUE(again.guard.registered());  // released slots are taken again
  again.Close();
}

}  // namespace
}  // namespace jitsym::native
