#include "daemon/formats/jitdump/jitdump_parser.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/unit/testing/jitdump_builder.h"

namespace jitsym::jitdump {
namespace {

using testing::JitdumpBuilder;

// Records every callback as a line of text, so whole sequences compare at once.
struct Recorder : Sink {
  std::vector<std::string> events;
  Header header;
  void OnHeader(const Header& h) override {
    header = h;
    events.push_back("header v" + std::to_string(h.version) + " pid " + std::to_string(h.pid));
  }
  void OnCodeLoad(const CodeLoad& l) override {
    std::string e = "load@" + std::to_string(l.offset) + " t" + std::to_string(l.timestamp) + " " +
                    std::to_string(l.code_addr) + "+" + std::to_string(l.code_size) + " " +
                    std::string(l.name) + " #" + std::to_string(l.code_index);
    for (const DebugEntry& d : l.debug) {
      e += " [" + std::to_string(d.addr) + " " + std::string(d.file) + ":" +
           std::to_string(d.line) + ":" + std::to_string(d.discrim) + "]";
    }
    events.push_back(e);
  }
  void OnCodeMove(const CodeMove& m) override {
    events.push_back("move t" + std::to_string(m.timestamp) + " " +
                     std::to_string(m.old_code_addr) + "->" + std::to_string(m.new_code_addr) +
                     " #" + std::to_string(m.code_index));
  }
  void OnClose(uint64_t offset, uint64_t ts) override {
    events.push_back("close t" + std::to_string(ts));
  }
  void OnUnwindingInfo(const UnwindingInfo& u) override {
    events.push_back("unwind " + std::to_string(u.unwind_data_size));
  }
  void OnUnknownRecord(uint64_t offset, uint32_t id, uint32_t size) override {
    events.push_back("unknown " + std::to_string(id) + " " + std::to_string(size));
  }
  void OnOrphanDebugInfo(uint64_t offset, uint64_t code_addr) override {
    events.push_back("orphan " + std::to_string(code_addr));
  }
};

JitdumpBuilder SampleFile(bool big_endian) {
  JitdumpBuilder b(big_endian);
  b.Unwind(5, 24, 8)
      .Debug(9, 0x1000, {{0x1000, 10, 3, "a.js"}, {0x1008, 11, 0, "a.js"}})
      .Load(10, 0x1000, 32, "JS:*hot a.js:1", 1)
      .Load(11, 0x2000, 16, "stub", 2, /*padding=*/5)
      .Unknown(77, 9, 12)
      .Move(13, 0x2000, 0x3000, 16, 2)
      .Load(14, 0x4000, 0, "empty", 3)
      .Close(15);
  return b;
}

std::vector<std::string> ParseAll(std::span<const uint8_t> bytes, size_t chunk = SIZE_MAX,
                                  Parser* out = nullptr) {
  Parser local;
  Parser& p = out ? *out : local;
  Recorder r;
  for (size_t off = 0; off < bytes.size(); off += chunk) {
    p.Feed(bytes.subspan(off, std::min(chunk, bytes.size() - off)), r);
  }
  return r.events;
}

const std::vector<std::string> kSampleEvents = {
    "header v1 pid 4242",
    "unwind 24",
    "load@178 t10 4096+32 JS:*hot a.js:1 #1 [4096 a.js:10:3] [4104 a.js:11:0]",
    "load@281 t11 8192+16 stub #2",
    "unknown 77 25",
    "move t13 8192->12288 #2",
    "load@452 t14 16384+0 empty #3",
    "close t15",
};

TEST(JitdumpParserTest, ParsesEveryRecordKind) {
  auto b = SampleFile(false);
  Parser p;
  EXPECT_EQ(ParseAll(b.bytes(), SIZE_MAX, &p), kSampleEvents);
  EXPECT_FALSE(p.failed());
  EXPECT_TRUE(p.closed());
  EXPECT_EQ(p.offset(), b.size());
  EXPECT_EQ(p.buffered(), 0u);
}

TEST(JitdumpParserTest, BigEndianFileGivesTheSameRecords) {
  auto b = SampleFile(true);
  Parser p;
  EXPECT_EQ(ParseAll(b.bytes(), SIZE_MAX, &p), kSampleEvents);
  EXPECT_TRUE(p.header().swapped);
}

TEST(JitdumpParserTest, AnyChunkingGivesTheSameRecords) {
  auto b = SampleFile(false);
  for (size_t chunk : {1, 2, 3, 7, 16, 17, 64}) {
    EXPECT_EQ(ParseAll(b.bytes(), chunk), kSampleEvents) << "chunk " << chunk;
  }
}

// A file cut at any byte parses without error into a prefix of the records, and feeding the rest
// later completes it: a record still being written is never misparsed.
TEST(JitdumpParserTest, TruncationAtEveryOffsetYieldsAPrefix) {
  auto b = SampleFile(false);
  std::span<const uint8_t> all(b.bytes());
  for (size_t cut = 0; cut <= all.size(); ++cut) {
    Parser p;
    Recorder r;
    p.Feed(all.first(cut), r);
    ASSERT_FALSE(p.failed()) << "cut " << cut << ": " << p.error();
    ASSERT_LE(r.events.size(), kSampleEvents.size());
    for (size_t i = 0; i < r.events.size(); ++i) ASSERT_EQ(r.events[i], kSampleEvents[i]);
    p.Feed(all.subspan(cut), r);
    ASSERT_EQ(r.events, kSampleEvents) << "cut " << cut;
  }
}

TEST(JitdumpParserTest, SkipHintLetsTheLoaderSeekOverCode) {
  JitdumpBuilder b;
  b.Load(1, 0x1000, 1000, "f", 1).Load(2, 0x2000, 10, "g", 2);
  std::span<const uint8_t> all(b.bytes());
  Parser p;
  Recorder r;
  const size_t first_head = 40 + 56 + 2;
  p.Feed(all.first(first_head), r);
  EXPECT_EQ(p.skippable(), 1000u);
  p.Skip(1000);
  p.Feed(all.subspan(first_head + 1000), r);
  EXPECT_FALSE(p.failed());
  ASSERT_EQ(r.events.size(), 3u);
  EXPECT_NE(r.events[2].find(" g #2"), std::string::npos);
}

TEST(JitdumpParserTest, HeaderSizeSmallerThan40IsClamped) {
  JitdumpBuilder b(false, /*header_size=*/8);  // old Mono writers
  b.Load(1, 0x1000, 4, "mono", 1);
  auto events = ParseAll(b.bytes());
  ASSERT_EQ(events.size(), 2u);
  EXPECT_NE(events[1].find("mono"), std::string::npos);
}

TEST(JitdumpParserTest, HeaderSizeLargerThan40IsHonoured) {
  JitdumpBuilder b(false, /*header_size=*/64);
  b.Load(1, 0x1000, 4, "f", 1);
  auto events = ParseAll(b.bytes());
  ASSERT_EQ(events.size(), 2u);
  EXPECT_NE(events[1].find("load@64 "), std::string::npos);
}

TEST(JitdumpParserTest, ArchTimestampFlagAndV8PaddingAreRecorded) {
  JitdumpBuilder b(false, 40, 1, kV8Pad1, kFlagArchTimestamp);
  Parser p;
  ParseAll(b.bytes(), SIZE_MAX, &p);
  EXPECT_TRUE(p.header().arch_timestamp());
  EXPECT_EQ(p.header().debug_addr_bias(), 0x40u);
  JitdumpBuilder plain;
  Parser q;
  ParseAll(plain.bytes(), SIZE_MAX, &q);
  EXPECT_EQ(q.header().debug_addr_bias(), 0u);
}

TEST(JitdumpParserTest, DebugInfoForAnotherAddressIsNotAttached) {
  JitdumpBuilder b;
  b.Debug(1, 0x9999, {{0x9999, 1, 0, "x"}}).Load(2, 0x1000, 4, "f", 1);
  auto events = ParseAll(b.bytes());
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[1], "orphan 39321");
  EXPECT_EQ(events[2], "load@90 t2 4096+4 f #1");
}

// One case per malformed field: the file stops at the corrupt record, with its offset, and the
// records before it have been delivered.
struct Malformed {
  const char* name;
  std::vector<uint8_t> tail;
  const char* message_part;
};

std::vector<uint8_t> Tail(const std::function<void(JitdumpBuilder&)>& f) {
  JitdumpBuilder empty;
  JitdumpBuilder b;
  f(b);
  return std::vector<uint8_t>(b.bytes().begin() + empty.size(), b.bytes().end());
}

TEST(JitdumpParserTest, MalformedRecordsStopTheFileAtTheirOffset) {
  const std::vector<Malformed> cases = {
      {"SizeBelowHeader", Tail([](auto& b) { b.Prefix(0, 8, 1); }), "< 16"},
      {"SizeBeyondLimit", Tail([](auto& b) { b.Prefix(5, 0x7fffffff, 1); }), "exceeds limit"},
      {"LoadTooSmall", Tail([](auto& b) { b.Prefix(0, 40, 1).U64(0).U64(0).U64(0); }), "too small"},
      {"LoadNameWithoutNul", Tail([](auto& b) {
         b.Prefix(0, 56 + 4, 1).U32(1).U32(1).U64(0x1000).U64(0x1000).U64(0).U64(1).Raw("abcd");
       }),
       "NUL"},
      {"LoadCodeSizeLargerThanRecord", Tail([](auto& b) {
         b.Prefix(0, 56 + 2 + 4, 1)
             .U32(1)
             .U32(1)
             .U64(0x1000)
             .U64(0x1000)
             .U64(100)
             .U64(1)
             .Raw(std::string("f\0\0\0\0\0", 6));
       }),
       "code_size"},
      {"MoveTooSmall", Tail([](auto& b) { b.Prefix(1, 32, 1).U64(0).U64(0); }), "MOVE"},
      {"DebugTooSmall", Tail([](auto& b) { b.Prefix(2, 24, 1).U64(0); }), "DEBUG_INFO"},
      {"DebugEntryCountTooLarge", Tail([](auto& b) {
         b.Prefix(2, 32 + 17, 1)
             .U64(0x1000)
             .U64(1000)
             .U64(0)
             .U32(0)
             .U32(0)
             .Raw(std::string(1, '\0'));
       }),
       "nr_entry"},
      {"DebugEntryFileWithoutNul", Tail([](auto& b) {
         b.Prefix(2, 32 + 19, 1).U64(0x1000).U64(1).U64(0).U32(0).U32(0).Raw("abc");
       }),
       "truncated"},
      {"UnwindTooSmall", Tail([](auto& b) { b.Prefix(4, 24, 1).U64(0); }), "UNWINDING_INFO"},
      {"UnwindDataBeyondRecord",
       Tail([](auto& b) { b.Prefix(4, 48, 1).U64(100).U64(0).U64(0).U64(0); }), "unwind_data_size"},
      {"UnwindHeaderBeyondData",
       Tail([](auto& b) { b.Prefix(4, 48, 1).U64(8).U64(9).U64(0).U64(0); }), "eh_frame_hdr_size"},
  };
  for (const Malformed& c : cases) {
    JitdumpBuilder good;
    good.Load(1, 0x1000, 8, "good", 1);
    const size_t corrupt_at = good.size();
    std::vector<uint8_t> bytes = good.bytes();
    bytes.insert(bytes.end(), c.tail.begin(), c.tail.end());
    // Bytes after the corrupt record must not be looked at.
    JitdumpBuilder after;
    after.Load(2, 0x2000, 8, "after", 2);
    bytes.insert(bytes.end(), after.bytes().begin() + 40, after.bytes().end());
    Parser p;
    auto events = ParseAll(bytes, SIZE_MAX, &p);
    EXPECT_TRUE(p.failed()) << c.name;
    EXPECT_EQ(p.error_offset(), corrupt_at) << c.name;
    EXPECT_NE(p.error().find(c.message_part), std::string::npos) << c.name << ": " << p.error();
    ASSERT_EQ(events.size(), 2u) << c.name;
    EXPECT_NE(events[1].find("good"), std::string::npos) << c.name;
  }
}

TEST(JitdumpParserTest, NotAJitdump) {
  const std::string text = "this is not a jitdump file at all, just text\n";
  Parser p;
  Recorder r;
  p.Feed({reinterpret_cast<const uint8_t*>(text.data()), text.size()}, r);
  EXPECT_TRUE(p.failed());
  EXPECT_EQ(p.error_offset(), 0u);
  EXPECT_TRUE(r.events.empty());
}

TEST(JitdumpParserTest, HeaderSizeBeyondLimitIsRejected) {
  JitdumpBuilder b(false, 40);
  std::vector<uint8_t> bytes = b.bytes();
  const uint32_t huge = 1u << 30;
  std::memcpy(bytes.data() + 8, &huge, 4);
  Parser p;
  ParseAll(bytes, SIZE_MAX, &p);
  EXPECT_TRUE(p.failed());
}

TEST(JitdumpParserTest, EmptyInputIsNotAnError) {
  Parser p;
  Recorder r;
  p.Feed({}, r);
  EXPECT_FALSE(p.failed());
  EXPECT_TRUE(r.events.empty());
}

}  // namespace
}  // namespace jitsym::jitdump
