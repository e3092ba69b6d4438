// The wire protocol codec: scalars, requests, responses, hostile input.
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <string>

#include "proto/json_reader.h"
#include "proto/json_writer.h"
#include "proto/protocol.h"

namespace jitsym::proto {
namespace {

// ---- scalars ----------------------------------------------------------------------------------

TEST(ParseAddressTest, AcceptsHexWithAndWithoutPrefix) {
  EXPECT_EQ(ParseAddress("0x7f00"), 0x7f00u);
  EXPECT_EQ(ParseAddress("7f00"), 0x7f00u);
  EXPECT_EQ(ParseAddress("0X7F00"), 0x7f00u);
  EXPECT_EQ(ParseAddress("DEADbeef"), 0xdeadbeefu);
  EXPECT_EQ(ParseAddress("0"), 0u);
  EXPECT_EQ(ParseAddress("ffffffffffffffff"), UINT64_MAX);
  EXPECT_EQ(ParseAddress("0x00000000000000001"), 1u);  // leading zeros do not overflow
}

TEST(ParseAddressTest, RejectsEmptyAndPrefixOnly) {
  EXPECT_FALSE(ParseAddress(""));
  EXPECT_FALSE(ParseAddress("0x"));
  EXPECT_FALSE(ParseAddress("0X"));
}

TEST(ParseAddressTest, RejectsOverflow) {
  EXPECT_FALSE(ParseAddress("10000000000000000"));  // 17 significant digits
  EXPECT_FALSE(ParseAddress("0x1ffffffffffffffff"));
}

TEST(ParseAddressTest, RejectsNonHex) {
  EXPECT_FALSE(ParseAddress("0xzz"));
  EXPECT_FALSE(ParseAddress("12g"));
  EXPECT_FALSE(ParseAddress(" 0x1"));
  EXPECT_FALSE(ParseAddress("0x1 "));
  EXPECT_FALSE(ParseAddress("-1"));
  EXPECT_FALSE(ParseAddress("+1"));
  EXPECT_FALSE(ParseAddress("0x0x1"));
}

TEST(FormatAddressTest, LowerCaseNoPadding) {
  EXPECT_EQ(FormatAddress(0), "0x0");
  EXPECT_EQ(FormatAddress(0x7F00ABCDu), "0x7f00abcd");
  EXPECT_EQ(FormatAddress(UINT64_MAX), "0xffffffffffffffff");
}

TEST(ParseTimeTest, Nanoseconds) {
  EXPECT_EQ(ParseTime("123456789"), 123456789u);
  EXPECT_EQ(ParseTime("0"), 0u);
  EXPECT_EQ(ParseTime("18446744073709551615"), UINT64_MAX);
  EXPECT_FALSE(ParseTime("18446744073709551616"));
}

TEST(ParseTimeTest, SecondsAsPerfScriptPrintsThem) {
  EXPECT_EQ(ParseTime("219.895069"), 219895069000u);
  EXPECT_EQ(ParseTime("0.000000001"), 1u);
  EXPECT_EQ(ParseTime("1.5"), 1500000000u);
  EXPECT_EQ(ParseTime("18446744073.709551615"), UINT64_MAX);
  EXPECT_FALSE(ParseTime("18446744073.709551616"));
  EXPECT_FALSE(ParseTime("99999999999.0"));
}

TEST(ParseTimeTest, RejectsMalformed) {
  EXPECT_FALSE(ParseTime(""));
  EXPECT_FALSE(ParseTime("1."));
  EXPECT_FALSE(ParseTime(".5"));
  EXPECT_FALSE(ParseTime("."));
  EXPECT_FALSE(ParseTime("1e9"));
  EXPECT_FALSE(ParseTime("-1"));
  EXPECT_FALSE(ParseTime("-1.5"));
  EXPECT_FALSE(ParseTime("1.1234567891"));  // 10 fractional digits
  EXPECT_FALSE(ParseTime("1.2.3"));
  EXPECT_FALSE(ParseTime(" 1"));
  EXPECT_FALSE(ParseTime("0x10"));
}

// ---- JSON primitives --------------------------------------------------------------------------

std::string Quoted(std::string_view s) {
  std::string out;
  json::AppendString(s, &out);
  return out;
}

TEST(JsonWriterTest, EscapesControlCharacters) {
  EXPECT_EQ(Quoted("a\"b\\c\n\t\r\b\f"), R"("a\"b\\c\n\t\r\b\f")");
  EXPECT_EQ(Quoted(std::string_view("\x01\x1f\0", 3)), R"("\u0001\u001f\u0000")");
}

TEST(JsonWriterTest, KeepsValidUtf8) {
  const std::string text = "caf\xc3\xa9 \xe6\x97\xa5 \xf0\x9f\x98\x80";
  EXPECT_EQ(Quoted(text), "\"" + text + "\"");
}

TEST(JsonWriterTest, ReplacesInvalidUtf8) {
  const std::string fffd = "\xef\xbf\xbd";
  EXPECT_EQ(Quoted("\xff"), "\"" + fffd + "\"");
  EXPECT_EQ(Quoted("a\xc3"), "\"a" + fffd + "\"");                      // truncated sequence
  EXPECT_EQ(Quoted("\xc0\xaf"), "\"" + fffd + fffd + "\"");             // overlong
  EXPECT_EQ(Quoted("\xed\xa0\x80"), "\"" + fffd + fffd + fffd + "\"");  // surrogate
  EXPECT_EQ(Quoted("\xf4\x90\x80\x80"), "\"" + fffd + fffd + fffd + fffd + "\"");
  EXPECT_EQ(Quoted("\x80x"), "\"" + fffd + "x\"");
}

// Strings long enough for the 16-byte scanning paths, with the interesting bytes at every
// position: what the writer escapes the reader must give back.
TEST(JsonWriterTest, RoundTripsThroughTheReaderAtEveryPosition) {
  const std::vector<std::string> pieces = {"a",   "Z",        "\"",           "\\",
                                           "\n",  "\x01",     "\x1f",         " ",
                                           "/",   "\xc3\xa9", "\xe6\x97\xa5", "\xf0\x9f\x98\x80",
                                           "\x7f"};
  std::mt19937 rng(7);
  for (int i = 0; i < 5000; ++i) {
    std::string text;
    const size_t n = rng() % 60;
    for (size_t k = 0; k < n; ++k) text += pieces[rng() % (k % 5 == 0 ? pieces.size() : 2)];
    const std::string encoded = Quoted(text);
    json::JsonReader r(encoded);
    std::string_view decoded;
    ASSERT_TRUE(r.ReadString(&decoded)) << r.error();
    ASSERT_TRUE(r.AtEnd());
    ASSERT_EQ(decoded, text);
    ASSERT_EQ(nlohmann::json::parse(encoded).get<std::string>(), text);
  }
}

TEST(JsonWriterTest, ArbitraryBytesAlwaysGiveValidJson) {
  std::mt19937 rng(11);
  for (int i = 0; i < 5000; ++i) {
    std::string bytes(rng() % 70, '\0');
    for (char& c : bytes) c = static_cast<char>(rng() % 4 == 0 ? rng() % 256 : 'a' + rng() % 26);
    const std::string encoded = Quoted(bytes);
    ASSERT_NO_THROW(nlohmann::json::parse(encoded)) << encoded;
  }
}

TEST(JsonReaderTest, DecodesEscapes) {
  json::JsonReader r(R"("a\"\\\/\b\f\n\r\t\u00e9\ud83d\ude00\ud800x")");
  std::string_view s;
  ASSERT_TRUE(r.ReadString(&s));
  EXPECT_EQ(s, "a\"\\/\b\f\n\r\t\xc3\xa9\xf0\x9f\x98\x80\xef\xbf\xbdx");
}

TEST(JsonReaderTest, RejectsBadStrings) {
  for (const char* text : {"\"abc", "\"a\nb\"", R"("\x")", R"("\u12")", R"("\u12zz")", "\"\\"}) {
    json::JsonReader r(text);
    std::string_view s;
    EXPECT_FALSE(r.ReadString(&s)) << text;
    EXPECT_FALSE(r.ok()) << text;
  }
}

TEST(JsonReaderTest, NumberGrammar) {
  for (const char* good : {"0", "-0", "12", "-0.5e+3", "1E9", "3.25"}) {
    json::JsonReader r(good);
    std::string_view n;
    EXPECT_TRUE(r.ReadNumber(&n) && r.AtEnd() && n == good) << good;
  }
  for (const char* bad : {"-", "1.", ".5", "1e", "1e+", "+1", "--1"}) {
    json::JsonReader r(bad);
    std::string_view n;
    EXPECT_FALSE(r.ReadNumber(&n) && r.AtEnd()) << bad;
  }
  json::JsonReader leading_zero("01");
  std::string_view n;
  EXPECT_TRUE(leading_zero.ReadNumber(&n));
  EXPECT_FALSE(leading_zero.AtEnd());  // "0" then garbage
}

TEST(JsonReaderTest, CopyIsCompactAndSanitized) {
  json::JsonReader r(" { \"a\" : [ 1 , true , null , \"x\xff\" ] , \"b\" : { } } ");
  std::string out;
  ASSERT_TRUE(r.Copy(&out));
  EXPECT_EQ(out, "{\"a\":[1,true,null,\"x\xef\xbf\xbd\"],\"b\":{}}");
}

TEST(JsonReaderTest, RejectsTrailingCommasAndMissingSeparators) {
  for (const char* text :
       {"[1,]", "{\"a\":1,}", "[1 2]", "{\"a\" 1}", "{\"a\":1 \"b\":2}", "{,}", "[,1]", "{1:2}"}) {
    json::JsonReader r(text);
    EXPECT_FALSE(r.Skip()) << text;
  }
}

TEST(JsonReaderTest, DepthIsLimited) {
  const std::string deep(100000, '[');
  json::JsonReader r(deep);
  EXPECT_FALSE(r.Skip());
  EXPECT_NE(r.error().find("nesting"), std::string::npos);
}

// ---- requests ---------------------------------------------------------------------------------

Request RoundTrip(const Request& request) {
  std::string line;
  EncodeRequest(request, &line);
  EXPECT_EQ(line.back(), '\n');
  line.pop_back();
  EXPECT_EQ(line.find('\n'), std::string::npos);
  DecodeRequestResult decoded = DecodeRequest(line);
  EXPECT_TRUE(decoded.request) << line;
  return decoded.request ? *decoded.request : Request{};
}

TEST(RequestCodecTest, LookupRoundTrip) {
  LookupRequest lookup;
  lookup.pid = 1234;
  lookup.image = "/usr/lib/libfoo.so";
  lookup.origin = "jitdump";
  lookup.time = 219895069000;
  lookup.addrs.push_back({0x7f0000001000, std::nullopt, "", ""});
  lookup.addrs.push_back({UINT64_MAX, 5, "", ""});
  lookup.addrs.push_back({0, std::nullopt, "", ""});
  const Request decoded = RoundTrip({"\"req-1\"", lookup});
  EXPECT_EQ(decoded.id_json, "\"req-1\"");
  const auto& got = std::get<LookupRequest>(decoded.body);
  EXPECT_EQ(got.pid, 1234);
  EXPECT_EQ(got.image, "/usr/lib/libfoo.so");
  EXPECT_EQ(got.origin, "jitdump");
  EXPECT_EQ(got.time, 219895069000u);
  ASSERT_EQ(got.addrs.size(), 3u);
  EXPECT_EQ(got.addrs[0].addr, 0x7f0000001000u);
  EXPECT_FALSE(got.addrs[0].time);
  EXPECT_EQ(got.addrs[1].addr, UINT64_MAX);
  EXPECT_EQ(got.addrs[1].time, 5u);
  EXPECT_EQ(got.addrs[2].addr, 0u);
  for (const AddressQuery& q : got.addrs) EXPECT_TRUE(q.error.empty());
}

TEST(RequestCodecTest, OtherOpsRoundTrip) {
  EXPECT_TRUE(std::holds_alternative<ProcessesRequest>(RoundTrip({"", ProcessesRequest{}}).body));
  EXPECT_TRUE(std::holds_alternative<StatsRequest>(RoundTrip({"", StatsRequest{}}).body));
  EXPECT_TRUE(std::holds_alternative<PingRequest>(RoundTrip({"", PingRequest{}}).body));
  EXPECT_TRUE(std::holds_alternative<VersionRequest>(RoundTrip({"7", VersionRequest{}}).body));
  EXPECT_EQ(RoundTrip({"", PingRequest{}}).id_json, "");
}

DecodeRequestResult Decode(std::string_view line) { return DecodeRequest(line); }

const ErrorResponse& ErrorOf(const DecodeRequestResult& result) {
  static const ErrorResponse kNone{"<none>", "<request decoded>"};
  if (!result.error) return kNone;
  return std::get<ErrorResponse>(result.error->body);
}

TEST(RequestCodecTest, VersionDefaultsToOne) {
  EXPECT_TRUE(Decode(R"({"op":"ping"})").request);
  EXPECT_TRUE(Decode(R"({"v":1,"op":"ping"})").request);
}

TEST(RequestCodecTest, OtherVersionsAreUnsupported) {
  for (const char* line :
       {R"({"v":2,"op":"ping","id":9})", R"({"v":0,"op":"ping","id":9})",
        R"({"v":-1,"op":"ping","id":9})", R"({"v":99999999999999999999999,"op":"ping","id":9})"}) {
    const DecodeRequestResult r = Decode(line);
    EXPECT_EQ(ErrorOf(r).code, kErrUnsupportedVersion) << line;
    EXPECT_EQ(r.error->id_json, "9");
  }
  EXPECT_EQ(ErrorOf(Decode(R"({"v":"1","op":"ping"})")).code, kErrBadRequest);
  EXPECT_EQ(ErrorOf(Decode(R"({"v":1.0,"op":"ping"})")).code, kErrBadRequest);
}

TEST(RequestCodecTest, UnknownOp) {
  const DecodeRequestResult r = Decode(R"({"op":"frobnicate","id":"x"})");
  EXPECT_EQ(ErrorOf(r).code, kErrUnknownOp);
  EXPECT_NE(ErrorOf(r).message.find("frobnicate"), std::string::npos);
  EXPECT_EQ(r.error->id_json, "\"x\"");
}

TEST(RequestCodecTest, IdIsEchoedVerbatimAndCompact) {
  EXPECT_EQ(Decode(R"({"id": { "a" : [1, 2.5e3, "x"], "b": null }, "op":"ping"})").request->id_json,
            R"({"a":[1,2.5e3,"x"],"b":null})");
  EXPECT_EQ(Decode(R"({"op":"ping","id":null})").request->id_json, "null");
  EXPECT_EQ(Decode(R"({"op":"ping","id":-12})").request->id_json, "-12");
}

TEST(RequestCodecTest, IdIsEchoedInErrors) {
  // Recoverable: the JSON is valid up to and including the id.
  EXPECT_EQ(Decode(R"({"id":41,"op":"lookup","addrs":[]})").error->id_json, "41");  // no pid
  EXPECT_EQ(Decode(R"({"id":42,"op":"lookup","pid":"1","addrs":[]})").error->id_json, "42");
  EXPECT_EQ(Decode(R"({"id":43,"op":)").error->id_json, "43");
  EXPECT_EQ(Decode(R"({"op":true,"id":44})").error->id_json, "44");
  EXPECT_EQ(Decode(R"({"op":)").error->id_json, "");
}

TEST(RequestCodecTest, MalformedShapes) {
  struct Case {
    const char* line;
    const char* mentions;
  };
  const Case cases[] = {
      {"", "empty"},
      {"not json", "not JSON"},
      {"[1,2]", "object"},
      {"\"lookup\"", "object"},
      {"42", "object"},
      {"null", "object"},
      {"{", "offset"},
      {R"({"op":"ping"} trailing)", "after"},
      {R"({"op":"ping"}{"op":"ping"})", "after"},
      {R"({"v":1})", "'op'"},
      {R"({"op":1})", "'op'"},
      {R"({"op":"lookup","pid":"1234","addrs":[]})", "'pid'"},
      {R"({"op":"lookup","pid":-5,"addrs":[]})", "'pid'"},
      {R"({"op":"lookup","pid":0,"addrs":[]})", "'pid'"},
      {R"({"op":"lookup","pid":1.5,"addrs":[]})", "'pid'"},
      {R"({"op":"lookup","pid":99999999999999999999999999,"addrs":[]})", "'pid'"},
      {R"({"op":"lookup","pid":[1],"addrs":[]})", "'pid'"},
      {R"({"op":"lookup","addrs":[]})", "'pid' or 'image'"},
      {R"({"op":"lookup","pid":1})", "'addrs'"},
      {R"({"op":"lookup","pid":1,"addrs":"0x10"})", "'addrs'"},
      {R"({"op":"lookup","pid":1,"addrs":{}})", "'addrs'"},
      {R"({"op":"lookup","pid":1,"origin":7,"addrs":[]})", "'origin'"},
      {R"({"op":"lookup","pid":1,"image":false,"addrs":[]})", "'image'"},
      {R"({"op":"lookup","pid":1,"time":"1e9","addrs":[]})", "'time'"},
      {R"({"op":"lookup","pid":1,"time":true,"addrs":[]})", "'time'"},
      {R"({"op":"lookup","pid":1,"time":-3,"addrs":[]})", "'time'"},
      {R"({"op":"lookup","pid":1,"addrs":[1,]})", "trailing comma"},
      {R"({"op":"lookup","image":"/x.so","image_fd":-1,"addrs":[]})", "'image_fd'"},
      {R"({"op":"lookup","image":"/x.so","image_fd":"3","addrs":[]})", "'image_fd'"},
      {R"({"op":"lookup","image":"/x.so","image_fd":2147483648,"addrs":[]})", "'image_fd'"},
      {R"({"op":"lookup","image":"/x.so","image_fd":true,"addrs":[]})", "'image_fd'"},
      {R"({"op":"lookup","pid":1,"image_fd":3,"addrs":[]})", "'image_fd' needs 'image'"},
      {R"({"op":"lookup","image":"libc","image_fd":3,"addrs":[]})", "'image_fd' needs 'image'"},
      {R"({"op":"explain","image":"libc","image_fd":3,"addr":"0x1"})", "'image_fd' needs"},
      {"{\"op\":\"ping\",\"x\":\"a\x01\"}", "control character"},
  };
  for (const Case& c : cases) {
    const DecodeRequestResult r = Decode(c.line);
    ASSERT_TRUE(r.error) << c.line;
    EXPECT_FALSE(r.request) << c.line;
    EXPECT_EQ(ErrorOf(r).code, kErrBadRequest) << c.line;
    EXPECT_NE(ErrorOf(r).message.find(c.mentions), std::string::npos)
        << c.line << " -> " << ErrorOf(r).message;
  }
}

TEST(RequestCodecTest, ImageAloneIsEnough) {
  const auto r = Decode(R"({"op":"lookup","image":"/lib/x.so","addrs":["0x10"]})");
  ASSERT_TRUE(r.request);
  EXPECT_FALSE(std::get<LookupRequest>(r.request->body).pid);
}

TEST(RequestCodecTest, ImageDescriptorRoundTrips) {
  for (const char* line : {R"({"op":"lookup","image":"/lib/x.so","image_fd":7,"addrs":["0x10"]})",
                           R"({"op":"explain","image":"/lib/x.so","image_fd":0,"addr":"0x10"})"}) {
    const auto r = Decode(line);
    ASSERT_TRUE(r.request) << line;
    std::string wire;
    EncodeRequest(*r.request, &wire);
    const auto again = Decode(wire);
    ASSERT_TRUE(again.request) << wire;
    std::optional<int32_t> fd;
    if (auto* l = std::get_if<LookupRequest>(&again.request->body)) fd = l->image_fd;
    if (auto* e = std::get_if<ExplainRequest>(&again.request->body)) fd = e->image_fd;
    EXPECT_EQ(fd, std::string(line).find("\"image_fd\":7") != std::string::npos ? 7 : 0) << wire;
  }
  const auto none = Decode(R"({"op":"lookup","image":"/lib/x.so","image_fd":null,"addrs":[]})");
  ASSERT_TRUE(none.request);
  EXPECT_FALSE(std::get<LookupRequest>(none.request->body).image_fd);
}

TEST(RequestCodecTest, NullMeansAbsent) {
  const auto r = Decode(R"({"op":"lookup","pid":3,"image":null,"time":null,"addrs":[]})");
  ASSERT_TRUE(r.request);
  EXPECT_FALSE(std::get<LookupRequest>(r.request->body).image);
}

TEST(RequestCodecTest, UnknownMembersAreIgnored) {
  const auto r = Decode(R"({"op":"ping","future":{"x":[1,{"y":2}]},"also":"z"})");
  EXPECT_TRUE(r.request);
}

TEST(RequestCodecTest, TimeForms) {
  auto time_of = [](std::string_view t) {
    const auto r =
        Decode(std::string(R"({"op":"lookup","pid":1,"addrs":[],"time":)") + std::string(t) + "}");
    return r.request ? std::get<LookupRequest>(r.request->body).time : std::nullopt;
  };
  EXPECT_EQ(time_of("123"), 123u);
  EXPECT_EQ(time_of("\"123\""), 123u);
  EXPECT_EQ(time_of("\"219.895069\""), 219895069000u);
  EXPECT_EQ(time_of("219.895069"), 219895069000u);
  EXPECT_EQ(time_of("18446744073709551615"), UINT64_MAX);
  EXPECT_FALSE(time_of("18446744073709551616"));
  EXPECT_FALSE(time_of("\"1.\""));
}

TEST(RequestCodecTest, PerAddressErrorsDoNotFailTheBatch) {
  const auto r =
      Decode(R"({"op":"lookup","pid":1,"addrs":["0x10","zz",17,1.5,-3,true,null,)"
             R"({"addr":"0x20","time":"1.5"},{"addr":"0x30","time":"bad"},{"time":5},[1],"0x",)"
             R"("1ffffffffffffffff",{"addr":"7F","extra":[1]},"")"
             "]}");
  ASSERT_TRUE(r.request) << ErrorOf(r).message;
  const auto& a = std::get<LookupRequest>(r.request->body).addrs;
  ASSERT_EQ(a.size(), 15u);
  auto ok = [&](size_t i, uint64_t addr) {
    EXPECT_TRUE(a[i].error.empty()) << i;
    EXPECT_EQ(a[i].addr, addr) << i;
  };
  auto bad = [&](size_t i, std::string_view error, std::string_view raw) {
    EXPECT_EQ(a[i].error, error) << i;
    EXPECT_EQ(a[i].raw, raw) << i;
    EXPECT_EQ(a[i].addr, 0u) << i;
  };
  ok(0, 0x10);
  bad(1, "invalid address", "zz");
  ok(2, 17);
  bad(3, "invalid address", "1.5");
  bad(4, "invalid address", "-3");
  bad(5, "invalid address", "true");
  bad(6, "invalid address", "null");
  ok(7, 0x20);
  EXPECT_EQ(a[7].time, 1500000000u);
  bad(8, "invalid time", R"({"addr":"0x30","time":"bad"})");
  bad(9, "invalid address", R"({"time":5})");
  bad(10, "invalid address", "[1]");
  bad(11, "invalid address", "0x");
  bad(12, "invalid address", "1ffffffffffffffff");
  ok(13, 0x7f);
  EXPECT_EQ(a[14].error, "invalid address");
}

TEST(RequestCodecTest, BatchLimit) {
  std::string line = R"({"op":"lookup","pid":1,"id":5,"addrs":[)";
  for (size_t i = 0; i <= kMaxBatch; ++i) line += i ? ",0" : "0";
  line += "]}";
  const auto r = Decode(line);
  EXPECT_EQ(ErrorOf(r).code, kErrTooLarge);
  EXPECT_EQ(r.error->id_json, "5");
}

TEST(RequestCodecTest, DeepNestingIsAnErrorNotACrash) {
  const std::string deep_open(100000, '[');
  const std::string deep = deep_open + std::string(100000, ']');
  for (const std::string& line :
       {deep, "{\"id\":" + deep + ",\"op\":\"ping\"}", "{\"op\":\"ping\",\"x\":" + deep + "}",
        "{\"op\":\"lookup\",\"pid\":1,\"addrs\":[" + deep + "]}", std::string(100000, '{')}) {
    const auto r = Decode(line);
    EXPECT_EQ(ErrorOf(r).code, kErrBadRequest);
  }
}

TEST(RequestCodecTest, MutatedRequestsNeverCrash) {
  const std::string seed =
      R"({"v":1,"id":{"k":[1,"s"]},"op":"lookup","pid":12,"time":"219.895069",)"
      R"("addrs":["0x7f00",{"addr":"7f10","time":5},12,"\u00e9x"]})";
  std::mt19937 rng(12345);
  const std::string alphabet = "{}[]\",:\\ 0x1.e-tfnu\xff\x01";
  for (int i = 0; i < 20000; ++i) {
    std::string line = seed;
    const int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits; ++e) {
      const size_t pos = rng() % line.size();
      switch (rng() % 3) {
        case 0:
          line[pos] = alphabet[rng() % alphabet.size()];
          break;
        case 1:
          line.erase(pos, 1 + rng() % 8);
          break;
        default:
          line.insert(pos, 1, alphabet[rng() % alphabet.size()]);
      }
      if (line.empty()) line = "{";
    }
    const auto r = Decode(line);
    ASSERT_NE(r.request.has_value(), r.error.has_value());
    if (r.error) {
      std::string encoded;
      EncodeResponse(*r.error, &encoded);
      EXPECT_NO_THROW(nlohmann::json::parse(encoded)) << encoded;
    }
  }
}

// ---- responses --------------------------------------------------------------------------------

std::string Encoded(const Response& response) {
  std::string out;
  EncodeResponse(response, &out);
  return out;
}

Response ResponseRoundTrip(const Response& response) {
  const std::string line = Encoded(response);
  Result<Response> decoded = DecodeResponse(std::string_view(line).substr(0, line.size() - 1));
  EXPECT_TRUE(decoded) << decoded.error().message << "\n" << line;
  if (!decoded) return {};
  EXPECT_EQ(Encoded(*decoded), line);  // nothing lost or changed
  return *decoded;
}

LookupResult FullResult() {
  LookupResult r;
  r.addr = 0x7f0000001010;
  r.found = true;
  r.name = "Interpreter::Run(int)";
  r.offset = 0x10;
  r.start = 0x7f0000001000;
  r.size = 256;
  r.origin = Origin::kJitdump;
  r.source = "/tmp/jit-1234.dump";
  r.loaded_at = 123456789;
  r.incarnation = 2;
  r.file = "src/run.js";
  r.line = 42;
  r.column = 7;
  r.image = "/usr/lib/libjs.so";
  r.build_id = "0123abcd";
  r.frames.resize(2);
  r.frames[0].name = "inlined";
  r.frames[0].file = "a.js";
  r.frames[0].line = 3;
  r.frames[0].column = 4;
  r.frames[1].name = "outer";
  r.clone = ".part.0";
  return r;
}

TEST(ResponseCodecTest, LookupRoundTrip) {
  LookupResponse lookup;
  lookup.results.push_back(FullResult());
  LookupResult not_found;
  not_found.addr = 0x10;
  lookup.results.push_back(not_found);
  LookupResult bad;
  bad.error = "invalid address";
  bad.raw = "zz";
  lookup.results.push_back(bad);
  LookupResult minimal;
  minimal.addr = 5;
  minimal.found = true;
  minimal.name = "f";
  minimal.origin = Origin::kPerfmap;
  lookup.results.push_back(minimal);

  const Response decoded = ResponseRoundTrip({"{\"n\":1}", lookup});
  EXPECT_EQ(decoded.id_json, "{\"n\":1}");
  const auto& results = std::get<LookupResponse>(decoded.body).results;
  ASSERT_EQ(results.size(), 4u);
  const LookupResult& full = results[0];
  EXPECT_TRUE(full.found);
  EXPECT_EQ(full.name, "Interpreter::Run(int)");
  EXPECT_EQ(full.start, 0x7f0000001000u);
  EXPECT_EQ(full.loaded_at, 123456789u);
  EXPECT_EQ(full.incarnation, 2u);
  ASSERT_EQ(full.frames.size(), 2u);
  EXPECT_EQ(full.frames[0].column, 4u);
  EXPECT_EQ(full.clone, ".part.0");
  EXPECT_TRUE(results[3].clone.empty());
  EXPECT_EQ(results[2].raw, "zz");
  EXPECT_EQ(results[2].error, "invalid address");
  EXPECT_FALSE(results[3].loaded_at);
}

// A miss carries its reason and detail, in the plain and the compact form alike.
TEST(ResponseCodecTest, MissReasonRoundTrip) {
  for (const bool strings : {false, true}) {
    LookupResponse lookup;
    lookup.strings = strings;
    LookupResult miss;
    miss.addr = 0x10;
    miss.reason = Reason::kWrongClock;
    miss.detail = "the time looks like \"microseconds\"";
    lookup.results.push_back(miss);
    LookupResult denied;
    denied.addr = 0x20;
    denied.reason = Reason::kPermissionDenied;
    denied.error = "permission denied";
    lookup.results.push_back(denied);
    lookup.results.push_back(FullResult());
    std::string line;
    EncodeResponse({"", lookup}, &line);
    EXPECT_NE(line.find(R"("found":false,"reason":"wrong_clock","detail":)"), std::string::npos)
        << line;
    Result<Response> decoded = DecodeResponse(std::string_view(line).substr(0, line.size() - 1));
    ASSERT_TRUE(decoded) << decoded.error().message;
    const auto& results = std::get<LookupResponse>(decoded->body).results;
    ASSERT_EQ(results.size(), 3u);
    EXPECT_EQ(results[0].reason, Reason::kWrongClock);
    EXPECT_EQ(results[0].detail, "the time looks like \"microseconds\"");
    EXPECT_EQ(results[1].reason, Reason::kPermissionDenied);
    EXPECT_EQ(results[1].error, "permission denied");
    EXPECT_EQ(results[2].reason, Reason::kNone);
  }
}

// A reason this build does not know (a newer daemon) is accepted, not an error.
TEST(ResponseCodecTest, UnknownReasonIsAccepted) {
  Result<Response> r = DecodeResponse(
      R"({"v":1,"ok":true,"results":[{"addr":"0x1","found":false,"reason":"from_the_future"}]})");
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(std::get<LookupResponse>(r->body).results[0].reason, Reason::kUnknown);
}

TEST(WireEnumsTest, ReasonNamesRoundTrip) {
  for (const auto& [value, name] : kReasonNames) {
    EXPECT_EQ(ReasonName(value), name);
    EXPECT_EQ(ReasonFromName(name), value);
  }
  EXPECT_EQ(ReasonFromName("nope"), std::nullopt);
  EXPECT_EQ(ReasonName(Reason::kNone), "unknown");
}

// The daemon writes large lookup answers in pieces (head, results, tail): the pieces must be
// the bytes of the whole answer, for any split, id and fields.
TEST(ResponseCodecTest, LookupAnswerInPiecesEqualsTheWholeAnswer) {
  LookupResponse lookup;
  lookup.results.push_back(FullResult());
  LookupResult bad;
  bad.error = "invalid address";
  bad.raw = "zz";
  lookup.results.push_back(bad);
  LookupResult not_found;
  not_found.addr = 0x10;
  lookup.results.push_back(not_found);
  for (const std::string id : {"", "7", "\"x\""}) {
    for (const uint32_t fields : {uint32_t{kAllFields}, uint32_t{kFieldName | kFieldFrames}}) {
      for (size_t n = 0; n <= lookup.results.size(); ++n) {
        LookupResponse part = lookup;
        part.results.resize(n);
        part.fields = fields;
        std::string whole;
        EncodeResponse({id, part}, &whole);
        std::string pieces;
        EncodeLookupResponseBegin(id, &pieces);
        for (size_t i = 0; i < n; ++i) {
          if (i > 0) pieces.push_back(',');
          EncodeLookupResult(part.results[i], &pieces, fields);
        }
        EncodeLookupResponseEnd(&pieces);
        EXPECT_EQ(pieces, whole) << "id " << id << ", " << n << " results";
      }
    }
  }
}

// "clone" is a field of its own: sent when asked for (or all are), in both forms.
TEST(ResponseCodecTest, CloneIsAFieldOfItsOwn) {
  EXPECT_EQ(ResultFieldFromName("clone"), kFieldClone);
  EXPECT_EQ(ResultFieldNames(kFieldClone), std::vector<std::string_view>{"clone"});
  for (const bool strings : {false, true}) {
    LookupResponse lookup;
    lookup.strings = strings;
    lookup.results.push_back(FullResult());
    lookup.fields = kFieldName;
    EXPECT_EQ(Encoded({"", lookup}).find("\"clone\""), std::string::npos);
    lookup.fields = kFieldName | kFieldClone;
    const std::string line = Encoded({"", lookup});
    Result<Response> decoded = DecodeResponse(std::string_view(line).substr(0, line.size() - 1));
    ASSERT_TRUE(decoded) << decoded.error().message << "\n" << line;
    EXPECT_EQ(std::get<LookupResponse>(decoded->body).results[0].clone, ".part.0") << line;
  }
}

TEST(ResponseCodecTest, ResultStringBytesCountsEveryString) {
  LookupResult r;
  r.name = "abc";
  r.source = "/tmp/x";
  r.frames.push_back({"f", "g.cc", 1, 2});
  r.clone = ".cold";
  EXPECT_EQ(LookupResultStringBytes(r), 3u + 6u + 1u + 4u + 5u);
}

TEST(ResponseCodecTest, WireShapeMatchesTheSpec) {
  LookupResponse lookup;
  lookup.results.push_back(FullResult());
  LookupResult not_found;
  not_found.addr = 0xabc;
  lookup.results.push_back(not_found);
  LookupResult bad;
  bad.error = "invalid address";
  bad.raw = "0xzz";
  lookup.results.push_back(bad);
  const auto j = nlohmann::json::parse(Encoded({"7", lookup}));
  EXPECT_EQ(j["v"], 1);
  EXPECT_EQ(j["id"], 7);
  EXPECT_EQ(j["ok"], true);
  const auto& r0 = j["results"][0];
  EXPECT_EQ(r0["addr"], "0x7f0000001010");
  EXPECT_EQ(r0["start"], "0x7f0000001000");
  EXPECT_EQ(r0["offset"], 16);
  EXPECT_EQ(r0["line"], 42);
  EXPECT_EQ(j["results"][1], nlohmann::json::parse(R"({"addr":"0xabc","found":false})"));
  EXPECT_EQ(j["results"][2],
            nlohmann::json::parse(R"({"addr":"0xzz","found":false,"error":"invalid address"})"));

  EXPECT_EQ(nlohmann::json::parse(Encoded({"", PingResponse{}})),
            nlohmann::json::parse(R"({"v":1,"ok":true,"pong":true})"));
  EXPECT_EQ(nlohmann::json::parse(Encoded({"", VersionResponse{"0.1.0", 1}})),
            nlohmann::json::parse(R"({"v":1,"ok":true,"version":"0.1.0","protocol":1})"));
  EXPECT_EQ(nlohmann::json::parse(Encoded(MakeErrorResponse("3", kErrBadRequest, "m"))),
            nlohmann::json::parse(
                R"({"v":1,"id":3,"ok":false,"error":{"code":"bad_request","message":"m"}})"));
}

TEST(ResponseCodecTest, ProcessesRoundTrip) {
  ProcessesResponse processes;
  ProcessInfo p;
  p.pid = 1234;
  p.incarnation = 1;
  p.alive = true;
  p.uid = 1000;
  p.first_time = 5;
  p.ranges = 10;
  p.threads = 12;
  p.sources.push_back(
      {Origin::kJitdump, "/tmp/jit-1234.dump", SourceState::kFollowing, 10, 4096, ""});
  p.sources.push_back(
      {Origin::kPerfmap, "/tmp/perf-1234.map", SourceState::kError, 0, 3, "bad line 3"});
  p.nspid = 1;
  p.pid_ns = 4026532845;
  p.mnt_ns = 4026532843;
  p.cgroup = "/system.slice/docker-0123abcd.scope";
  processes.processes.push_back(p);
  processes.processes.push_back(ProcessInfo{});
  processes.unattached.push_back({"/tmp/jit-1.dump", 0, "mapped by \"nobody\""});
  const Response decoded = ResponseRoundTrip({"", processes});
  const auto& all = std::get<ProcessesResponse>(decoded.body);
  ASSERT_EQ(all.unattached.size(), 1u);
  EXPECT_EQ(all.unattached[0].path, "/tmp/jit-1.dump");
  EXPECT_EQ(all.unattached[0].reason, "mapped by \"nobody\"");
  const auto& got = all.processes;
  EXPECT_EQ(got[0].nspid, 1u);
  EXPECT_EQ(got[0].pid_ns, 4026532845u);
  EXPECT_EQ(got[0].mnt_ns, 4026532843u);
  EXPECT_EQ(got[0].cgroup, "/system.slice/docker-0123abcd.scope");
  EXPECT_FALSE(got[1].nspid);
  EXPECT_FALSE(got[1].cgroup);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].pid, 1234);
  EXPECT_EQ(got[0].first_time, 5u);
  EXPECT_EQ(got[0].uid, 1000u);
  EXPECT_FALSE(got[1].uid);
  EXPECT_EQ(got[0].threads, 12u);
  EXPECT_FALSE(got[1].threads);
  EXPECT_FALSE(got[0].last_time);
  EXPECT_EQ(got[0].sources[1].error, "bad line 3");
}

TEST(ResponseCodecTest, StatsRoundTrip) {
  StatsResponse stats;
  stats.processes = 1;
  stats.ranges = 2;
  stats.memory_bytes = 3;
  stats.files_followed = 4;
  stats.files_failed = 5;
  stats.bytes_ingested = 6;
  stats.records_ingested = 7;
  stats.queries = 8;
  stats.addresses = 9;
  stats.connections = 10;
  stats.errors = 11;
  stats.uptime_ns = UINT64_MAX;
  stats.files_untrusted = 12;
  stats.files_pending = 13;
  stats.files_over_limit = 14;
  stats.denied = 15;
  stats.files_unattached = 16;
  stats.parse_failures = 17;
  stats.parse_tables_bytes = 18;
  const Response decoded = ResponseRoundTrip({"", stats});
  const auto& got = std::get<StatsResponse>(decoded.body);
  EXPECT_EQ(got.uptime_ns, UINT64_MAX);
  EXPECT_EQ(got.files_untrusted, 12u);
  EXPECT_EQ(got.files_pending, 13u);
  EXPECT_EQ(got.files_over_limit, 14u);
  EXPECT_EQ(got.denied, 15u);
  EXPECT_EQ(got.files_unattached, 16u);
  EXPECT_EQ(got.parse_failures, 17u);
  EXPECT_EQ(got.parse_tables_bytes, 18u);
  const auto j = nlohmann::json::parse(Encoded({"", stats}));
  EXPECT_EQ(j["stats"].size(), 25u);
  EXPECT_EQ(j["stats"]["parse_failures"], 17);
  EXPECT_EQ(j["stats"]["records_ingested"], 7);
  EXPECT_EQ(j["stats"]["denied"], 15);
  EXPECT_EQ(StatsMembers(stats).size(), 25u);
}

TEST(ResponseCodecTest, RepeatedIdKeepsTheLastOne) {
  // Found by response_fuzz: the ids were concatenated into invalid JSON.
  const auto r = DecodeResponse(R"({"v":1,"id":"a","ok":true,"id":{"b":[1]},"pong":true})");
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->id_json, R"({"b":[1]})");
  std::string encoded;
  EncodeResponse(*r, &encoded);
  encoded.pop_back();
  EXPECT_TRUE(DecodeResponse(encoded)) << encoded;
}

TEST(ResponseCodecTest, OtherBodiesRoundTrip) {
  EXPECT_TRUE(std::holds_alternative<PingResponse>(ResponseRoundTrip({"", PingResponse{}}).body));
  const Response v = ResponseRoundTrip({"1", VersionResponse{"0.1.0", 1}});
  EXPECT_EQ(std::get<VersionResponse>(v.body).daemon_version, "0.1.0");
  const Response e = ResponseRoundTrip(MakeErrorResponse("\"a\"", kErrTooLarge, "too big"));
  EXPECT_EQ(std::get<ErrorResponse>(e.body).code, "too_large");
  EXPECT_EQ(e.id_json, "\"a\"");
}

TEST(ResponseCodecTest, HostileNamesStayValidJson) {
  LookupResult r;
  r.found = true;
  const std::string hostile =
      std::string("bad\xff\xfe name\n\t\"q\"\\ \xc3\x28 \xed\xa0\x80 ") + '\0' + " end";
  r.name = hostile;
  r.origin = Origin::kJitdump;
  r.file = "\xe6\x97\xa5\xe6\x9c\xac.js";
  LookupResponse lookup;
  lookup.results.push_back(r);
  const std::string line = Encoded({"", lookup});
  EXPECT_EQ(line.find('\n'), line.size() - 1);  // one line, whatever the name holds
  nlohmann::json j;
  ASSERT_NO_THROW(j = nlohmann::json::parse(line));
  const std::string name = j["results"][0]["name"];
  EXPECT_NE(name.find("\xef\xbf\xbd"), std::string::npos);
  EXPECT_NE(name.find("name\n\t\"q\"\\"), std::string::npos);
  EXPECT_EQ(name.back(), 'd');
  EXPECT_EQ(j["results"][0]["file"], "\xe6\x97\xa5\xe6\x9c\xac.js");
  const Response decoded = ResponseRoundTrip({"", lookup});
  EXPECT_EQ(std::get<LookupResponse>(decoded.body).results[0].name, name);
}

TEST(ResponseCodecTest, MalformedResponsesAreRejected) {
  const std::string deep(100000, '[');
  for (const std::string& line : std::vector<std::string>{
           "", "x", "[]", "{}", R"({"ok":true})", R"({"ok":"yes","pong":true})",
           R"({"ok":true,"results":[{"found":true}]})",
           R"({"ok":true,"results":[{"addr":"zz","found":false}]})",
           R"({"ok":true,"results":[{"addr":"0x1","found":1}]})", R"({"ok":true,"results":{}})",
           R"({"ok":true,"stats":{"ranges":-1}})", R"({"ok":true,"pong":true} x)",
           "{\"ok\":true,\"x\":" + deep + "}"}) {
    auto r = DecodeResponse(line);
    ASSERT_FALSE(r) << line;
    EXPECT_EQ(r.error().kind, ErrorKind::kMalformed) << line;
    EXPECT_FALSE(r.error().message.empty()) << line;
  }
}

TEST(ResponseCodecTest, UnknownMembersAreIgnored) {
  const auto r = DecodeResponse(
      R"({"v":1,"ok":true,"new":[1],"results":[{"addr":"0x1","found":false,"extra":{"a":1}}]})");
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(std::get<LookupResponse>(r->body).results.size(), 1u);
}

TEST(ResponseCodecTest, DecodeIntoReusesAndResets) {
  LookupResponse first;
  first.results = {FullResult(), FullResult(), FullResult()};
  LookupResponse second;
  LookupResult plain;
  plain.addr = 9;
  plain.found = true;
  plain.name = "g";
  plain.origin = Origin::kJitdump;
  second.results = {plain};

  Response response;
  std::string line = Encoded({"1", first});
  ASSERT_TRUE(DecodeResponseInto(line, &response));
  EXPECT_EQ(std::get<LookupResponse>(response.body).results.size(), 3u);
  line = Encoded({"", second});
  ASSERT_TRUE(DecodeResponseInto(line, &response));
  const auto& results = std::get<LookupResponse>(response.body).results;
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(response.id_json, "");
  EXPECT_EQ(results[0].name, "g");
  EXPECT_TRUE(results[0].file.empty());
  EXPECT_TRUE(results[0].frames.empty());
  EXPECT_FALSE(results[0].loaded_at);
  ASSERT_TRUE(DecodeResponseInto(Encoded({"", PingResponse{}}), &response));
  EXPECT_TRUE(std::holds_alternative<PingResponse>(response.body));
}

TEST(DefaultSocketPathTest, FollowsUidAndRuntimeDir) {
  const std::string path = DefaultSocketPath();
  if (geteuid() == 0) {
    EXPECT_EQ(path, "/run/jitsymd/jitsymd.sock");
  } else {
    EXPECT_NE(path.find("jitsymd"), std::string::npos);
  }
}

}  // namespace
}  // namespace jitsym::proto

namespace jitsym::proto {
namespace {

TEST(ProtoFieldsTest, RequestFieldsRoundTripAndUnknownNamesAreIgnored) {
  auto decoded =
      DecodeRequest(R"({"op":"lookup","pid":7,"addrs":["0x10"],"fields":["name","line","bogus"]})");
  ASSERT_TRUE(decoded.request);
  const auto& lookup = std::get<LookupRequest>(decoded.request->body);
  EXPECT_EQ(lookup.fields, kFieldName | kFieldPosition);
  std::string wire;
  EncodeRequest(*decoded.request, &wire);
  auto again = DecodeRequest(std::string_view(wire).substr(0, wire.size() - 1));
  ASSERT_TRUE(again.request);
  EXPECT_EQ(std::get<LookupRequest>(again.request->body).fields, kFieldName | kFieldPosition);
}

TEST(ProtoFieldsTest, BadFieldsMemberIsABadRequest) {
  auto decoded = DecodeRequest(R"({"op":"lookup","pid":7,"addrs":["0x10"],"fields":"name"})");
  EXPECT_FALSE(decoded.request);
  ASSERT_TRUE(decoded.error);
}

TEST(ProtoFieldsTest, EncoderSendsOnlyTheRequestedMembers) {
  LookupResult r;
  r.addr = 0x1010;
  r.found = true;
  r.name = "JS:*f";
  r.offset = 0x10;
  r.start = 0x1000;
  r.size = 64;
  r.origin = Origin::kJitdump;
  r.source = "/tmp/jit-1.dump";
  r.loaded_at = 5;
  r.file = "a.js";
  r.line = 3;
  std::string all, some;
  EncodeLookupResult(r, &all);
  EncodeLookupResult(r, &some, kFieldName | kFieldOffset);
  EXPECT_NE(all.find("\"source\""), std::string::npos);
  EXPECT_NE(all.find("\"line\":3"), std::string::npos);
  EXPECT_EQ(some, R"({"addr":"0x1010","found":true,"name":"JS:*f","offset":16})");
}

// A found answer without the frames debug info would give (a split DWARF part missing) says
// why, as a miss does, and the client reads it back.
TEST(ProtoFieldsTest, AFoundAnswerCarriesItsReason) {
  LookupResult r;
  r.addr = 0x1010;
  r.found = true;
  r.name = "f";
  r.origin = Origin::kElf;
  r.reason = Reason::kNoDebugInfo;
  r.detail = "no /b/a.dwo nor /b/app.dwp";
  std::string text;
  EncodeLookupResult(r, &text);
  EXPECT_NE(text.find(R"("reason":"no_debug_info","detail":"no /b/a.dwo nor /b/app.dwp")"),
            std::string::npos)
      << text;
  Response decoded;
  Status st = DecodeResponseInto(R"({"v":1,"ok":true,"results":[)" + text + "]}", &decoded);
  ASSERT_TRUE(st.ok()) << st.error().message;
  const LookupResult& back = std::get<LookupResponse>(decoded.body).results[0];
  EXPECT_TRUE(back.found);
  EXPECT_EQ(back.name, "f");
  EXPECT_EQ(back.reason, Reason::kNoDebugInfo);
  EXPECT_EQ(back.detail, r.detail);
}

// Decoded strings live in the response (LookupResponse::text): a copy keeps them while the
// original is reused for the next response.
TEST(ProtoFieldsTest, DecodedStringsLiveAsLongAsTheResponse) {
  Response first;
  Status st = DecodeResponseInto(
      R"({"v":1,"ok":true,"results":[{"addr":"0x1","found":true,"name":"fir\u0073t","origin":"elf",)"
      R"("frames":[{"name":"inner","file":"a.cc"}]}]})",
      &first);
  ASSERT_TRUE(st.ok()) << st.error().message;
  const Response copy = first;
  st = DecodeResponseInto(
      R"({"v":1,"ok":true,"results":[{"addr":"0x2","found":true,"name":"XXXXXXXXXXXXX"}]})",
      &first);
  ASSERT_TRUE(st.ok()) << st.error().message;
  const LookupResult& r = std::get<LookupResponse>(copy.body).results[0];
  EXPECT_EQ(r.name, "first");
  EXPECT_EQ(r.origin, Origin::kElf);
  EXPECT_EQ(r.frames[0].name, "inner");
  EXPECT_EQ(r.frames[0].file, "a.cc");
  EXPECT_EQ(std::get<LookupResponse>(first.body).results[0].name, "XXXXXXXXXXXXX");
}

// Every origin and state has one wire name, and names map back to them.
TEST(ProtoFieldsTest, OriginAndStateNamesRoundTrip) {
  for (const auto& [origin, name] : kOriginNames) {
    EXPECT_EQ(OriginName(origin), name);
    EXPECT_EQ(OriginFromName(name), origin);
  }
  for (const auto& [state, name] : kSourceStateNames) {
    EXPECT_EQ(SourceStateName(state), name);
    EXPECT_EQ(SourceStateFromName(name), state);
  }
  EXPECT_EQ(OriginFromName("unknown"), std::nullopt);
  EXPECT_EQ(SourceStateFromName(""), std::nullopt);
  // A name a newer daemon may send decodes as kUnknown.
  Response response;
  ASSERT_TRUE(DecodeResponseInto(
      R"({"v":1,"ok":true,"results":[{"addr":"0x1","found":true,"origin":"wasm"}]})", &response));
  EXPECT_EQ(std::get<LookupResponse>(response.body).results[0].origin, Origin::kUnknown);
}

}  // namespace
}  // namespace jitsym::proto

namespace jitsym::proto {
namespace {

// What a client sees of a result, whichever form it was decoded from.
std::string Describe(const LookupResult& r) {
  std::string s =
      FormatAddress(r.addr) + (r.found ? " found " : " - ") + std::string(r.name) + "|" +
      std::string(OriginName(r.origin)) + "|" + std::string(r.source) + "|" + std::string(r.file) +
      ":" + std::to_string(r.line) + ":" + std::to_string(r.column) + "|" + std::string(r.image) +
      "|" + std::string(r.build_id) + "|" + r.error + "|" + r.raw + "|" + std::to_string(r.offset) +
      "|" + std::to_string(r.start) + "|" + std::to_string(r.size);
  for (const Frame& f : r.frames) {
    s += " [" + std::string(f.name) + "@" + std::string(f.file) + ":" + std::to_string(f.line) +
         ":" + std::to_string(f.column) + "]";
  }
  return s;
}

LookupResponse CompactTestResponse() {
  LookupResponse lookup;
  lookup.results.push_back(FullResult());
  lookup.results.push_back(FullResult());  // owned strings: each result's get their own entry
  // Borrowed strings, as the daemon answers: one string, many answers.
  static const std::string kName = "Interp\"reter\t::Run";
  static const std::string kFile = "/src/a b.cc";
  static const std::string kEmpty;
  for (int i = 0; i < 3; ++i) {
    LookupResult& r = lookup.results.emplace_back();
    r.addr = 0x100 + i;
    r.found = true;
    r.name = kName;
    r.origin = Origin::kElf;
    r.file = kFile;
    r.line = 7;
    r.image = kFile;
    r.build_id = "abcd";
    Frame& inner = r.frames.emplace_back();
    inner.name = "inlined";
    inner.file = kFile;
    inner.line = 3;
    Frame& outer = r.frames.emplace_back();
    outer.name = kName;
    outer.file = kEmpty;  // no position known
  }
  LookupResult bad;
  bad.error = "invalid address";
  bad.raw = "zz";
  lookup.results.push_back(bad);
  LookupResult not_found;
  not_found.addr = 0x10;
  lookup.results.push_back(not_found);
  return lookup;
}

TEST(CompactFormTest, DecodesToWhatThePlainFormGives) {
  LookupResponse lookup = CompactTestResponse();
  std::string plain_line = Encoded({"1", lookup});
  lookup.strings = true;
  std::string compact_line = Encoded({"1", lookup});
  EXPECT_LT(compact_line.size(), plain_line.size());
  auto plain = DecodeResponse(plain_line);
  ASSERT_TRUE(plain) << plain.error().message;
  auto compact = DecodeResponse(compact_line);
  ASSERT_TRUE(compact) << compact.error().message << "\n" << compact_line;
  const auto& p = std::get<LookupResponse>(plain->body).results;
  const auto& c = std::get<LookupResponse>(compact->body).results;
  ASSERT_EQ(p.size(), c.size());
  for (size_t i = 0; i < p.size(); ++i) EXPECT_EQ(Describe(c[i]), Describe(p[i])) << i;
  // And a client printing the answers (jitsym --json) prints the plain form, byte for byte.
  for (size_t i = 0; i < p.size(); ++i) {
    std::string from_plain, from_compact;
    EncodeLookupResult(p[i], &from_plain);
    EncodeLookupResult(c[i], &from_compact);
    EXPECT_EQ(from_compact, from_plain);
  }
  // Copies share the table: the views stay valid when the original goes.
  Response copy = *compact;
  compact = MakeError(ErrorKind::kMalformed, "dropped");  // destroys the decoded response
  EXPECT_EQ(std::get<LookupResponse>(copy.body).results[2].name, "Interp\"reter\t::Run");
}

TEST(CompactFormTest, WireShape) {
  LookupResponse lookup = CompactTestResponse();
  lookup.strings = true;
  lookup.fields = kFieldName | kFieldPosition | kFieldFrames;
  const std::string line = Encoded({"", lookup});
  const auto j = nlohmann::json::parse(line);
  ASSERT_TRUE(j["strings"].is_array());
  // The table precedes the results, so a reader can resolve indices as it goes.
  EXPECT_LT(line.find("\"strings\""), line.find("\"results\""));
  const auto& strings = j["strings"];
  // Each borrowed string once, however many answers name it.
  std::map<std::string, int> seen;
  for (const auto& s : strings) ++seen[s.get<std::string>()];
  EXPECT_EQ(seen["Interp\"reter\t::Run"], 1);
  EXPECT_EQ(seen["/src/a b.cc"], 1);
  const auto& r = j["results"][2];
  EXPECT_EQ(strings[r["name"].get<size_t>()], "Interp\"reter\t::Run");
  EXPECT_EQ(strings[r["file"].get<size_t>()], "/src/a b.cc");
  EXPECT_FALSE(r.contains("image"));  // fields still apply
  // Frames are [name, file, line, column].
  ASSERT_EQ(r["frames"].size(), 2u);
  const auto& f0 = r["frames"][0];
  ASSERT_TRUE(f0.is_array());
  ASSERT_EQ(f0.size(), 4u);
  EXPECT_EQ(strings[f0[0].get<size_t>()], "inlined");
  EXPECT_EQ(f0[2], 3);
  EXPECT_EQ(f0[3], 0);
  EXPECT_EQ(strings[r["frames"][1][1].get<size_t>()], "");
  // Errors and unparsable input stay strings.
  EXPECT_EQ(j["results"][5]["error"], "invalid address");
  EXPECT_EQ(j["results"][5]["addr"], "zz");
}

TEST(CompactFormTest, RequestMember) {
  auto decoded = DecodeRequest(R"({"op":"lookup","pid":7,"addrs":["0x10"],"strings":true})");
  ASSERT_TRUE(decoded.request);
  EXPECT_TRUE(std::get<LookupRequest>(decoded.request->body).strings);
  std::string wire;
  EncodeRequest(*decoded.request, &wire);
  EXPECT_NE(wire.find("\"strings\":true"), std::string::npos);
  auto plain = DecodeRequest(R"({"op":"lookup","pid":7,"addrs":["0x10"]})");
  ASSERT_TRUE(plain.request);
  EXPECT_FALSE(std::get<LookupRequest>(plain.request->body).strings);
  auto bad = DecodeRequest(R"({"op":"lookup","pid":7,"addrs":["0x10"],"strings":1})");
  EXPECT_FALSE(bad.request);
  ASSERT_TRUE(bad.error);
  EXPECT_EQ(std::get<ErrorResponse>(bad.error->body).code, kErrBadRequest);
}

TEST(CompactFormTest, BadIndicesAndTablesAreRejected) {
  for (const char* line : {
           // An index with no table, past its end, a table after the results.
           R"({"v":1,"ok":true,"results":[{"addr":"0x1","found":true,"name":0}]})",
           R"({"v":1,"ok":true,"strings":["a"],"results":[{"addr":"0x1","found":true,"name":1}]})",
           R"({"v":1,"ok":true,"results":[{"addr":"0x1","found":true,"name":0}],"strings":["a"]})",
           R"({"v":1,"ok":true,"strings":["a",2],"results":[]})",
           // A second table while results point into the first.
           R"({"v":1,"ok":true,"strings":["a"],"results":[{"addr":"0x1","found":true,)"
           R"("name":0}],"strings":["bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"]})",
           R"({"v":1,"ok":true,"strings":"a","results":[]})",
           R"({"v":1,"ok":true,"strings":["a"],"results":[{"addr":"0x1","found":true,)"
           R"("frames":[[0,0,1]]}]})",
           R"({"v":1,"ok":true,"strings":["a"],"results":[{"addr":"0x1","found":true,)"
           R"("frames":[[0,0,-1,0]]}]})",
           R"({"v":1,"ok":true,"strings":["a"],"results":[{"addr":"0x1","found":true,)"
           R"("name":-1}]})",
       }) {
    EXPECT_FALSE(DecodeResponse(line)) << line;
  }
  auto ok = DecodeResponse(
      R"({"v":1,"ok":true,"strings":["a","b\u0041"],"results":[{"addr":"0x1","found":true,)"
      R"("name":1,"frames":[[0,1,2,3,"later"]]}]})");
  ASSERT_TRUE(ok) << ok.error().message;
  const auto& r = std::get<LookupResponse>(ok->body).results[0];
  EXPECT_EQ(r.name, "bA");
  ASSERT_EQ(r.frames.size(), 1u);
  EXPECT_EQ(r.frames[0].name, "a");
  EXPECT_EQ(r.frames[0].column, 3u);
}

TEST(CompactFormTest, DecodeIntoReusesTheTable) {
  LookupResponse lookup = CompactTestResponse();
  lookup.strings = true;
  Response response;
  ASSERT_TRUE(DecodeResponseInto(Encoded({"", lookup}), &response));
  LookupResponse other;
  LookupResult& r = other.results.emplace_back();
  r.addr = 1;
  r.found = true;
  r.name = "second";
  r.origin = Origin::kPerfmap;
  other.strings = true;
  ASSERT_TRUE(DecodeResponseInto(Encoded({"", other}), &response));
  const auto& results = std::get<LookupResponse>(response.body).results;
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].name, "second");
  EXPECT_EQ(results[0].file, "");
  EXPECT_TRUE(results[0].frames.empty());
  // Then a plain response into the same object: strings again, no stale views.
  other.strings = false;
  ASSERT_TRUE(DecodeResponseInto(Encoded({"", other}), &response));
  EXPECT_EQ(std::get<LookupResponse>(response.body).results[0].name, "second");
  EXPECT_EQ(std::get<LookupResponse>(response.body).results[0].name, "second");
}

TEST(JsonReaderTest, TryReadUintTakesOnlyPlainIntegers) {
  for (const auto& [text, value] : std::vector<std::pair<std::string, uint64_t>>{
           {"0", 0}, {"7", 7}, {"18446744073709551615", UINT64_MAX}, {" 42", 42}}) {
    json::JsonReader r(text);
    uint64_t v = 1;
    EXPECT_TRUE(r.TryReadUint(&v) && r.AtEnd()) << text;
    EXPECT_EQ(v, value) << text;
  }
  for (const char* other : {"18446744073709551616", "-1", "1.5", "1e3", "01", "\"1\"", ""}) {
    json::JsonReader r(other);
    uint64_t v = 1;
    EXPECT_FALSE(r.TryReadUint(&v)) << other;
    EXPECT_EQ(v, 1u) << other;
    EXPECT_TRUE(r.ok()) << other;  // nothing consumed, no error: ReadNumber decides
    EXPECT_EQ(r.position(), 0u) << other;
  }
}

}  // namespace
}  // namespace jitsym::proto
