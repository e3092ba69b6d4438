#include "daemon/formats/r2rmap/r2rmap_parser.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "daemon/ingest/r2rmap_source.h"

namespace jitsym::r2rmap {
namespace {

constexpr char kSig[] = "0123456789ABCDEF0123456789abcdef";

// Builds r2rmap text line by line, as crossgen2 writes it ("%08X %02X %s").
class R2rmapBuilder {
 public:
  explicit R2rmapBuilder(std::string eol = "\n") : eol_(std::move(eol)) {}
  R2rmapBuilder& Line(std::string line) {
    text_ += line + eol_;
    return *this;
  }
  R2rmapBuilder& Entry(uint32_t rva, uint32_t length, const std::string& name) {
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%08X %02X ", rva, length);
    return Line(buf + name);
  }
  // The five pseudo-entries; `entries` < 5 cuts the header short.
  R2rmapBuilder& Header(uint32_t version = 1, int entries = 5, const std::string& sig = kSig) {
    const std::string values[5] = {sig, std::to_string(version), "2", "3", "1"};
    for (int i = 0; i < entries; ++i)
      Entry(kTokenSignature - static_cast<uint32_t>(i), 0, values[i]);
    return *this;
  }
  std::string str() const { return text_; }

 private:
  std::string eol_;
  std::string text_;
};

struct Recorder : Sink {
  std::vector<std::string> events;
  Header header;
  int headers = 0;
  void OnHeader(const Header& h) override {
    header = h;
    ++headers;
    events.push_back("header " + h.signature);
  }
  void OnRecord(const Record& r) override {
    char buf[64];
    std::snprintf(buf, sizeof(buf), "@%llu %x+%x ", static_cast<unsigned long long>(r.offset),
                  r.rva, r.length);
    events.push_back(buf + std::string(r.name));
  }
};

struct Result {
  Recorder rec;
  Parser parser;
};

std::unique_ptr<Result> Parse(const std::string& text, Options options = {}) {
  auto r = std::make_unique<Result>();
  r->parser = Parser(options);
  r->parser.Feed({reinterpret_cast<const uint8_t*>(text.data()), text.size()}, r->rec);
  return r;
}

void ExpectRejected(const std::string& text, uint64_t offset, const std::string& fragment) {
  auto r = Parse(text);
  EXPECT_TRUE(r->parser.failed()) << text;
  EXPECT_EQ(r->parser.error_offset(), offset) << r->parser.error();
  EXPECT_NE(r->parser.error().find(fragment), std::string::npos) << r->parser.error();
  // Never a record from a rejected file's header part.
  EXPECT_EQ(r->parser.records(), 0u);
}

TEST(R2rmapParser, FullHeaderAndRecords) {
  const std::string text = R2rmapBuilder()
                               .Header()
                               .Entry(0x1000, 0x20, "System.String::Concat(string, string)")
                               .Entry(0x1020, 0x1234, "[CoreLib]Foo<__Canon>::Bar()")
                               .str();
  auto r = Parse(text);
  EXPECT_EQ(r->parser.state(), Parser::State::kRecords);
  EXPECT_EQ(r->rec.headers, 1);
  EXPECT_EQ(r->rec.header.signature, kSig);
  EXPECT_EQ(r->rec.header.version, 1u);
  EXPECT_EQ(r->rec.header.os, 2u);
  EXPECT_EQ(r->rec.header.arch, 3u);
  EXPECT_EQ(r->rec.header.abi, 1u);
  EXPECT_FALSE(r->rec.header.legacy);
  ASSERT_EQ(r->rec.events.size(), 3u);
  EXPECT_EQ(r->rec.events[1], "@" + std::to_string((12 + 32 + 1) + 4 * (12 + 1 + 1)) +
                                  " 1000+20 System.String::Concat(string, string)");
  EXPECT_EQ(r->rec.events[2].substr(r->rec.events[2].find(' ') + 1),
            "1020+1234 [CoreLib]Foo<__Canon>::Bar()");
  EXPECT_EQ(r->parser.records(), 2u);
  EXPECT_EQ(r->parser.offset(), text.size());
}

TEST(R2rmapParser, EnumerationNames) {
  EXPECT_EQ(OsName(2), "Linux");
  EXPECT_EQ(OsName(6), "SunOS");
  EXPECT_EQ(OsName(7), "unknown(7)");
  EXPECT_EQ(ArchName(3), "X64");
  EXPECT_EQ(ArchName(2), "ARM64");
  EXPECT_EQ(ArchName(9), "unknown(9)");
  EXPECT_EQ(AbiName(2), "Armel");
  EXPECT_EQ(AbiName(0), "Unknown");
}

TEST(R2rmapParser, CrlfLineEndings) {
  const std::string text = R2rmapBuilder("\r\n").Header().Entry(0x10, 4, "A::B()").str();
  auto r = Parse(text);
  EXPECT_FALSE(r->parser.failed()) << r->parser.error();
  EXPECT_EQ(r->rec.header.abi, 1u);
  ASSERT_EQ(r->rec.events.size(), 2u);
  EXPECT_EQ(r->rec.events[1].substr(r->rec.events[1].find(' ') + 1), "10+4 A::B()");
}

TEST(R2rmapParser, SplitMethodAppearsTwice) {
  const std::string text = R2rmapBuilder()
                               .Header()
                               .Entry(0x2000, 0x40, "Hot::Cold()")
                               .Entry(0x9000, 0x10, "Hot::Cold()")
                               .str();
  auto r = Parse(text);
  ASSERT_EQ(r->rec.events.size(), 3u);
  EXPECT_NE(r->rec.events[1].find("2000+40 Hot::Cold()"), std::string::npos);
  EXPECT_NE(r->rec.events[2].find("9000+10 Hot::Cold()"), std::string::npos);
}

TEST(R2rmapParser, FieldWidths) {
  // Lengths over 0xFF have more than two digits; short and zero-padded long fields are read.
  const std::string text = R2rmapBuilder()
                               .Header()
                               .Line("1000 12345 Long()")
                               .Line("00000000000002000 0000000010 Padded()")
                               .Line("3000\t10\tTabs() with  spaces ")
                               .str();
  auto r = Parse(text);
  ASSERT_EQ(r->rec.events.size(), 4u);
  EXPECT_NE(r->rec.events[1].find("1000+12345 Long()"), std::string::npos);
  EXPECT_NE(r->rec.events[2].find("2000+10 Padded()"), std::string::npos);
  EXPECT_NE(r->rec.events[3].find("3000+10 Tabs() with  spaces "), std::string::npos);
}

TEST(R2rmapParser, MalformedRecordsAreSkippedAndCounted) {
  const std::string text = R2rmapBuilder()
                               .Header()
                               .Line("XYZ 10 Bad()")
                               .Line("100000000 10 TooFar()")
                               .Line("1000 10")
                               .Line("")
                               .Entry(0x1000, 0x10, "Good()")
                               .str();
  auto r = Parse(text);
  EXPECT_FALSE(r->parser.failed());
  EXPECT_EQ(r->parser.records(), 1u);
  EXPECT_EQ(r->parser.malformed(), 3u);
  EXPECT_EQ(r->parser.first_malformed_offset(), R2rmapBuilder().Header().str().size());
}

TEST(R2rmapParser, EmptyInputIsNothing) {
  auto r = Parse("");
  EXPECT_EQ(r->parser.state(), Parser::State::kHeader);
  EXPECT_TRUE(r->rec.events.empty());
}

// ---- header cut short -----------------------------------------------------------------------

TEST(R2rmapParser, HeaderCutShortAfterVersionIsTolerated) {
  for (int entries : {2, 3, 4}) {
    const std::string text = R2rmapBuilder().Header(1, entries).Entry(0x500, 0x10, "M()").str();
    auto r = Parse(text);
    EXPECT_FALSE(r->parser.failed()) << entries << ": " << r->parser.error();
    EXPECT_EQ(r->rec.headers, 1);
    EXPECT_EQ(r->rec.header.signature, kSig);
    EXPECT_EQ(r->rec.header.version, 1u);
    EXPECT_EQ(r->rec.header.os.has_value(), entries > 2);
    EXPECT_EQ(r->rec.header.arch.has_value(), entries > 3);
    EXPECT_FALSE(r->rec.header.abi.has_value());
    EXPECT_EQ(r->parser.records(), 1u) << entries;
  }
}

TEST(R2rmapParser, HeaderCutShortBeforeVersionRejects) {
  const std::string sig_line = R2rmapBuilder().Header(1, 1).str();
  ExpectRejected(sig_line + "00000500 10 M()\n", sig_line.size(), "FFFFFFFE (format version)");
}

TEST(R2rmapParser, HeaderOnlySignatureSoFarWaits) {
  auto r = Parse(R2rmapBuilder().Header(1, 1).str());
  EXPECT_EQ(r->parser.state(), Parser::State::kHeader);
  EXPECT_EQ(r->parser.header().signature, kSig);  // known early: the image's key
  EXPECT_EQ(r->rec.headers, 0);
}

// ---- header rejected ------------------------------------------------------------------------

TEST(R2rmapParser, WrongFirstToken) {
  ExpectRejected(R2rmapBuilder().Entry(0x1000, 0x10, "M()").str(), 0, "not an r2rmap");
  ExpectRejected("hello world\n", 0, "not an r2rmap");
  ExpectRejected("\n", 0, "not an r2rmap");
  ExpectRejected(R2rmapBuilder().Entry(kTokenVersion, 0, "1").str(), 0,
                 "FFFFFFFE (format version) where FFFFFFFF (signature) was expected");
}

TEST(R2rmapParser, EntriesOutOfOrder) {
  const std::string sig = R2rmapBuilder().Header(1, 1).str();
  ExpectRejected(sig + R2rmapBuilder().Entry(kTokenOs, 0, "2").str(), sig.size(),
                 "FFFFFFFD (OS) where FFFFFFFE (format version) was expected");
  const std::string two = R2rmapBuilder().Header(1, 2).str();
  ExpectRejected(two + R2rmapBuilder().Entry(kTokenAbi, 0, "1").Entry(kTokenArch, 0, "3").str(),
                 two.size(), "FFFFFFFB (ABI) where FFFFFFFD (OS) was expected");
}

TEST(R2rmapParser, EntryRepeated) {
  const std::string sig = R2rmapBuilder().Header(1, 1).str();
  ExpectRejected(sig + sig, sig.size(), "FFFFFFFF (signature) repeated or out of order");
  const std::string three = R2rmapBuilder().Header(1, 3).str();
  ExpectRejected(three + R2rmapBuilder().Entry(kTokenOs, 0, "2").str(), three.size(),
                 "FFFFFFFD (OS) repeated");
}

TEST(R2rmapParser, EntrySkipped) {
  const std::string two = R2rmapBuilder().Header(1, 2).str();
  ExpectRejected(two + R2rmapBuilder().Entry(kTokenArch, 0, "3").str(), two.size(),
                 "FFFFFFFC (architecture) where FFFFFFFD (OS) was expected");
  const std::string four = R2rmapBuilder().Header(1, 4).str();
  ExpectRejected(four + "GARBAGE\n", four.size(), "FFFFFFFB (ABI) or a record");
}

TEST(R2rmapParser, EntryRepeatedAfterHeaderRejectsEvenAfterRecords) {
  const std::string head = R2rmapBuilder().Header().Entry(0x1000, 0x10, "M()").str();
  auto r = Parse(head + R2rmapBuilder().Entry(kTokenAbi, 0, "1").str());
  EXPECT_TRUE(r->parser.failed());
  EXPECT_EQ(r->parser.error_offset(), head.size());
  EXPECT_NE(r->parser.error().find("FFFFFFFB (ABI) repeated after the header"), std::string::npos);
}

TEST(R2rmapParser, BadSignature) {
  for (const std::string& sig :
       {std::string(31, 'A'), std::string(33, 'A'), std::string(31, 'A') + "G", std::string(""),
        std::string("{01234567-89AB-CDEF-0123-456789ABCDEF}"), std::string(kSig) + " x"}) {
    ExpectRejected(R2rmapBuilder().Header(1, 1, sig).str(), 0, "is not 32 hex digits");
  }
}

TEST(R2rmapParser, NonZeroLengthOnEachPseudoEntry) {
  for (int i = 0; i < kHeaderEntries; ++i) {
    R2rmapBuilder b;
    b.Header(1, i);
    const size_t at = b.str().size();
    const std::string values[5] = {kSig, "1", "2", "3", "1"};
    b.Entry(kTokenSignature - static_cast<uint32_t>(i), 1, values[i]);
    ExpectRejected(b.str(), at, "has length 1; header entries have length 00");
  }
}

TEST(R2rmapParser, HeaderValuesMustBeDecimal) {
  for (int i = 1; i < kHeaderEntries; ++i) {
    for (const char* bad : {"0x2", "-1", "", "4294967296", "2 3", "two"}) {
      R2rmapBuilder b;
      b.Header(1, i);
      const size_t at = b.str().size();
      b.Entry(kTokenSignature - static_cast<uint32_t>(i), 0, bad);
      ExpectRejected(b.str(), at, "is not a decimal 32-bit number");
    }
  }
}

TEST(R2rmapParser, UnknownVersionReadsHeaderRefusesRecords) {
  for (uint32_t version : {0u, 2u, 99u}) {
    auto r = Parse(R2rmapBuilder().Header(version).Entry(0x1000, 0x10, "M()").str());
    EXPECT_TRUE(r->parser.refused()) << version;
    EXPECT_FALSE(r->parser.failed());
    EXPECT_EQ(r->rec.headers, 1);
    EXPECT_EQ(r->rec.header.version, version);
    EXPECT_EQ(r->rec.header.abi, 1u);
    EXPECT_EQ(r->parser.records(), 0u);
    EXPECT_NE(r->parser.error().find("version " + std::to_string(version) + " is not supported"),
              std::string::npos);
  }
}

TEST(R2rmapParser, HeaderlessLegacyFilesOnlyWhenAllowed) {
  const std::string text = R2rmapBuilder().Entry(0x1000, 0x10, "M()").Entry(0x2000, 8, "N()").str();
  auto r = Parse(text, Options{.allow_headerless = true});
  EXPECT_FALSE(r->parser.failed()) << r->parser.error();
  EXPECT_TRUE(r->rec.header.legacy);
  EXPECT_EQ(r->parser.records(), 2u);
  EXPECT_TRUE(Parse(text)->parser.failed());
  // A legacy-named file that does have a header is read as version 1.
  auto v1 = Parse(R2rmapBuilder().Header().Entry(0x10, 1, "M()").str(),
                  Options{.allow_headerless = true});
  EXPECT_FALSE(v1->rec.header.legacy);
  EXPECT_EQ(v1->parser.records(), 1u);
}

TEST(R2rmapParser, HeaderLineTooLongRejects) {
  Options o;
  o.max_line = 64;
  auto r = Parse("FFFFFFFF 00 " + std::string(100, '0') + "\n", o);
  EXPECT_TRUE(r->parser.failed());
  EXPECT_NE(r->parser.error().find("line longer than 64 bytes"), std::string::npos);
}

// A record line over the limit (a name of megabytes) is skipped like any malformed line; the
// records around it stay, whether the long line arrives whole or cut anywhere.
TEST(R2rmapParser, RecordLineTooLongIsSkipped) {
  Options o;
  o.max_line = 64;
  const std::string head = R2rmapBuilder().Header().Entry(0x1000, 0x10, "Before()").str();
  const std::string text =
      head + "00002000 10 " + std::string(100, 'x') + "\n00003000 10 After()\n";
  const std::string after = "@" + std::to_string(text.size() - 20) + " 3000+10 After()";
  for (size_t chunk : {text.size(), size_t{1}, size_t{7}, size_t{50}}) {
    SCOPED_TRACE(chunk);
    auto r = std::make_unique<Result>();
    r->parser = Parser(o);
    for (size_t i = 0; i < text.size(); i += chunk) {
      const std::string_view part = std::string_view(text).substr(i, chunk);
      r->parser.Feed({reinterpret_cast<const uint8_t*>(part.data()), part.size()}, r->rec);
    }
    EXPECT_FALSE(r->parser.failed()) << r->parser.error();
    EXPECT_EQ(r->parser.malformed(), 1u);
    EXPECT_EQ(r->parser.first_malformed_offset(), head.size());
    EXPECT_EQ(r->parser.offset(), text.size());
    EXPECT_EQ(r->parser.records(), 2u);
    ASSERT_EQ(r->rec.events.size(), 3u);
    EXPECT_EQ(r->rec.events[1], "@" + std::to_string(head.size() - 21) + " 1000+10 Before()");
    EXPECT_EQ(r->rec.events[2], after);
  }
}

// ---- incremental reading --------------------------------------------------------------------

std::string GoodFile(const std::string& eol) {
  return R2rmapBuilder(eol)
      .Header()
      .Entry(0x1000, 0x20, "A::B(int, string)")
      .Entry(0x1020, 0x100, "C`1[System.__Canon]::D()")
      .Entry(0x8000, 0x10, "A::B(int, string)")
      .str();
}

TEST(R2rmapParser, TruncatedAtEveryByte) {
  for (const std::string eol : {"\n", "\r\n"}) {
    const std::string text = GoodFile(eol);
    const auto whole = Parse(text);
    for (size_t k = 0; k <= text.size(); ++k) {
      auto r = Parse(text.substr(0, k));
      ASSERT_FALSE(r->parser.failed()) << "prefix " << k << ": " << r->parser.error();
      // Exactly the complete lines were parsed.
      const size_t complete = text.substr(0, k).rfind('\n');
      const uint64_t consumed = complete == std::string::npos ? 0 : complete + 1;
      EXPECT_EQ(r->parser.offset(), consumed) << k;
      ASSERT_LE(r->rec.events.size(), whole->rec.events.size());
      for (size_t i = 0; i < r->rec.events.size(); ++i) {
        EXPECT_EQ(r->rec.events[i], whole->rec.events[i]) << "prefix " << k;
      }
      // Header entries before the cut are already known.
      EXPECT_EQ(r->parser.header().signature.empty(), k < 44 + eol.size()) << k;
    }
  }
}

TEST(R2rmapParser, EveryChunkingGivesTheSameRecords) {
  const std::string text = GoodFile("\r\n");
  const auto whole = Parse(text);
  for (size_t cut = 0; cut <= text.size(); ++cut) {
    Recorder rec;
    Parser p;
    p.Feed({reinterpret_cast<const uint8_t*>(text.data()), cut}, rec);
    p.Feed({reinterpret_cast<const uint8_t*>(text.data()) + cut, text.size() - cut}, rec);
    EXPECT_EQ(rec.events, whole->rec.events) << cut;
  }
  Recorder rec;
  Parser p;
  for (char c : text) p.Feed({reinterpret_cast<const uint8_t*>(&c), 1}, rec);
  EXPECT_EQ(rec.events, whole->rec.events);
}

TEST(R2rmapParser, RejectionIsTheSameWhateverTheChunking) {
  const std::string text = R2rmapBuilder().Header(1, 2).Entry(kTokenArch, 0, "3").str();
  const auto whole = Parse(text);
  ASSERT_TRUE(whole->parser.failed());
  for (size_t k = 0; k <= text.size(); ++k) {
    auto r = Parse(text.substr(0, k));
    if (r->parser.failed()) {
      EXPECT_EQ(r->parser.error(), whole->parser.error()) << k;
    }
    EXPECT_EQ(r->parser.failed(), k == text.size()) << k;  // only once the bad line is complete
  }
}

// ---- the source -----------------------------------------------------------------------------

TEST(R2rmapSource, IndexesAtRvaAndRejectsWholeFileOnLateHeaderError) {
  ingest::R2rmapSource src("/x/Foo.ni.r2rmap");
  const std::string good = GoodFile("\n");
  src.Feed({reinterpret_cast<const uint8_t*>(good.data()), good.size()});
  EXPECT_EQ(src.image_signature(), kSig);
  EXPECT_EQ(src.records(), 3u);
  auto snap = src.code().Publish();
  auto sym = snap->Find(0x8004, std::nullopt);
  ASSERT_TRUE(sym);
  EXPECT_EQ(sym->name, "A::B(int, string)");
  EXPECT_EQ(sym->start, 0x8000u);
  const std::string bad = R2rmapBuilder().Entry(kTokenAbi, 0, "1").str();
  src.Feed({reinterpret_cast<const uint8_t*>(bad.data()), bad.size()});
  EXPECT_TRUE(src.failed());
  EXPECT_EQ(src.records(), 0u);
  EXPECT_FALSE(src.code().Publish()->Find(0x8004, std::nullopt));
}

TEST(R2rmapSource, FileNames) {
  std::string mvid;
  EXPECT_EQ(ingest::R2rmapImageName("System.Private.CoreLib.ni.r2rmap"), "System.Private.CoreLib");
  EXPECT_EQ(ingest::R2rmapImageName(".ni.r2rmap"), std::nullopt);
  EXPECT_EQ(ingest::R2rmapImageName("Foo.r2rmap"), std::nullopt);
  EXPECT_EQ(ingest::R2rmapImageName("Foo.ni.r2rmap.tmp"), std::nullopt);
  EXPECT_EQ(
      ingest::R2rmapImageName("mscorlib.ni.{0D2A1B3C-4D5E-6F70-8192-A3B4C5D6E7F8}.map", &mvid),
      "mscorlib");
  EXPECT_EQ(mvid, "{0D2A1B3C-4D5E-6F70-8192-A3B4C5D6E7F8}");
  EXPECT_EQ(ingest::R2rmapImageName("mscorlib.ni.{0D2A1B3C-4D5E-6F70-8192-A3B4C5D6E7F}.map"),
            std::nullopt);
  EXPECT_EQ(ingest::R2rmapImageName("perf-123.map"), std::nullopt);
  auto match = ingest::MatchFile("Foo.Bar.ni.r2rmap");
  ASSERT_TRUE(match);
  EXPECT_EQ(match->origin, Origin::kR2rmap);
  EXPECT_EQ(match->image, "Foo.Bar");
  EXPECT_FALSE(match->pid);
}

}  // namespace
}  // namespace jitsym::r2rmap
