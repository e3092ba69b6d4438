// The last line of a text side file (perf map, r2rmap) that has no newline: indexed once the file
// settles, never twice, and replaced (not doubled) when a later append completes it.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "daemon/formats/perfmap/perfmap_parser.h"
#include "daemon/formats/r2rmap/r2rmap_parser.h"
#include "daemon/ingest/perfmap_source.h"
#include "daemon/ingest/r2rmap_source.h"

namespace jitsym {
namespace {

std::span<const uint8_t> Bytes(std::string_view s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

std::string NameAt(const index::CodeMapSnapshot& s, uint64_t addr, std::optional<uint64_t> t) {
  auto sym = s.Find(addr, t);
  return sym ? std::string(sym->name) : "??";
}

using Events = std::vector<std::string>;

struct PerfmapRecorder : perfmap::Sink {
  Events events;
  void OnEntry(const perfmap::Entry& e) override {
    events.push_back(std::string(e.provisional ? "prov" : "line") + (e.replaces ? "*" : "") + "@" +
                     std::to_string(e.offset) + " " + std::string(e.name));
  }
  void OnMalformed(uint64_t offset, perfmap::LineError) override {
    events.push_back("bad@" + std::to_string(offset));
  }
  void OnWithdrawn(const perfmap::Entry& e) override {
    events.push_back("withdrawn@" + std::to_string(e.offset) + " " + std::string(e.name));
  }
};

TEST(FinalLinePerfmapParser, SettleEmitsTheUnfinishedLineOnce) {
  perfmap::Parser p;
  PerfmapRecorder r;
  p.Feed(Bytes("10 4 a\n20 4 b"), r);
  EXPECT_EQ(r.events, (Events{"line@0 a"}));
  p.Settle(r);
  p.Settle(r);  // nothing new: nothing emitted
  EXPECT_EQ(r.events, (Events{"line@0 a", "prov@7 b"}));
  EXPECT_EQ(p.entries(), 2u);
  // Completed as it stood: not emitted again.
  p.Feed(Bytes("\n30 4 c\n"), r);
  EXPECT_EQ(r.events, (Events{"line@0 a", "prov@7 b", "line@14 c"}));
  EXPECT_EQ(p.entries(), 3u);
  EXPECT_EQ(p.offset(), 21u);
}

TEST(FinalLinePerfmapParser, CompletedToAnotherNameReplaces) {
  perfmap::Parser p;
  PerfmapRecorder r;
  p.Feed(Bytes("20 4 fo"), r);
  p.Settle(r);
  p.Feed(Bytes("o"), r);
  p.Settle(r);  // grew again without its newline: replaces
  p.Feed(Bytes("bar\r\n"), r);
  EXPECT_EQ(r.events, (Events{"prov@0 fo", "prov*@0 foo", "line*@0 foobar"}));
  EXPECT_EQ(p.entries(), 1u);
}

TEST(FinalLinePerfmapParser, MalformedOrTooLongCompletionWithdraws) {
  perfmap::Parser p;
  PerfmapRecorder r;
  p.Feed(Bytes("20 4 x"), r);
  p.Settle(r);
  p.Feed(Bytes(std::string(perfmap::kMaxLine, 'y')), r);
  p.Feed(Bytes("\n"), r);
  EXPECT_EQ(r.events, (Events{"prov@0 x", "withdrawn@0 x", "bad@0"}));
  EXPECT_EQ(p.entries(), 0u);
  // An unfinished line without a name yet is not judged until it is complete.
  p.Feed(Bytes("30 4"), r);
  p.Settle(r);
  EXPECT_EQ(r.events.size(), 3u);
  p.Feed(Bytes(" z\n"), r);
  EXPECT_EQ(r.events.back(), "line@" + std::to_string(perfmap::kMaxLine + 7) + " z");
}

TEST(FinalLinePerfmapSource, IndexedOnceAndCompletedNameAnswers) {
  ingest::SourceContext context;
  context.process_start_ns = 100;
  context.initial_size = 0;
  uint64_t now = 5000;
  ingest::PerfmapSource src("perf-1.map", context, [&] { return now; });
  src.Feed(Bytes("1000 100 first\n2000 100 partial_na"));
  EXPECT_EQ(NameAt(*src.code().Publish(), 0x2000, std::nullopt), "??");
  EXPECT_TRUE(src.Settle());
  EXPECT_FALSE(src.Settle());
  EXPECT_EQ(src.records(), 2u);
  EXPECT_EQ(NameAt(*src.code().Publish(), 0x2010, 100), "partial_na");
  now = 9000;
  src.Feed(Bytes("me\n"));
  auto s = src.code().Publish();
  // The completed name answers for every time the provisional one did; counted once.
  EXPECT_EQ(NameAt(*s, 0x2010, 100), "partial_name");
  EXPECT_EQ(NameAt(*s, 0x2010, std::nullopt), "partial_name");
  EXPECT_EQ(src.records(), 2u);
  EXPECT_EQ(src.code().ranges().size(), 3u);  // first, provisional, its replacement
}

TEST(FinalLinePerfmapSource, SameCompletionAddsNothing) {
  ingest::SourceContext context;
  ingest::PerfmapSource src("perf-1.map", context, [] { return uint64_t{7}; });
  src.Feed(Bytes("1000 100 a\n1000 100 b"));
  EXPECT_TRUE(src.Settle());
  src.Feed(Bytes("\n"));
  EXPECT_EQ(src.records(), 2u);
  EXPECT_EQ(src.code().ranges().size(), 2u);
  EXPECT_EQ(NameAt(*src.code().Publish(), 0x1000, std::nullopt), "b");
}

// A reused address range appended after discovery is valid from when it was read; completed
// later, the completed name takes that same validity (not the later time of the completion).
TEST(FinalLinePerfmapSource, ReplacementKeepsTheProvisionalValidity) {
  ingest::SourceContext context;
  context.process_start_ns = 100;
  uint64_t now = 5000;
  ingest::PerfmapSource src("perf-1.map", context, [&] { return now; });
  src.Feed(Bytes("1000 100 old\n"));
  now = 6000;
  src.Feed(Bytes("1000 100 ne"));
  src.Settle();
  now = 7000;
  src.Feed(Bytes("w\n"));
  auto s = src.code().Publish();
  EXPECT_EQ(NameAt(*s, 0x1000, 5999), "old");
  EXPECT_EQ(NameAt(*s, 0x1000, 6000), "new");
  EXPECT_EQ(NameAt(*s, 0x1000, 6500), "new");
  EXPECT_EQ(NameAt(*s, 0x1000, std::nullopt), "new");
}

TEST(FinalLinePerfmapSource, WithdrawnWhenTheCompletedLineIsMalformed) {
  ingest::SourceContext context;
  ingest::PerfmapSource src("perf-1.map", context, [] { return uint64_t{7}; });
  src.Feed(Bytes("1000 100 a"));
  src.Settle();
  EXPECT_EQ(src.records(), 1u);
  src.Feed(Bytes(std::string(perfmap::kMaxLine, 'x') + "\n2000 10 b\n"));
  auto s = src.code().Publish();
  EXPECT_EQ(NameAt(*s, 0x1000, std::nullopt), "??");
  EXPECT_EQ(NameAt(*s, 0x1000, 7), "??");
  EXPECT_EQ(NameAt(*s, 0x2000, std::nullopt), "b");
  EXPECT_EQ(src.records(), 1u);
}

// --- r2rmap ------------------------------------------------------------------------------

constexpr char kSig[] = "0123456789ABCDEF0123456789abcdef";
std::string Header() {
  return std::string("FFFFFFFF 00 ") + kSig +
         "\nFFFFFFFE 00 1\nFFFFFFFD 00 2\nFFFFFFFC 00 3\nFFFFFFFB 00 1\n";
}

struct R2rRecorder : r2rmap::Sink {
  Events events;
  void OnRecord(const r2rmap::Record& r) override {
    events.push_back(std::string(r.provisional ? "prov" : "rec") + (r.replaces ? "*" : "") + " " +
                     std::string(r.name));
  }
  void OnWithdrawn(const r2rmap::Record& r) override {
    events.push_back("withdrawn " + std::string(r.name));
  }
};

TEST(FinalLineR2rmapParser, SettleCompleteReplace) {
  r2rmap::Parser p;
  R2rRecorder r;
  p.Feed(Bytes(Header() + "00001000 10 A\n00002000 10 B"), r);
  EXPECT_EQ(r.events, (Events{"rec A"}));
  p.Settle(r);
  p.Settle(r);
  EXPECT_EQ(p.records(), 2u);
  p.Feed(Bytes("\r\n00003000 10 C"), r);  // completed as it stood
  p.Settle(r);
  p.Feed(Bytes("C\n"), r);  // completed to another name
  EXPECT_EQ(r.events, (Events{"rec A", "prov B", "prov C", "rec* CC"}));
  EXPECT_EQ(p.records(), 3u);
}

TEST(FinalLineR2rmapParser, UnfinishedHeaderLineWaitsAndHeaderlessRecordSettles) {
  {
    r2rmap::Parser p;
    R2rRecorder r;
    p.Feed(Bytes(std::string("FFFFFFFF 00 ") + kSig + "\nFFFFFFFE 00 1"), r);
    p.Settle(r);
    EXPECT_TRUE(r.events.empty());
    EXPECT_FALSE(p.failed());
  }
  {
    r2rmap::Parser p(r2rmap::Options{.allow_headerless = true});
    R2rRecorder r;
    p.Feed(Bytes("00001000 10 Only"), r);
    p.Settle(r);
    EXPECT_EQ(r.events, (Events{"prov Only"}));
    EXPECT_TRUE(p.header().legacy);
  }
  {
    // A header cut short after the version: the record that ends it may be unfinished.
    r2rmap::Parser p;
    R2rRecorder r;
    p.Feed(Bytes(std::string("FFFFFFFF 00 ") + kSig + "\nFFFFFFFE 00 1\n00001000 10 X"), r);
    p.Settle(r);
    EXPECT_EQ(r.events, (Events{"prov X"}));
  }
}

TEST(FinalLineR2rmapSource, LastRecordWithoutNewlineAnswersOnce) {
  ingest::R2rmapSource src("/x/Foo.ni.r2rmap");
  src.Feed(Bytes(Header() + "00001000 10 A\n00002000 10 Last"));
  EXPECT_EQ(src.records(), 1u);
  EXPECT_TRUE(src.Settle());
  EXPECT_EQ(src.records(), 2u);
  EXPECT_EQ(NameAt(*src.code().Publish(), 0x2004, std::nullopt), "Last");
  src.Feed(Bytes("Method\n"));
  EXPECT_EQ(src.records(), 2u);
  auto s = src.code().Publish();
  EXPECT_EQ(NameAt(*s, 0x2004, std::nullopt), "LastMethod");
  EXPECT_EQ(NameAt(*s, 0x2004, 0), "LastMethod");
}

}  // namespace
}  // namespace jitsym

namespace jitsym {
namespace {

// What a lookup without a time answers everywhere: (start, end, name) of every piece.
std::vector<std::string> LatestOf(ingest::Source& source) {
  std::vector<std::string> out;
  auto snapshot = source.code().Publish();
  for (const index::LatestPiece& p : snapshot->ranges().Latest()) {
    out.push_back(std::to_string(p.start) + "-" + std::to_string(p.end) + " " +
                  std::string(snapshot->name(*p.range)));
  }
  return out;
}

// Whatever the chunking and wherever the file pauses (settles) mid-line, the end result is that
// of reading the finished file at once: every line once, completed names only.
TEST(FinalLineProperty, PausesAnywhereChangeNothingInTheEnd) {
  uint32_t seed = 12345;
  auto next = [&seed] { return seed = seed * 1103515245u + 12345u, seed >> 8; };
  for (int round = 0; round < 300; ++round) {
    std::string text;
    const int lines = 1 + static_cast<int>(next() % 12);
    for (int i = 0; i < lines; ++i) {
      // Few distinct addresses: lines reuse each other's ranges.
      char head[64];
      std::snprintf(head, sizeof(head), "%x %x ", 0x1000 + static_cast<unsigned>(next() % 6) * 0x40,
                    0x20 + static_cast<unsigned>(next() % 3) * 0x20);
      text += head;
      text += "name_" + std::to_string(next() % 1000) + std::string(next() % 4, 'x');
      if (i + 1 < lines || next() % 2) text += (next() % 4 == 0) ? "\r\n" : "\n";
    }
    ingest::SourceContext context;
    ingest::PerfmapSource whole("perf-1.map", context, [] { return uint64_t{50}; });
    whole.Feed(Bytes(text));
    whole.Settle();
    uint64_t now = 100;
    ingest::PerfmapSource paused("perf-1.map", context, [&now] { return ++now; });
    for (size_t at = 0; at < text.size();) {
      const size_t n = std::min<size_t>(text.size() - at, 1 + next() % 9);
      paused.Feed(Bytes(std::string_view(text).substr(at, n)));
      at += n;
      if (next() % 2) paused.Settle();
      if (next() % 5 == 0) (void)paused.code().Publish();
    }
    paused.Settle();
    ASSERT_EQ(LatestOf(paused), LatestOf(whole)) << text;
    ASSERT_EQ(paused.records(), whole.records()) << text;
  }
}

TEST(FinalLineProperty, R2rmapPausesAnywhereChangeNothingInTheEnd) {
  uint32_t seed = 777;
  auto next = [&seed] { return seed = seed * 1103515245u + 12345u, seed >> 8; };
  for (int round = 0; round < 300; ++round) {
    std::string text = Header();
    const int lines = 1 + static_cast<int>(next() % 10);
    for (int i = 0; i < lines; ++i) {
      char head[64];
      std::snprintf(head, sizeof(head), "%08X %02X ", 0x1000 + static_cast<unsigned>(i) * 0x40,
                    0x20 + static_cast<unsigned>(next() % 3) * 0x8);
      text += head;
      text += "M" + std::to_string(next() % 1000) + std::string(next() % 4, 'y');
      if (i + 1 < lines || next() % 2) text += "\n";
    }
    ingest::R2rmapSource whole("/x/Foo.ni.r2rmap");
    whole.Feed(Bytes(text));
    whole.Settle();
    ingest::R2rmapSource paused("/x/Foo.ni.r2rmap");
    for (size_t at = 0; at < text.size();) {
      const size_t n = std::min<size_t>(text.size() - at, 1 + next() % 13);
      paused.Feed(Bytes(std::string_view(text).substr(at, n)));
      at += n;
      if (next() % 2) paused.Settle();
    }
    paused.Settle();
    ASSERT_EQ(LatestOf(paused), LatestOf(whole)) << text;
    ASSERT_EQ(paused.records(), whole.records()) << text;
    ASSERT_EQ(paused.records(), static_cast<uint64_t>(lines)) << text;
  }
}

}  // namespace
}  // namespace jitsym
