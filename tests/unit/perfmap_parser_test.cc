#include "daemon/formats/perfmap/perfmap_parser.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "daemon/ingest/perfmap_source.h"

namespace jitsym::perfmap {
namespace {

// Records every callback as a line of text, so whole sequences compare at once.
struct Recorder : Sink {
  std::vector<std::string> events;
  void OnEntry(const Entry& e) override {
    char head[64];
    std::snprintf(head, sizeof(head), "@%llu %llx+%llx ", static_cast<unsigned long long>(e.offset),
                  static_cast<unsigned long long>(e.start),
                  static_cast<unsigned long long>(e.size));
    events.push_back(head + std::string(e.name));
  }
  void OnMalformed(uint64_t offset, LineError error) override {
    events.push_back("bad@" + std::to_string(offset) + " " + std::string(LineErrorName(error)));
  }
};

std::span<const uint8_t> Bytes(std::string_view s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

std::vector<std::string> ParseAll(std::string_view text, size_t chunk = 0) {
  Parser p;
  Recorder r;
  if (chunk == 0) chunk = text.size() ? text.size() : 1;
  for (size_t off = 0; off < text.size(); off += chunk) {
    p.Feed(Bytes(text.substr(off, chunk)), r);
  }
  return r.events;
}

using Events = std::vector<std::string>;

// --- the line shapes of real producers -----------------------------------------------------

TEST(PerfmapParser, V8BasicProf) {
  EXPECT_EQ(ParseAll("3ef414e0f7e0 2c LazyCompile:~hot /tmp/a.js:3\n"
                     "7f3a1c0040 1a0 Builtin:ArgumentsAdaptorTrampoline\n"),
            (Events{"@0 3ef414e0f7e0+2c LazyCompile:~hot /tmp/a.js:3",
                    "@45 7f3a1c0040+1a0 Builtin:ArgumentsAdaptorTrampoline"}));
}

TEST(PerfmapParser, JvmCompilerPerfmap) {
  EXPECT_EQ(ParseAll("0x00007f7d3c8e5a00 0x0000000000000148 void Hot.spin(int)\n"),
            (Events{"@0 7f7d3c8e5a00+148 void Hot.spin(int)"}));
}

TEST(PerfmapParser, DotnetAndMono) {
  // .NET: uppercase hex, names with brackets and spaces; Mono --jitmap: lowercase.
  EXPECT_EQ(ParseAll("7F8B2C3D4E50 4A [System.Private.CoreLib] System.String::Concat(string,string)"
                     "[OptimizedTier1]\n"
                     "40a6e2b0 3c Hello:Main (string[])\n"),
            (Events{"@0 7f8b2c3d4e50+4a [System.Private.CoreLib] "
                    "System.String::Concat(string,string)[OptimizedTier1]",
                    "@94 40a6e2b0+3c Hello:Main (string[])"}));
}

TEST(PerfmapParser, PrefixAnyCaseAndMixedSeparators) {
  EXPECT_EQ(ParseAll("0X1aB 0Xc\tf\n  0x10 \t 0x2   name  with  spaces  \n"),
            (Events{"@0 1ab+c f", "@12 10+2 name  with  spaces  "}));
}

TEST(PerfmapParser, Crlf) {
  EXPECT_EQ(ParseAll("10 2 a\r\n20 3 b c\r\n"), (Events{"@0 10+2 a", "@8 20+3 b c"}));
}

TEST(PerfmapParser, SizeZeroIsAnEntry) {
  // The parser reports it; the source defines nothing for it.
  EXPECT_EQ(ParseAll("10 0 empty\n"), (Events{"@0 10+0 empty"}));
}

TEST(PerfmapParser, EmptyInputAndBlankLines) {
  EXPECT_EQ(ParseAll(""), Events{});
  EXPECT_EQ(ParseAll("\n\r\n \t\n"), Events{});
  Parser p;
  Recorder r;
  p.Feed({}, r);
  EXPECT_EQ(p.entries(), 0u);
  EXPECT_EQ(p.malformed(), 0u);
}

TEST(PerfmapParser, LargestValues) {
  EXPECT_EQ(ParseAll("fffffffffffffffe 1 top\n0000000000000000000000001 1 zeros\n"),
            (Events{"@0 fffffffffffffffe+1 top", "@23 1+1 zeros"}));
}

// --- malformed lines: one case per field, each counted, parsing goes on --------------------

TEST(PerfmapParser, MalformedLinesAreSkippedAndCounted) {
  const std::string text =
      "xyz 10 bad_start\n"        // 0
      "0x 10 prefix_only\n"       // 17
      "12g4 10 bad_start_tail\n"  // 35
      "1000\n"                    // 58: no size
      "1000 zz name\n"            // 63
      "1000 10q name\n"           // 76
      "1000 10\n"                 // 90: no name
      "1000 10 \t \r\n"           // 98: blank name
      "10000000000000000 1 a\n"   // 110: 17 significant digits
      "1 10000000000000000 a\n"   // 132
      "ffffffffffffffff 1 a\n"    // 154: wraps
      "1000 10 good\n";           // 175
  Parser p;
  Recorder r;
  p.Feed(Bytes(text), r);
  EXPECT_EQ(
      r.events,
      (Events{"bad@0 start address missing or not hex", "bad@17 start address missing or not hex",
              "bad@35 start address missing or not hex", "bad@58 size missing or not hex",
              "bad@63 size missing or not hex", "bad@76 size missing or not hex",
              "bad@90 name missing", "bad@98 name missing", "bad@110 number larger than 64 bits",
              "bad@132 number larger than 64 bits", "bad@154 start + size beyond the address space",
              "@175 1000+10 good"}));
  EXPECT_EQ(p.malformed(), 11u);
  EXPECT_EQ(p.entries(), 1u);
  EXPECT_EQ(p.offset(), text.size());
}

// --- incremental reading -------------------------------------------------------------------

TEST(PerfmapParser, LastLineWithoutNewlineWaits) {
  Parser p;
  Recorder r;
  p.Feed(Bytes("10 2 a\n20 3 partial"), r);
  EXPECT_EQ(r.events, (Events{"@0 10+2 a"}));
  EXPECT_EQ(p.offset(), 7u);
  EXPECT_EQ(p.buffered(), 12u);
  p.Feed(Bytes("_name\n"), r);
  EXPECT_EQ(r.events, (Events{"@0 10+2 a", "@7 20+3 partial_name"}));
  EXPECT_EQ(p.buffered(), 0u);
}

TEST(PerfmapParser, EveryChunkSizeGivesTheSameEntries) {
  const std::string text =
      "0x00007f0000001000 0x0000000000000100 void A.f()\r\n"
      "7f0000002000 80 LazyCompile:*g /x.js:1\n"
      "bad line\n"
      "\n"
      "7F0000003000\t\t40 [lib] N::M(int, int)\n"
      "7f0000004000 0 empty\n"
      "7f0000005000 10 last";
  const Events whole = ParseAll(text + "\n");
  ASSERT_EQ(whole.size(), 6u);
  for (size_t chunk = 1; chunk <= text.size() + 1; ++chunk) {
    EXPECT_EQ(ParseAll(text + "\n", chunk), whole) << "chunk " << chunk;
  }
  // Split at every byte into two feeds.
  for (size_t cut = 0; cut <= text.size(); ++cut) {
    Parser p;
    Recorder r;
    p.Feed(Bytes(std::string_view(text).substr(0, cut)), r);
    p.Feed(Bytes(std::string_view(text).substr(cut)), r);
    p.Feed(Bytes("\n"), r);
    EXPECT_EQ(r.events, whole) << "cut " << cut;
  }
}

TEST(PerfmapParser, LongLinesAreDroppedWithoutBuffering) {
  const std::string name_ok(kMaxLine - 8, 'n');  // "100 10 " + name + "\r" == kMaxLine
  const std::string ok = "100 10 " + name_ok + "\r";
  ASSERT_EQ(ok.size(), kMaxLine);
  const std::string too_long = "200 10 " + std::string(kMaxLine * 4, 'x');
  const std::string text = ok + "\n" + too_long + "\n300 10 after\n";
  for (size_t chunk : {size_t{1} << 10, size_t{4093}, text.size()}) {
    Parser p;
    Recorder r;
    size_t max_buffered = 0;
    for (size_t off = 0; off < text.size(); off += chunk) {
      p.Feed(Bytes(std::string_view(text).substr(off, chunk)), r);
      max_buffered = std::max(max_buffered, p.buffered());
    }
    EXPECT_LE(max_buffered, kMaxLine) << "chunk " << chunk;
    ASSERT_EQ(r.events.size(), 3u) << "chunk " << chunk;
    EXPECT_EQ(r.events[0], "@0 100+10 " + name_ok);
    EXPECT_EQ(r.events[1], "bad@" + std::to_string(ok.size() + 1) + " line longer than 64 KiB");
    EXPECT_EQ(r.events[2], "@" + std::to_string(ok.size() + too_long.size() + 2) + " 300+10 after");
    EXPECT_EQ(p.malformed(), 1u);
  }
}

TEST(PerfmapParser, UnfinishedLongLineIsNotBuffered) {
  Parser p;
  Recorder r;
  const std::string chunk(1 << 20, 'a');
  for (int i = 0; i < 8; ++i) p.Feed(Bytes(chunk), r);
  EXPECT_EQ(p.buffered(), 0u);
  EXPECT_TRUE(r.events.empty());
  p.Feed(Bytes("\n1 1 x\n"), r);
  EXPECT_EQ(r.events, (Events{"bad@0 line longer than 64 KiB", "@8388609 1+1 x"}));
}

}  // namespace
}  // namespace jitsym::perfmap

namespace jitsym::ingest {
namespace {

std::span<const uint8_t> Bytes(std::string_view s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

std::string NameAt(const index::CodeMapSnapshot& s, uint64_t addr, std::optional<uint64_t> t) {
  auto sym = s.Find(addr, t);
  return sym ? std::string(sym->name) : "??";
}

TEST(PerfmapSource, LinesBeforeDiscoveryAreValidFromProcessStart) {
  const std::string before = "1000 100 old\n1000 100 older_line_loses\n1000 100 first\n2000 1";
  SourceContext context;
  context.process_start_ns = 500;
  context.initial_size = before.size();  // discovered mid-line: that line is old too
  uint64_t now = 10000;
  PerfmapSource src("perf-1.map", context, [&] { return now; });
  src.Feed(Bytes(before));
  src.Feed(Bytes("0 second\n"));
  now = 20000;
  src.Feed(Bytes("1000 100 reused\n3000 0 empty\n"));
  auto s = src.code().Publish();
  EXPECT_EQ(NameAt(*s, 0x1000, 499), "??");
  EXPECT_EQ(NameAt(*s, 0x1000, 500), "first");
  EXPECT_EQ(NameAt(*s, 0x1050, 19999), "first");
  EXPECT_EQ(NameAt(*s, 0x1050, 20000), "reused");
  EXPECT_EQ(NameAt(*s, 0x1050, std::nullopt), "reused");
  EXPECT_EQ(NameAt(*s, 0x2000, 500), "second");
  EXPECT_EQ(NameAt(*s, 0x3000, std::nullopt), "??");
  EXPECT_EQ(src.records(), 6u);
  EXPECT_EQ(src.code().ranges().size(), 5u);
}

TEST(PerfmapSource, UnknownProcessStartMeansValidForAnyTime) {
  SourceContext context;
  context.initial_size = 9;
  PerfmapSource src("perf-1.map", context, [] { return uint64_t{777}; });
  src.Feed(Bytes("10 10 a\n\n20 10 b\nbad\n"));
  auto s = src.code().Publish();
  EXPECT_EQ(NameAt(*s, 0x10, 0), "a");
  // Appended after discovery, but for fresh addresses: contradicts nothing, valid as early.
  EXPECT_EQ(NameAt(*s, 0x20, 0), "b");
  EXPECT_EQ(src.malformed(), 1u);
}

// A map written whole after the daemon started watching (jcmd Compiler.perfmap) answers for
// samples taken before it was written; only lines reusing known addresses wait for their time.
TEST(PerfmapSource, LateLinesAreTimedOnlyWhenTheyReuseAddresses) {
  SourceContext context;
  context.process_start_ns = 100;
  context.initial_size = 0;  // empty when found
  uint64_t now = 5000;
  PerfmapSource src("perf-1.map", context, [&] { return now; });
  src.Feed(Bytes("0x1000 0x100 snapshot_f\n0x1100 0x100 snapshot_g\n"));
  now = 9000;
  src.Feed(Bytes("0x1080 0x10 reuses_f\n0x5000 0x10 fresh\n"));
  auto s = src.code().Publish();
  EXPECT_EQ(NameAt(*s, 0x1000, 99), "??");  // before the process started
  EXPECT_EQ(NameAt(*s, 0x1000, 100), "snapshot_f");
  EXPECT_EQ(NameAt(*s, 0x1180, 200), "snapshot_g");
  EXPECT_EQ(NameAt(*s, 0x1088, 8999), "snapshot_f");
  EXPECT_EQ(NameAt(*s, 0x1088, 9000), "reuses_f");
  EXPECT_EQ(NameAt(*s, 0x1088, std::nullopt), "reuses_f");
  EXPECT_EQ(NameAt(*s, 0x5000, 100), "fresh");
}

TEST(PerfmapSource, FileNames) {
  for (std::string_view good : {"perf-1.map", "perf-4194304.map"}) {
    auto m = MatchFile(good);
    ASSERT_TRUE(m) << good;
    EXPECT_EQ(m->origin, Origin::kPerfmap);
  }
  EXPECT_EQ(MatchFile("perf-123.map")->pid, 123u);
  for (std::string_view bad : {"perf-0123.map", "perf-.map", "perf-12a.map", "perf-12.map.tmp",
                               "perfinfo-12.map", "perf-12.mapx", "xperf-12.map", "perf-0.map"}) {
    EXPECT_FALSE(MatchFile(bad).has_value() && MatchFile(bad)->origin == Origin::kPerfmap) << bad;
  }
}

}  // namespace
}  // namespace jitsym::ingest
