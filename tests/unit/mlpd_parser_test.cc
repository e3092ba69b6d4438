#include "daemon/formats/mlpd/mlpd_parser.h"

#include <gtest/gtest.h>

#include <functional>
#include <random>
#include <string>
#include <vector>

#include "daemon/ingest/mlpd_source.h"
#include "tests/unit/testing/mlpd_builder.h"

namespace jitsym::mlpd {
namespace {

using testing::Gzip;
using testing::MlpdBuffer;
using testing::MlpdBuilder;

constexpr uint64_t kPtrBase = 0x7f0000000000;
constexpr uint64_t kT0 = 5000000000;

// Records every callback as a line of text, so whole sequences compare at once.
struct Recorder : Sink {
  std::vector<std::string> events;
  std::vector<uint64_t> bad_offsets;
  Header header;
  void OnHeader(const Header& h) override {
    header = h;
    events.push_back("header v" + std::to_string(h.data_version) + " pid " + std::to_string(h.pid));
  }
  void OnCode(const Code& c) override {
    const char* kind = c.kind == Code::Kind::kJit      ? "jit"
                       : c.kind == Code::Kind::kHelper ? "helper"
                                                       : "usym";
    char addr[32];
    snprintf(addr, sizeof addr, "%llx", static_cast<unsigned long long>(c.address));
    events.push_back(std::string(kind) + " t" + std::to_string(c.time) + " " + addr + "+" +
                     std::to_string(c.size) + " " + std::string(c.name));
  }
  void OnImage(const ImageLoad& i) override {
    events.push_back("image t" + std::to_string(i.time) + " " + std::string(i.name) + " " +
                     std::string(i.mvid));
  }
  void OnBadEvent(uint64_t buffer_offset, uint64_t offset, const std::string& why) override {
    bad_offsets.push_back(offset);
    events.push_back("bad: " + why);
  }
};

// A buffer with one of every event type the parser must skip, then `tail` appended.
MlpdBuffer EveryOtherEvent(int v) {
  MlpdBuffer b(kT0, kPtrBase);
  uint64_t t = kT0;
  b.Event(kTypeAlloc, 0x00, t += 1).Ptr(kPtrBase + 8).Sleb(-3).Uleb(24);
  b.Event(kTypeAlloc, 0x10, t += 1)
      .Ptr(kPtrBase + 8)
      .Sleb(5)
      .Uleb(24)
      .Uleb(2)
      .Method(0x5000100)
      .Method(0x5000040);
  b.Event(kTypeGc, 0x10, t += 1).Byte(1).Byte(0);
  b.Event(kTypeGc, 0x20, t += 1).Uleb(1 << 20);
  b.Event(kTypeGc, 0x30, t += 1).Uleb(2).Sleb(1).Sleb(-1);
  b.Event(kTypeGc, 0x40, t += 1).Uleb(1).Uleb(77).Sleb(4);
  b.Event(kTypeGc, 0x60, t += 1).Uleb(1).Uleb(78).Sleb(4).Uleb(1).Method(0x5000200);
  b.Event(kTypeGc, 0x50, t += 1).Uleb(1).Uleb(77);
  b.Event(kTypeGc, 0x70, t += 1).Uleb(1).Uleb(78).Uleb(0);
  b.Event(kTypeGc, 0x80, t += 1);
  b.Event(kTypeGc, 0x90, t += 1);
  b.Event(kTypeGc, 0xa0, t += 1).Sleb(9);
  b.Event(kTypeGc, 0xb0, t += 1).Sleb(9);
  b.Event(kTypeMetadata, 0x20, t += 1)
      .Byte(1)
      .Ptr(kPtrBase + 0x100)
      .Ptr(kPtrBase + 0x200)
      .Str("Foo.Bar");
  b.Event(kTypeMetadata, 0x20, t += 1).Byte(3).Ptr(kPtrBase + 0x300);
  if (v > 13) b.Ptr(kPtrBase + 0x200);
  b.Str("Hot, Version=0.0.0.0");
  b.Event(kTypeMetadata, 0x20, t += 1).Byte(4).Ptr(1);
  b.Event(kTypeMetadata, 0x00, t += 1).Byte(4).Ptr(1).Str("Hot.exe");
  b.Event(kTypeMetadata, 0x20, t += 1).Byte(5).Ptr(0x7001);
  b.Event(kTypeMetadata, 0x00, t += 1).Byte(5).Ptr(0x7001).Str("Finalizer");
  b.Event(kTypeMetadata, 0x40, t += 1).Byte(5).Ptr(0x7001);
  b.Event(kTypeMetadata, 0x20, t += 1).Byte(6).Ptr(2).Ptr(1);
  b.Event(kTypeMetadata, 0x20, t += 1).Byte(7).Ptr(kPtrBase + 0x400).Ptr(1).Ptr(kPtrBase + 0x100);
  b.Event(kTypeMethod, 0x20, t += 1).Method(0x5000300);
  b.Event(kTypeMethod, 0x10, t += 1).Method(0x5000300);
  b.Event(kTypeMethod, 0x30, t += 1).Method(0x5000300);
  b.Event(kTypeException, 0x00, t += 1).Sleb(12);
  b.Event(kTypeException, 0x80, t += 1).Sleb(12).Uleb(1).Method(0x5000300);
  b.Event(kTypeException, 0x10, t += 1).Byte(1).Uleb(0).Method(0x5000300);
  if (v > 13) b.Sleb(12);
  if (v > 13) {
    b.Event(kTypeMonitor, 0x00, t += 1).Byte(1).Sleb(3);
    b.Event(kTypeMonitor, 0x80, t += 1).Byte(2).Sleb(3).Uleb(1).Method(0x5000300);
  } else {
    b.Event(kTypeMonitor, 0x10, t += 1).Sleb(3);
  }
  b.Event(kTypeHeap, 0x00, t += 1);
  b.Event(kTypeHeap, 0x20, t += 1).Sleb(1).Ptr(kPtrBase + 0x400).Uleb(32);
  if (v >= 16) b.Byte(1);
  b.Uleb(2).Uleb(8).Sleb(2).Uleb(8).Sleb(3);
  b.Event(kTypeHeap, 0x30, t += 1);
  if (v > 14) {
    b.Uleb(1).Ptr(kPtrBase + 0x500).Sleb(1);
  } else {
    b.Uleb(1).Uleb(3).Sleb(1);
    if (v == 13)
      b.Byte(2);
    else
      b.Uleb(2);
    b.Uleb(0);
  }
  if (v >= 15) {
    b.Event(kTypeHeap, 0x40, t += 1).Ptr(kPtrBase + 0x600).Uleb(64).Byte(3).Ptr(0).Str("stack");
    b.Event(kTypeHeap, 0x50, t += 1).Ptr(kPtrBase + 0x600);
  }
  b.Event(kTypeHeap, 0x10, t += 1);
  b.Event(kTypeSample, 0x00, t += 1);
  if (v < 14) b.Byte(0);
  b.Ptr(0x7001).Uleb(1).Ptr(kPtrBase + 0x1234).Uleb(2).Method(0x5000300).Method(0x5000100);
  if (v < 16) b.Event(kTypeSample, 0x20, t += 1).Ptr(kPtrBase).Uleb(0).Uleb(4096).Str("libfoo.so");
  b.Event(kTypeSample, 0x30, t += 1).Uleb(2);
  b.Uleb(1 << 8).Str("Methods JITted");
  if (v < 15)
    b.Byte(0).Byte(4).Byte(1);
  else
    b.Uleb(0).Uleb(4).Uleb(1);
  b.Uleb(1);
  b.Uleb(1 << 15).Str("Processor").Str("% Time");
  if (v < 15)
    b.Byte(3).Byte(0).Byte(2);
  else
    b.Uleb(3).Uleb(0).Uleb(2);
  b.Uleb(2);
  b.Event(kTypeSample, 0x40, t += 1);
  auto ctype = [&](uint8_t type) {
    if (v < 15)
      b.Byte(type);
    else
      b.Uleb(type);
  };
  b.Uleb(1);
  ctype(0);
  b.Sleb(-5);
  b.Uleb(2);
  ctype(1);
  b.Uleb(5);
  b.Uleb(3);
  ctype(2);
  b.Sleb(7);
  b.Uleb(4);
  ctype(3);
  b.Sleb(-9);
  b.Uleb(5);
  ctype(4);
  b.Uleb(9);
  b.Uleb(6);
  ctype(5);
  b.Raw({0, 0, 0, 0, 0, 0, 0xf0, 0x3f});
  b.Uleb(7);
  ctype(6);
  b.Byte(1).Str("value");
  b.Uleb(8);
  ctype(6);
  b.Byte(0);
  b.Uleb(9);
  ctype(7);
  b.Sleb(100);
  b.Uleb(0);
  if (v < 16) {
    b.Event(kTypeCoverage, 0x10, t += 1)
        .Str("Hot")
        .Str("C")
        .Str("M")
        .Str("()")
        .Str("a.cs")
        .Uleb(1)
        .Uleb(2)
        .Uleb(3);
    b.Event(kTypeCoverage, 0x20, t += 1).Uleb(1).Uleb(2).Uleb(3).Uleb(4).Uleb(5);
    b.Event(kTypeCoverage, 0x00, t += 1)
        .Str("Hot")
        .Str("guid")
        .Str("Hot.exe")
        .Uleb(1)
        .Uleb(2)
        .Uleb(3);
    b.Event(kTypeCoverage, 0x30, t += 1).Str("Hot").Str("C").Uleb(1).Uleb(2).Uleb(3);
  }
  b.Event(kTypeMeta, 0x00, t += 1).Byte(1);
  b.Event(kTypeMeta, 0x10, t += 1).Str("aot-id");
  return b;
}

// Every event the index wants, and image loads.
MlpdBuffer Wanted(int v, uint64_t t) {
  MlpdBuffer b(t, kPtrBase);
  b.Jit(t + 10, 0x5000010, kPtrBase + 0x1000, 0x80, "Hot:Loop (long)");
  b.Helper(t + 11, v < 14 ? 6 : 5, kPtrBase + 0x2000, 0x20, "generic_trampoline_jit");
  b.Helper(t + 12, v < 14 ? 7 : 6, kPtrBase + 0x2100, 0x10);
  b.Usym(t + 13, 0x7f1000000000, 0, "pthread_create");
  if (v >= 16) {
    b.ImageLoad(t + 14, kPtrBase + 0x10, "/tmp/Hot.exe", "0A1B");
  } else {
    b.Event(kTypeMetadata, 0x20, t + 14).Byte(2).Ptr(kPtrBase + 0x10).Str("/tmp/Hot.exe");
  }
  // A JIT stamped before the previous event (mono's writer thread does this): the time wraps.
  b.Jit(t + 5, 0x500000, kPtrBase - 0x1000, 0x40, "Early:Method ()");
  return b;
}

std::vector<std::string> WantedEvents(int v, uint64_t t) {
  const std::string mvid = v >= 16 ? "0A1B" : "";
  return {"jit t" + std::to_string(t + 10) + " 7f0000001000+128 Hot:Loop (long)",
          "helper t" + std::to_string(t + 11) + " 7f0000002000+32 generic_trampoline_jit",
          "helper t" + std::to_string(t + 12) + " 7f0000002100+16 misc helper",
          "usym t" + std::to_string(t + 13) + " 7f1000000000+0 pthread_create",
          "image t" + std::to_string(t + 14) + " /tmp/Hot.exe " + mvid,
          "jit t" + std::to_string(t + 5) + " 7efffffff000+64 Early:Method ()"};
}

std::vector<uint8_t> SampleFile(int v) {
  MlpdBuilder f(v, 4242);
  f.Add(EveryOtherEvent(v)).Add(Wanted(v, kT0 + 1000));
  return f.bytes();
}

std::vector<std::string> SampleEvents(int v) {
  std::vector<std::string> e = {"header v" + std::to_string(v) + " pid 4242"};
  for (auto& s : WantedEvents(v, kT0 + 1000)) e.push_back(s);
  return e;
}

Recorder ParseAll(const std::vector<uint8_t>& bytes, size_t chunk = SIZE_MAX,
                  Parser* parser_out = nullptr) {
  Recorder rec;
  Parser local;
  Parser& p = parser_out ? *parser_out : local;
  for (size_t i = 0; i < bytes.size(); i += chunk) {
    p.Feed(std::span(bytes).subspan(i, std::min(chunk, bytes.size() - i)), rec);
  }
  return rec;
}

class EveryVersion : public ::testing::TestWithParam<int> {};

TEST_P(EveryVersion, EmitsCodeAndImagesAndSkipsEverythingElse) {
  const int v = GetParam();
  Parser p;
  Recorder rec = ParseAll(SampleFile(v), SIZE_MAX, &p);
  EXPECT_FALSE(p.failed()) << p.error();
  EXPECT_EQ(rec.events, SampleEvents(v));
  EXPECT_EQ(p.buffers(), 2u);
  EXPECT_EQ(p.bad_buffers(), 0u);
  EXPECT_EQ(p.offset(), SampleFile(v).size());
  EXPECT_EQ(p.buffered(), 0u);
}

TEST_P(EveryVersion, ByteByByte) {
  const int v = GetParam();
  EXPECT_EQ(ParseAll(SampleFile(v), 1).events, SampleEvents(v));
  EXPECT_EQ(ParseAll(SampleFile(v), 7).events, SampleEvents(v));
}

TEST_P(EveryVersion, Gzip) {
  const int v = GetParam();
  Parser p;
  EXPECT_EQ(ParseAll(Gzip(SampleFile(v)), 5, &p).events, SampleEvents(v));
  EXPECT_TRUE(p.compressed());
  EXPECT_FALSE(p.failed()) << p.error();
}

INSTANTIATE_TEST_SUITE_P(DataVersions, EveryVersion, ::testing::Values(13, 14, 15, 16, 17));

TEST(MlpdParser, HeaderFields) {
  Recorder rec = ParseAll(MlpdBuilder(17, 99).bytes());
  EXPECT_EQ(rec.header.major, 3);
  EXPECT_EQ(rec.header.ptr_size, 8);
  EXPECT_EQ(rec.header.pid, 99u);
  EXPECT_EQ(rec.header.startup_ms, 1700000000000ull);
  EXPECT_EQ(rec.header.startup_ns, MlpdBuilder::kStartupNs);
  EXPECT_EQ(rec.header.timer_overhead, 32u);
  EXPECT_EQ(rec.header.args, "log:output=x.mlpd");
  EXPECT_EQ(rec.header.arch, "x86-64");
  EXPECT_EQ(rec.header.os, "linux");
}

TEST(MlpdParser, HeaderBeforeMajor3HasNoNanosecondStartup) {
  MlpdBuilder f(13, 7, /*major=*/1);
  f.Add(Wanted(13, kT0));
  Recorder rec = ParseAll(f.bytes(), 3);
  EXPECT_FALSE(rec.header.startup_ns.has_value());
  ASSERT_EQ(rec.events.size(), 7u);
  EXPECT_EQ(rec.events[1], WantedEvents(13, kT0)[0]);
}

TEST(MlpdParser, FourBytePointers) {
  MlpdBuilder f(17, 7, 3, /*ptr_size=*/4);
  MlpdBuffer b(kT0, 0x40000000);
  b.Jit(kT0, 0x100, 0x3ffff000, 16, "Low");
  f.Add(b);
  Recorder rec = ParseAll(f.bytes());
  EXPECT_EQ(rec.events.back(), "jit t5000000000 3ffff000+16 Low");
}

TEST(MlpdParser, EmptyInputIsNotAnError) {
  Parser p;
  Recorder rec;
  p.Feed({}, rec);
  EXPECT_FALSE(p.failed());
  EXPECT_TRUE(rec.events.empty());
}

// Every prefix parses without error and emits only complete buffers; the rest completes it.
TEST(MlpdParser, TruncatedAtEveryOffset) {
  for (bool gzip : {false, true}) {
    const std::vector<uint8_t> plain = SampleFile(17);
    const std::vector<uint8_t> bytes = gzip ? Gzip(plain) : plain;
    for (size_t cut = 0; cut <= bytes.size(); ++cut) {
      Parser p;
      Recorder rec;
      p.Feed(std::span(bytes).first(cut), rec);
      ASSERT_FALSE(p.failed()) << "cut " << cut << ": " << p.error();
      ASSERT_TRUE(rec.bad_offsets.empty()) << "cut " << cut;
      // Only whole units: nothing, the header, the header and one buffer, or everything.
      ASSERT_TRUE(rec.events.size() == 0 || rec.events.size() == 1 ||
                  rec.events == SampleEvents(17))
          << "cut " << cut << " gzip " << gzip;
      p.Feed(std::span(bytes).subspan(cut), rec);
      ASSERT_EQ(rec.events, SampleEvents(17)) << "cut " << cut << " gzip " << gzip;
    }
  }
}

TEST(MlpdParser, ConcatenatedGzipMembers) {
  // `|gzip` restarted, or a writer that flushes by closing members: one stream after another.
  const std::vector<uint8_t> plain = SampleFile(17);
  const size_t half = plain.size() / 2;
  std::vector<uint8_t> a = Gzip(std::vector<uint8_t>(plain.begin(), plain.begin() + half));
  std::vector<uint8_t> b = Gzip(std::vector<uint8_t>(plain.begin() + half, plain.end()));
  a.insert(a.end(), b.begin(), b.end());
  EXPECT_EQ(ParseAll(a, 11).events, SampleEvents(17));
}

TEST(MlpdParser, CorruptGzipStopsTheFile) {
  std::vector<uint8_t> z = Gzip(SampleFile(17));
  for (size_t i = 10; i < 20 && i < z.size(); ++i) z[i] ^= 0xff;
  Parser p;
  ParseAll(z, SIZE_MAX, &p);
  EXPECT_TRUE(p.failed());
  EXPECT_NE(p.error().find("gzip"), std::string::npos) << p.error();
}

TEST(MlpdParser, BadHeaderId) {
  std::vector<uint8_t> bytes = SampleFile(17);
  bytes[0] ^= 0x40;
  Parser p;
  Recorder rec = ParseAll(bytes, SIZE_MAX, &p);
  EXPECT_TRUE(p.failed());
  EXPECT_EQ(p.error_offset(), 0u);
  EXPECT_NE(p.error().find("bad header id"), std::string::npos) << p.error();
  EXPECT_TRUE(rec.events.empty());
}

TEST(MlpdParser, NewerDataVersionRefused) {
  Parser p;
  Recorder rec = ParseAll(MlpdBuilder(18).bytes(), SIZE_MAX, &p);
  EXPECT_TRUE(p.failed());
  EXPECT_NE(p.error().find("data version 18 not supported"), std::string::npos) << p.error();
  EXPECT_TRUE(rec.events.empty());
}

TEST(MlpdParser, OlderDataVersionRefused) {
  Parser p;
  ParseAll(MlpdBuilder(12, 1, 2).bytes(), SIZE_MAX, &p);
  EXPECT_TRUE(p.failed());
}

TEST(MlpdParser, HeaderStringBeyondLimit) {
  Limits limits;
  limits.max_header_string = 8;
  Parser p(limits);
  Recorder rec;
  const std::vector<uint8_t> bytes = MlpdBuilder(17).bytes();
  p.Feed(bytes, rec);
  EXPECT_TRUE(p.failed());
  EXPECT_NE(p.error().find("header string"), std::string::npos) << p.error();
}

TEST(MlpdParser, BadBufferIdStopsTheFileKeepingWhatCameBefore) {
  MlpdBuilder f(17);
  f.Add(Wanted(17, kT0)).Add(Wanted(17, kT0), /*id=*/0x12345678);
  Parser p;
  Recorder rec = ParseAll(f.bytes(), SIZE_MAX, &p);
  EXPECT_TRUE(p.failed());
  EXPECT_NE(p.error().find("bad buffer id"), std::string::npos) << p.error();
  EXPECT_EQ(rec.events.size(), 1 + WantedEvents(17, kT0).size());
}

TEST(MlpdParser, BufferLengthBeyondLimit) {
  Limits limits;
  limits.max_buffer = 1024;
  MlpdBuilder f(17);
  f.BufferHeaderOnly(1025);
  Parser p(limits);
  Recorder rec;
  p.Feed(f.bytes(), rec);
  EXPECT_TRUE(p.failed());
  EXPECT_EQ(p.error_offset(), f.bytes().size() - kBufferHeaderSize);
  EXPECT_NE(p.error().find("exceeds limit"), std::string::npos) << p.error();
  // Default limit: 64 MiB; a claim above it is refused before any byte of it is buffered.
  MlpdBuilder g(17);
  g.BufferHeaderOnly(0xffffffff);
  Parser q;
  q.Feed(g.bytes(), rec);
  EXPECT_TRUE(q.failed());
  EXPECT_EQ(q.buffered(), 0u);
}

TEST(MlpdParser, UnknownEventTypeIgnoresRestOfBufferOnly) {
  MlpdBuilder f(17);
  MlpdBuffer b(kT0, kPtrBase);
  b.Jit(kT0 + 1, 0x5000010, kPtrBase + 0x1000, 16, "Before");
  b.Event(15, 0x00, kT0 + 2);  // no such type
  b.Jit(kT0 + 3, 0x5000020, kPtrBase + 0x2000, 16, "Hidden");
  f.Add(b);
  MlpdBuffer c(kT0 + 10, kPtrBase);
  c.Jit(kT0 + 11, 0x5000030, kPtrBase + 0x3000, 16, "After");
  f.Add(c);
  Parser p;
  Recorder rec = ParseAll(f.bytes(), SIZE_MAX, &p);
  EXPECT_FALSE(p.failed());
  EXPECT_EQ(p.bad_buffers(), 1u);
  ASSERT_EQ(rec.events.size(), 4u);
  EXPECT_EQ(rec.events[1], "jit t5000000001 7f0000001000+16 Before");
  EXPECT_EQ(rec.events[2].rfind("bad: unknown event type", 0), 0u) << rec.events[2];
  EXPECT_EQ(rec.events[3], "jit t5000000011 7f0000003000+16 After");
}

// One case per kind of unexpected value inside an event: the rest of that buffer is ignored,
// the next buffer is read.
TEST(MlpdParser, MalformedEventFields) {
  struct Case {
    const char* name;
    std::function<void(MlpdBuffer&)> write;
    const char* why;
  };
  const Case cases[] = {
      {"alloc info", [](MlpdBuffer& b) { b.Event(kTypeAlloc, 0x30, kT0); }, "TYPE_ALLOC"},
      {"gc info", [](MlpdBuffer& b) { b.Event(kTypeGc, 0xc0, kT0); }, "TYPE_GC"},
      {"metadata info", [](MlpdBuffer& b) { b.Event(kTypeMetadata, 0x10, kT0); }, "TYPE_METADATA"},
      {"metadata type", [](MlpdBuffer& b) { b.Event(kTypeMetadata, 0x20, kT0).Byte(9).Sleb(0); },
       "metadata type"},
      {"method info", [](MlpdBuffer& b) { b.Event(kTypeMethod, 0x50, kT0).Sleb(0); },
       "TYPE_METHOD"},
      {"exception info", [](MlpdBuffer& b) { b.Event(kTypeException, 0x20, kT0); },
       "TYPE_EXCEPTION"},
      {"monitor info", [](MlpdBuffer& b) { b.Event(kTypeMonitor, 0x10, kT0); }, "TYPE_MONITOR"},
      {"heap info", [](MlpdBuffer& b) { b.Event(kTypeHeap, 0x60, kT0); }, "TYPE_HEAP"},
      {"sample info", [](MlpdBuffer& b) { b.Event(kTypeSample, 0x50, kT0); }, "TYPE_SAMPLE"},
      {"ubin in 17", [](MlpdBuffer& b) { b.Event(kTypeSample, 0x20, kT0); }, "UBIN"},
      {"counter type",
       [](MlpdBuffer& b) { b.Event(kTypeSample, 0x40, kT0).Uleb(1).Uleb(8).Uleb(0); },
       "counter type"},
      {"runtime info", [](MlpdBuffer& b) { b.Event(kTypeRuntime, 0x20, kT0); }, "TYPE_RUNTIME"},
      {"coverage in 17", [](MlpdBuffer& b) { b.Event(kTypeCoverage, 0x00, kT0); }, "TYPE_COVERAGE"},
      {"meta info", [](MlpdBuffer& b) { b.Event(kTypeMeta, 0x20, kT0); }, "TYPE_META"},
      {"type 11", [](MlpdBuffer& b) { b.Event(11, 0, kT0); }, "unknown event type"},
      {"unterminated name",
       [](MlpdBuffer& b) { b.Event(kTypeMethod, 0x40, kT0).Sleb(0).Sleb(0).Uleb(1).Raw({'a'}); },
       "past the end"},
      {"leb past the end",
       [](MlpdBuffer& b) {
         b.Event(kTypeGc, 0x20, kT0).Raw({0x80, 0x80});
       },
       "past the end"},
      {"time past the end",
       [](MlpdBuffer& b) {
         b.Raw({kTypeGc | 0x80, 0xff});
       },
       "past the end"},
      {"leb over 10 bytes",
       [](MlpdBuffer& b) {
         b.Event(kTypeGc, 0x20, kT0)
             .Raw({0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01});
       },
       "past the end"},
  };
  for (const Case& c : cases) {
    MlpdBuilder f(17);
    MlpdBuffer b(kT0, kPtrBase);
    c.write(b);
    f.Add(b);
    MlpdBuffer next(kT0, kPtrBase);
    next.Jit(kT0 + 1, 0x5000010, kPtrBase + 0x1000, 16, "Next");
    f.Add(next);
    Parser p;
    Recorder rec = ParseAll(f.bytes(), SIZE_MAX, &p);
    EXPECT_FALSE(p.failed()) << c.name;
    ASSERT_EQ(rec.events.size(), 3u) << c.name;
    EXPECT_NE(rec.events[1].find(c.why), std::string::npos) << c.name << ": " << rec.events[1];
    EXPECT_EQ(rec.events[2], "jit t5000000001 7f0000001000+16 Next") << c.name;
    // The bad event is the first of the first buffer, right after its 48-byte header.
    const size_t header =
        f.bytes().size() - (kBufferHeaderSize + b.size()) - (kBufferHeaderSize + next.size());
    EXPECT_EQ(rec.bad_offsets[0], header + kBufferHeaderSize) << c.name;
  }
}

// Random damage anywhere, fed in random chunks: no crash or out-of-bounds read (run it under
// ASan), and never more buffered than the file holds.
TEST(MlpdParser, RandomCorruptionIsContained) {
  std::mt19937 rng(7);
  const std::vector<uint8_t> plain = SampleFile(17);
  for (int round = 0; round < 3000; ++round) {
    const bool gzip = round % 4 == 3;
    std::vector<uint8_t> bytes = gzip ? Gzip(plain) : plain;
    const int flips = 1 + static_cast<int>(rng() % 4);
    for (int i = 0; i < flips; ++i)
      bytes[rng() % bytes.size()] ^= static_cast<uint8_t>(1 + rng() % 255);
    if (rng() % 4 == 0) bytes.resize(rng() % bytes.size());
    Parser p;
    Recorder rec;
    for (size_t off = 0; off < bytes.size();) {
      const size_t n = std::min<size_t>(1 + rng() % 64, bytes.size() - off);
      p.Feed(std::span(bytes).subspan(off, n), rec);
      off += n;
    }
    EXPECT_LE(p.buffered(), plain.size() + 64);
  }
}

TEST(MlpdSource, IndexesCodeWithProfilerTimesAndContentPid) {
  ingest::MlpdSource source("/tmp/x.mlpd");
  EXPECT_FALSE(source.content_pid().has_value());
  const std::vector<uint8_t> bytes = Gzip(SampleFile(17));
  source.Feed(std::span(bytes).first(bytes.size() / 2));
  source.Feed(std::span(bytes).subspan(bytes.size() / 2));
  ASSERT_FALSE(source.failed()) << source.error();
  EXPECT_EQ(source.content_pid(), 4242u);
  EXPECT_EQ(source.origin(), Origin::kMlpd);
  auto snap = source.code().Publish();
  auto jit = snap->Find(kPtrBase + 0x1010, std::nullopt);
  ASSERT_TRUE(jit);
  EXPECT_EQ(jit->name, "Hot:Loop (long)");
  EXPECT_EQ(jit->start, kPtrBase + 0x1000);
  EXPECT_EQ(jit->loaded_at, kT0 + 1010);
  EXPECT_FALSE(snap->Find(kPtrBase + 0x1010, kT0 + 1009).has_value());
  auto helper = snap->Find(kPtrBase + 0x2100, std::nullopt);
  ASSERT_TRUE(helper);
  EXPECT_EQ(helper->name, "misc helper");
  auto usym = snap->Find(0x7f100000000f, std::nullopt);
  ASSERT_TRUE(usym);
  EXPECT_EQ(usym->name, "pthread_create");
  EXPECT_FALSE(snap->Find(0x7f1000000010, std::nullopt).has_value());
  ASSERT_EQ(source.images().size(), 1u);
  EXPECT_EQ(source.images()[0].name, "/tmp/Hot.exe");
  EXPECT_EQ(source.records(), 5u);
}

TEST(MlpdSource, MethodCodeBuffersDoNotShadowJitNames) {
  MlpdBuilder f(17);
  MlpdBuffer b(kT0, kPtrBase);
  b.Jit(kT0 + 1, 0x5000010, kPtrBase + 0x1000, 16, "Real:Name ()");
  b.Helper(kT0 + 2, kBufferMethod, kPtrBase + 0x1000, 16);
  f.Add(b);
  ingest::MlpdSource source("/tmp/y.mlpd");
  source.Feed(f.bytes());
  auto sym = source.code().Publish()->Find(kPtrBase + 0x1004, std::nullopt);
  ASSERT_TRUE(sym);
  EXPECT_EQ(sym->name, "Real:Name ()");
}

TEST(MlpdSource, NewerVersionFailsTheSource) {
  ingest::MlpdSource source("/tmp/z.mlpd");
  source.Feed(MlpdBuilder(18).bytes());
  EXPECT_TRUE(source.failed());
  EXPECT_NE(source.error().find("data version 18"), std::string::npos);
}

}  // namespace
}  // namespace jitsym::mlpd
