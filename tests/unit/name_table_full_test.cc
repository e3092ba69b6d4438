// A file with more distinct names than the name table holds (about 1.1 GiB; lowered here to
// three arena blocks) stops that file with an error and keeps what was read before it, in every
// format; the table's std::length_error never leaves Source::Feed (it would end the daemon, and
// again at every start while the file is there).
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "daemon/index/name_table.h"
#include "daemon/ingest/jitdump_source.h"
#include "daemon/ingest/mlpd_source.h"
#include "daemon/ingest/perfmap_source.h"
#include "daemon/ingest/r2rmap_source.h"
#include "tests/unit/testing/jitdump_builder.h"
#include "tests/unit/testing/mlpd_builder.h"

namespace jitsym::ingest {
namespace {

using index::NameTable;

constexpr int kNames = 6;  // three fill the table, the fourth does not fit
constexpr int kBlocks = 3;

// Distinct names of the maximum length: each takes an arena block of its own.
std::string Name(int i) {
  std::string name(NameTable::kMaxNameLength, 'a' + i);
  name[0] = 'N';
  return name;
}

std::vector<uint8_t> Bytes(const std::string& s) { return {s.begin(), s.end()}; }

void FeedAndCheck(Source& source, const std::vector<uint8_t>& bytes, uint64_t first_addr,
                  uint64_t stride) {
  source.code().names_for_testing().set_max_blocks_for_testing(kBlocks);
  ASSERT_NO_THROW(source.Feed(bytes));
  ASSERT_TRUE(source.failed());
  EXPECT_NE(source.error().find("name table full"), std::string::npos) << source.error();
  // Feeding a failed source does nothing (the ingester stops reading it).
  ASSERT_NO_THROW(source.Feed(bytes));
  auto snapshot = source.code().Publish();
  for (int i = 0; i < kBlocks; ++i) {
    auto sym = snapshot->Find(first_addr + i * stride, std::nullopt);
    ASSERT_TRUE(sym) << i;
    EXPECT_EQ(sym->name, Name(i)) << i;
  }
  EXPECT_FALSE(snapshot->Find(first_addr + kBlocks * stride, std::nullopt));
}

TEST(NameTableFullTest, PerfMap) {
  std::string text;
  for (int i = 0; i < kNames; ++i) text += std::to_string(1000 * (i + 1)) + " 10 " + Name(i) + "\n";
  PerfmapSource source("/tmp/perf-1.map", SourceContext{}, [] { return uint64_t{1}; });
  FeedAndCheck(source, Bytes(text), 0x1000, 0x1000);
}

TEST(NameTableFullTest, Jitdump) {
  testing::JitdumpBuilder b;
  for (int i = 0; i < kNames; ++i) b.Load(100 + i, 0x1000 * (i + 1), 16, Name(i), i);
  JitdumpSource source("/tmp/jit-1.dump");
  FeedAndCheck(source, b.bytes(), 0x1000, 0x1000);
}

TEST(NameTableFullTest, R2rmap) {
  std::string text =
      "FFFFFFFF 00 0123456789ABCDEF0123456789abcdef\nFFFFFFFE 00 1\nFFFFFFFD 00 2\n"
      "FFFFFFFC 00 3\nFFFFFFFB 00 1\n";
  for (int i = 0; i < kNames; ++i) text += std::to_string(1000 * (i + 1)) + " 10 " + Name(i) + "\n";
  R2rmapSource source("/tmp/X.ni.r2rmap", "");
  FeedAndCheck(source, Bytes(text), 0x1000, 0x1000);
}

TEST(NameTableFullTest, Mlpd) {
  using testing::MlpdBuilder;
  testing::MlpdBuffer buf(MlpdBuilder::kStartupNs + 10, 0x7000000);
  for (int i = 0; i < kNames; ++i) {
    buf.Jit(MlpdBuilder::kStartupNs + 20 + i, 0x5000010 + i * 0x10, 0x7001000 + i * 0x1000, 0x40,
            Name(i));
  }
  MlpdBuilder b;
  b.Add(buf);
  MlpdSource source("/tmp/x.mlpd");
  FeedAndCheck(source, b.bytes(), 0x7001000, 0x1000);
}

}  // namespace
}  // namespace jitsym::ingest
