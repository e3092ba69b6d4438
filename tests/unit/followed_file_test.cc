// The followed file's read loop on an anonymous in-memory file (memfd_create: no filesystem):
// bytes reach the source in order, a turn stops at its budget and the next goes on where it
// stopped, the owner's byte limit stops the file, and a rewrite (truncated, or rewritten in
// place to the same size) is noticed before anything more is fed.
#include "daemon/ingest/followed_file.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <string>
#include <vector>

namespace jitsym::ingest {
namespace {

class RecordingSource : public Source {
 public:
  RecordingSource() : Source("/tmp/perf-1.map") {}
  Origin origin() const override { return Origin::kPerfmap; }
  void Feed(std::span<const uint8_t> data) override { fed.append(data.begin(), data.end()); }
  std::string fed;
};

struct MemFile {
  int fd = ::memfd_create("followed_file_test", 0);
  ~MemFile() { ::close(fd); }
  void Write(const std::string& bytes, off_t at) {
    ASSERT_EQ(::pwrite(fd, bytes.data(), bytes.size(), at), static_cast<ssize_t>(bytes.size()));
  }
  void Truncate(off_t size) { ASSERT_EQ(::ftruncate(fd, size), 0); }
};

struct Reader {
  security::LimitLedger ledger;
  std::vector<uint8_t> buffer = std::vector<uint8_t>(4);  // small reads: several per turn
  uint64_t ingested = 0;
  FollowedFile file;
  RecordingSource* source;
  explicit Reader(int fd, security::Limits limits = {}) : ledger(limits) {
    auto src = std::make_unique<RecordingSource>();
    source = src.get();
    file.source = std::move(src);
    file.fd = fd;
    file.path = "/tmp/perf-1.map";
    file.uid = 1000;
  }
  ReadStop Turn(size_t budget) {
    ReadTurn turn{ledger, buffer, budget, &ingested};
    uint64_t size = 0;
    return ReadNew(file, turn, &size);
  }
};

TEST(FollowedFile, ReadsInOrderWithinTheTurnsBudget) {
  MemFile m;
  ASSERT_GE(m.fd, 0);
  m.Write("0123456789", 0);
  Reader r(m.fd);
  EXPECT_EQ(r.Turn(6), ReadStop::kBudget);
  EXPECT_EQ(r.source->fed, "012345");
  EXPECT_EQ(r.Turn(6), ReadStop::kCaughtUp);
  EXPECT_EQ(r.source->fed, "0123456789");
  EXPECT_EQ(r.file.offset, 10u);
  EXPECT_EQ(r.ingested, 10u);
  EXPECT_EQ(r.file.charged, 10u);
  m.Write("abc", 10);  // appended
  EXPECT_EQ(r.Turn(100), ReadStop::kCaughtUp);
  EXPECT_EQ(r.source->fed, "0123456789abc");
}

TEST(FollowedFile, TheOwnersByteLimitStopsTheFile) {
  MemFile m;
  m.Write("0123456789", 0);
  security::Limits limits;
  limits.user_bytes = 8;
  Reader r(m.fd, limits);
  EXPECT_EQ(r.Turn(100), ReadStop::kLimit);
  EXPECT_EQ(r.source->fed, "01234567");
}

TEST(FollowedFile, TruncationIsARewrite) {
  MemFile m;
  m.Write("0123456789", 0);
  Reader r(m.fd);
  r.Turn(100);
  m.Truncate(4);
  EXPECT_EQ(r.Turn(100), ReadStop::kRewritten);
  EXPECT_EQ(r.source->fed, "0123456789");  // nothing more fed
}

TEST(FollowedFile, RewrittenInPlaceToTheSameSizeIsNoticed) {
  MemFile m;
  m.Write("0123456789", 0);
  Reader r(m.fd);
  r.Turn(100);
  EXPECT_EQ(r.Turn(100), ReadStop::kCaughtUp);  // looked again: unchanged
  m.Write("X", 0);                              // the first bytes differ now
  EXPECT_EQ(r.Turn(100), ReadStop::kRewritten);
  EXPECT_TRUE(Rewritten(r.file, m.fd, 10));
}

TEST(FollowedFile, RewrittenPastWhatWasReadIsNoticedByItsLastBytes) {
  MemFile m;
  m.Write("0123456789", 0);
  Reader r(m.fd);
  r.Turn(100);
  m.Write("zz", 8);     // the last bytes read changed ...
  m.Write("more", 10);  // ... and it grew
  EXPECT_EQ(r.Turn(100), ReadStop::kRewritten);
}

}  // namespace
}  // namespace jitsym::ingest
