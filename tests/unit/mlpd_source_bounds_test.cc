// What an .mlpd makes MlpdSource keep besides the index: the images the process loaded. A file
// of image-load events (six bytes each) must not make the daemon hold eight times its size, nor
// a name of megabytes in full.
#include <gtest/gtest.h>

#include <string>

#include "daemon/index/name_table.h"
#include "daemon/ingest/mlpd_source.h"
#include "tests/unit/testing/mlpd_builder.h"

namespace jitsym::ingest {
namespace {

using testing::MlpdBuilder;

TEST(MlpdSourceBounds, ImagesAreCappedAndTheirNamesCut) {
  testing::MlpdBuffer buf(MlpdBuilder::kStartupNs + 10, 0x7000000);
  const std::string huge(1 << 20, 'I');
  buf.ImageLoad(MlpdBuilder::kStartupNs + 11, 0x7000100, huge, "mvid");
  for (size_t i = 1; i < MlpdSource::kMaxImages + 100; ++i) {
    buf.ImageLoad(MlpdBuilder::kStartupNs + 11, 0x7000100 + i, "i", "");
  }
  buf.Jit(MlpdBuilder::kStartupNs + 20, 0x5000010, 0x7001000, 0x40, "After:Images ()");
  MlpdBuilder b;
  b.Add(buf);
  MlpdSource source("/tmp/x.mlpd");
  source.Feed(b.bytes());
  ASSERT_FALSE(source.failed()) << source.error();
  ASSERT_EQ(source.images().size(), MlpdSource::kMaxImages);
  EXPECT_EQ(source.images()[0].name, huge.substr(0, index::NameTable::kMaxNameLength));
  // The events after them are still read.
  auto sym = source.code().Publish()->Find(0x7001000, std::nullopt);
  ASSERT_TRUE(sym);
  EXPECT_EQ(sym->name, "After:Images ()");
}

}  // namespace
}  // namespace jitsym::ingest
