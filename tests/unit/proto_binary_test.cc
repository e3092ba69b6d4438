// The binary lookup answer encoding: what a client decodes from it equals what it decodes from
// the JSON answer (plain and compact), on generated answers; negotiation members; hostile
// frames (every count, length and index) give errors with offsets, never a crash.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "proto/protocol.h"

namespace jitsym::proto {
namespace {

// Answers whose strings the results point into, as the daemon's point into its modules.
struct Generated {
  std::vector<std::string> strings;  // never resized after the results point into it
  LookupResponse lookup;
};

std::string RandomString(std::mt19937_64& rng) {
  static const std::vector<std::string> kPieces = {
      "main",
      "std::vector<int, std::allocator<int> >::push_back(int const&)",
      "/usr/include/x.h",
      "\xff\xfe bad utf-8 \xc3",
      "tab\there",
      std::string("nul\0in", 6),
      "caf\xc3\xa9",
      "",
      "\"q\\",
      "\xed\xa0\x80 surrogate",
      "\x01\x1f control"};
  std::string s;
  const int parts = static_cast<int>(rng() % 3);
  for (int i = 0; i < parts; ++i) s += kPieces[rng() % kPieces.size()];
  if (rng() % 8 == 0) s += std::string(rng() % 5000, static_cast<char>('a' + rng() % 26));
  return s;
}

Generated Generate(std::mt19937_64& rng, size_t n) {
  Generated g;
  g.strings.reserve(64);
  for (int i = 0; i < 64; ++i) g.strings.push_back(RandomString(rng));
  auto pick = [&]() -> std::string_view { return g.strings[rng() % g.strings.size()]; };
  auto big = [&]() -> uint64_t {
    const int bits = static_cast<int>(rng() % 65);
    return bits == 64 ? rng() : rng() & ((uint64_t{1} << bits) - 1);
  };
  for (size_t i = 0; i < n; ++i) {
    LookupResult& r = g.lookup.results.emplace_back();
    r.addr = big();
    switch (rng() % 6) {
      case 0: {  // a miss
        r.reason = static_cast<Reason>(rng() % 13);
        if (rng() % 2) r.detail = RandomString(rng);
        break;
      }
      case 1: {  // a per-address error, sometimes with the input echoed
        r.error = rng() % 2 ? "invalid address" : RandomString(rng);
        if (rng() % 2) r.raw = rng() % 3 ? RandomString(rng) : "0x12ab";
        if (rng() % 4 == 0) r.reason = Reason::kPermissionDenied;
        break;
      }
      default: {
        r.found = true;
        r.name = pick();
        r.offset = big();
        r.start = big();
        r.size = big();
        r.origin = static_cast<Origin>(rng() % 7);
        if (rng() % 2) r.source = pick();
        if (rng() % 2) r.loaded_at = big();
        if (rng() % 2) r.incarnation = big();
        if (rng() % 2) r.file = pick();
        if (rng() % 2) r.line = static_cast<uint32_t>(rng());
        if (rng() % 2) r.column = static_cast<uint32_t>(rng() % 300);
        if (rng() % 3 == 0) r.image = pick();
        if (rng() % 3 == 0) r.build_id = pick();
        if (rng() % 3 == 0) r.clone = pick();
        if (rng() % 10 == 0) r.error = RandomString(rng);
        if (rng() % 5 == 0) {  // found, without what debug info would give, and why
          r.reason = Reason::kNoDebugInfo;
          if (rng() % 2) r.detail = RandomString(rng);
        }
        const size_t frames = rng() % 3 == 0 ? rng() % 12 : 0;
        for (size_t f = 0; f < frames; ++f) {
          r.frames.push_back({pick(), pick(), static_cast<uint32_t>(rng() % 3 ? rng() : 0),
                              static_cast<uint32_t>(rng() % 100)});
        }
      }
    }
  }
  return g;
}

// The members a client sees, as text, to compare two decoded answers and print a difference.
std::string Describe(const LookupResult& r) {
  std::string s = std::to_string(r.addr) + "|" + (r.found ? "T" : "F") + "|" +
                  std::to_string(static_cast<int>(r.reason)) + "|" + r.error + "|" + r.raw + "|" +
                  r.detail + "|" + std::string(r.name) + "|" + std::to_string(r.offset) + "|" +
                  std::to_string(r.start) + "|" + std::to_string(r.size) + "|" +
                  std::to_string(static_cast<int>(r.origin)) + "|" + std::string(r.image) + "|" +
                  std::string(r.source) + "|" + std::string(r.file) + "|" + std::to_string(r.line) +
                  "|" + std::to_string(r.column) + "|" +
                  (r.loaded_at ? std::to_string(*r.loaded_at) : "-") + "|" +
                  (r.incarnation ? std::to_string(*r.incarnation) : "-") + "|" +
                  std::string(r.build_id) + "|" + std::string(r.clone) + "|";
  for (const Frame& f : r.frames) {
    s += "[" + std::string(f.name) + "," + std::string(f.file) + "," + std::to_string(f.line) +
         "," + std::to_string(f.column) + "]";
  }
  return s;
}

// Decodes an encoded binary response: the header line, then its frames (held by *frames).
Status DecodeBinary(const std::string& encoded, std::string* frames, Response* response) {
  const size_t nl = encoded.find('\n');
  if (nl == std::string::npos) return MakeError(ErrorKind::kMalformed, "no header line");
  if (Status st = DecodeResponseInto(std::string_view(encoded).substr(0, nl), response); !st) {
    return st;
  }
  auto* lookup = std::get_if<LookupResponse>(&response->body);
  if (lookup == nullptr || !lookup->binary) return MakeError(ErrorKind::kMalformed, "not binary");
  frames->assign(encoded, nl + 1);
  return DecodeBinaryLookupFrames(*frames, lookup);
}

Status DecodeFrames(const std::string& frames) {
  LookupResponse lookup;
  return DecodeBinaryLookupFrames(frames, &lookup);
}

TEST(BinaryAnswerTest, DecodesToWhatJsonDecodesTo) {
  std::mt19937_64 rng(17);
  const uint32_t kFieldMasks[] = {
      kAllFields, kFieldName | kFieldOffset | kFieldOrigin | kFieldPosition,
      kFieldName | kFieldOffset | kFieldOrigin | kFieldPosition | kFieldFrames, 0,
      kFieldFrames | kFieldClone | kFieldImage};
  Response binary_decoded;  // reused, as the client reuses its response
  std::string frames;
  for (int round = 0; round < 300; ++round) {
    Generated g = Generate(rng, 1 + rng() % 200);
    g.lookup.fields = kFieldMasks[rng() % std::size(kFieldMasks)];
    Response response{"{\"n\":" + std::to_string(round) + "}", g.lookup};
    auto& lookup = std::get<LookupResponse>(response.body);
    std::string json;
    lookup.strings = round % 2 == 1;
    EncodeResponse(response, &json);
    json.pop_back();
    const Result<Response> from_json = DecodeResponse(json);
    ASSERT_TRUE(from_json) << from_json.error().message;

    lookup.binary = true;
    std::string binary;
    EncodeResponse(response, &binary);
    ASSERT_TRUE(DecodeBinary(binary, &frames, &binary_decoded)) << round;
    EXPECT_EQ(binary_decoded.id_json, response.id_json);

    const auto& a = std::get<LookupResponse>(from_json->body).results;
    const auto& b = std::get<LookupResponse>(binary_decoded.body).results;
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i) {
      ASSERT_EQ(Describe(a[i]), Describe(b[i])) << "round " << round << " result " << i;
    }
  }
}

TEST(BinaryAnswerTest, SmallFramesDecodeToTheSameResults) {
  std::mt19937_64 rng(4);
  Generated g = Generate(rng, 500);
  g.lookup.fields = kAllFields;
  for (const size_t target : {size_t{1}, size_t{100}, size_t{4096}, kBinaryFrameTarget}) {
    std::string frames;
    BinaryAnswerEncoder encoder;
    std::span<const LookupResult> rest(g.lookup.results);
    size_t count = 0;
    while (!rest.empty()) {
      const size_t n = encoder.EncodeFrame(rest, kAllFields, target, &frames);
      ASSERT_GE(n, 1u);
      rest = rest.subspan(n);
      // Later frames refer to earlier frames' strings, until the encoder forgets them.
      if (++count % 3 == 0) encoder.ForgetStrings();
    }
    EncodeBinaryLookupEnd(&frames);
    if (target == 1) {
      EXPECT_EQ(count, 500u);
    }
    LookupResponse decoded;
    ASSERT_TRUE(DecodeBinaryLookupFrames(frames, &decoded)) << target;
    ASSERT_EQ(decoded.results.size(), 500u);
    for (size_t i = 0; i < 500; ++i) {
      Response one{"", LookupResponse{}};
      // Through JSON, the reference: U+FFFD replacements included.
      std::string json;
      EncodeLookupResult(g.lookup.results[i], &json);
      const Result<Response> ref = DecodeResponse("{\"ok\":true,\"results\":[" + json + "]}");
      ASSERT_TRUE(ref);
      ASSERT_EQ(Describe(std::get<LookupResponse>(ref->body).results[0]),
                Describe(decoded.results[i]));
    }
  }
}

TEST(BinaryAnswerTest, EmptyAnswerIsTheHeaderAndTheEndMarker) {
  Response response{"7", LookupResponse{}};
  std::get<LookupResponse>(response.body).binary = true;
  std::string encoded;
  EncodeResponse(response, &encoded);
  EXPECT_EQ(encoded, std::string("{\"v\":1,\"id\":7,\"ok\":true,\"encoding\":\"binary\"}\n") +
                         std::string(4, '\0'));
  std::string frames;
  Response decoded;
  ASSERT_TRUE(DecodeBinary(encoded, &frames, &decoded));
  EXPECT_TRUE(std::get<LookupResponse>(decoded.body).results.empty());
}

TEST(BinaryAnswerTest, WireBytesMatchTheSpec) {
  // docs/protocol.md, *Binary answers*: the example there, byte by byte.
  static const std::string kName = "main";
  static const std::string kFile = "/tmp/ex/app.cc";
  LookupResponse lookup;
  LookupResult& r = lookup.results.emplace_back();
  r.addr = 0x1060;
  r.found = true;
  r.name = kName;
  r.offset = 0;
  r.origin = Origin::kElf;
  r.file = kFile;
  r.line = 3;
  r.column = 28;
  r.frames.push_back({kName, kFile, 3, 28});
  LookupResult& miss = lookup.results.emplace_back();
  miss.addr = 0x10;
  miss.reason = Reason::kNoSymbol;
  std::string frames;
  const uint32_t fields = kFieldName | kFieldOffset | kFieldOrigin | kFieldPosition | kFieldFrames;
  BinaryAnswerEncoder encoder;
  ASSERT_EQ(encoder.EncodeFrame(lookup.results, fields, kBinaryFrameTarget, &frames), 2u);
  const std::string expected =
      std::string("\x3b\x00\x00\x00", 4) +  // frame length 59
      std::string("\x02\x00\x00\x00", 4) +  // 2 results
      // members: found, name, offset, origin, file, line, column, frames = 0x9c4d
      "\xcd\xb8\x02"
      "\xe0\x20"  // members (uleb), addr 0x1060 (uleb)
      + std::string("\x00\x04main", 6) + std::string("\x00", 1) +  // name: new string 0
      std::string(
          "\x00\x03"
          "elf",
          5) +                                     // origin: new string 1
      std::string("\x00\x0e/tmp/ex/app.cc", 16) +  // file: new string 2
      "\x03\x1c"                                   // line 3, column 28
      "\x01\x01\x03\x03\x1c" +                     // 1 frame: 0, 2, 3, 28
      std::string("\x80\x80\x08\x10", 4) +         // members: reason; addr 0x10
      std::string("\x00\x09no_symbol", 11);        // reason: new string 3
  EXPECT_EQ(frames.size(), expected.size());
  EXPECT_EQ(frames, expected);
}

TEST(BinaryAnswerTest, RequestMemberNegotiates) {
  Request request;
  LookupRequest lookup;
  lookup.image = "/bin/true";
  lookup.addrs.emplace_back().addr = 1;
  lookup.binary = true;
  request.body = lookup;
  std::string line;
  EncodeRequest(request, &line);
  EXPECT_NE(line.find("\"encoding\":\"binary\""), std::string::npos);
  line.pop_back();
  DecodeRequestResult decoded = DecodeRequest(line);
  ASSERT_TRUE(decoded.request);
  EXPECT_TRUE(std::get<LookupRequest>(decoded.request->body).binary);

  // JSON unless asked; an encoding the daemon does not know is answered in JSON.
  for (const char* member :
       {"", ",\"encoding\":\"cbor\"", ",\"encoding\":\"json\"", ",\"encoding\":null"}) {
    const std::string text =
        std::string(R"({"op":"lookup","image":"/bin/true","addrs":[1])") + member + "}";
    decoded = DecodeRequest(text);
    ASSERT_TRUE(decoded.request) << text;
    EXPECT_FALSE(std::get<LookupRequest>(decoded.request->body).binary) << text;
  }
  decoded = DecodeRequest(R"({"op":"lookup","image":"/bin/true","addrs":[1],"encoding":2})");
  ASSERT_FALSE(decoded.request);
  EXPECT_EQ(std::get<ErrorResponse>(decoded.error->body).code, kErrBadRequest);
}

TEST(BinaryAnswerTest, HeaderWithAnUnknownEncodingIsMalformed) {
  EXPECT_FALSE(DecodeResponse(R"({"v":1,"ok":true,"encoding":"cbor"})"));
  EXPECT_FALSE(DecodeResponse(R"({"v":1,"ok":true,"encoding":1})"));
  const auto r = DecodeResponse(R"({"v":1,"ok":true,"encoding":"binary"})");
  ASSERT_TRUE(r);
  EXPECT_TRUE(std::get<LookupResponse>(r->body).binary);
}

// A frame with the given payload (count and results), then the end marker.
std::string Frame(const std::string& payload) {
  std::string out(4, '\0');
  const uint32_t n = static_cast<uint32_t>(payload.size());
  for (int i = 0; i < 4; ++i) out[i] = static_cast<char>(n >> (8 * i));
  return out + payload + std::string(4, '\0');
}

std::string Count(uint32_t n) {
  std::string out(4, '\0');
  for (int i = 0; i < 4; ++i) out[i] = static_cast<char>(n >> (8 * i));
  return out;
}

void ExpectMalformed(const std::string& frames, const std::string& message_part) {
  const Status st = DecodeFrames(frames);
  ASSERT_FALSE(st) << message_part;
  EXPECT_EQ(st.error().kind, ErrorKind::kMalformed);
  EXPECT_NE(st.error().message.find(message_part), std::string::npos) << st.error().message;
}

TEST(BinaryAnswerTest, HostileFramesAreErrorsWithOffsets) {
  ExpectMalformed("", "offset 0: the answer ends without its end marker");
  ExpectMalformed(std::string("\x01\x00", 2), "offset 0: the answer ends");
  ExpectMalformed(std::string("\xff\xff\xff\xff", 4), "offset 0: a frame of 4294967295 bytes");
  ExpectMalformed(std::string("\x10\x00\x00\x00", 4) + "abc", "a frame of 16 bytes, 3 left");
  ExpectMalformed(std::string(4, '\0') + "x", "offset 4: 1 bytes after the end of the answer");
  ExpectMalformed(Frame(std::string("\x01\x00", 2)), "offset 4: result count is cut short");
  ExpectMalformed(Frame(Count(0xffffffff) + "\x01\x01"), "offset 4: 4294967295 results do not fit");
  // One result: members 1 (found), addr cut short.
  ExpectMalformed(Frame(Count(1) + "\x01\x80"), "offset 9: addr is cut short");
  ExpectMalformed(Frame(Count(1) + std::string(11, '\xff')), "result members is cut short");
  ExpectMalformed(Frame(Count(1) + "\x80\x80\x40\x01"), "unknown");
  // name (bit 2) refers to string 4 of an empty table.
  ExpectMalformed(Frame(Count(1) + "\x05\x01\x05"),
                  "offset 10: name refers to string 4 of a table of 0");
  // name: a new string of 100 bytes with 1 left.
  ExpectMalformed(Frame(Count(1) + std::string("\x05\x01\x00\x64x", 5)),
                  "offset 11: name of 100 bytes, only 1 left");
  // frames (bit 15): a billion frames.
  ExpectMalformed(Frame(Count(1) + "\x81\x80\x02\x01\x80\x94\xeb\xdc\x03"),
                  "1000000000 frames do not fit");
  // line (bit 11) over 2^32.
  ExpectMalformed(Frame(Count(1) + "\x81\x10\x01\x80\x80\x80\x80\x10"), "line 4294967296 is over");
  // raw addr that is not hex without an error.
  ExpectMalformed(Frame(Count(1) + "\x02\x02zz"), "addr is not a hex address");
  // A byte left over after the last result.
  ExpectMalformed(Frame(Count(1) + "\x01\x01" + "x"), "1 bytes after the frame's last result");
  // Results over the batch limit across frames are refused before they are allocated.
  std::string many = Frame(Count(1) + std::string("\x00\x01", 2));
  many.resize(many.size() - 4);
  many += Frame(Count(kMaxBatch) + std::string(2 * kMaxBatch, '\0'));
  ExpectMalformed(many, "more than 1048576 results in the answer");
}

TEST(BinaryAnswerTest, EveryTruncationAndByteFlipIsAnErrorOrAnAnswer) {
  std::mt19937_64 rng(99);
  Generated g = Generate(rng, 40);
  std::string frames;
  std::span<const LookupResult> rest(g.lookup.results);
  BinaryAnswerEncoder encoder;
  while (!rest.empty()) {
    rest = rest.subspan(encoder.EncodeFrame(rest, kAllFields, 300, &frames));
    if (rng() % 3 == 0) encoder.ForgetStrings();  // strings sent again under new indices
  }
  EncodeBinaryLookupEnd(&frames);
  ASSERT_TRUE(DecodeFrames(frames));
  for (size_t cut = 0; cut < frames.size(); ++cut) {
    EXPECT_FALSE(DecodeFrames(frames.substr(0, cut))) << cut;
  }
  LookupResponse reused;
  for (size_t i = 0; i < frames.size(); ++i) {
    std::string mutated = frames;
    mutated[i] = static_cast<char>(rng());
    (void)DecodeBinaryLookupFrames(mutated, &reused);  // must not crash (ASan: no bad read)
  }
}

}  // namespace
}  // namespace jitsym::proto

namespace jitsym::proto {
namespace {

// Strings kept across the answers of a connection: answers after the first refer to the
// strings the first sent; a result decoded from an earlier answer stays valid while later
// answers add strings, and after the table starts anew while the old table is held.
TEST(BinaryAnswerTest, ConnectionTableKeepsStringsAcrossAnswers) {
  std::mt19937_64 rng(23);
  Generated g = Generate(rng, 300);
  BinaryAnswerEncoder encoder;  // the session's, for the whole connection
  auto encode = [&](std::span<const LookupResult> results) {
    std::string frames;
    while (!results.empty()) {
      results = results.subspan(encoder.EncodeFrame(results, kAllFields, 4096, &frames));
    }
    EncodeBinaryLookupEnd(&frames);
    return frames;
  };
  auto reference = [&](const LookupResult& r) {
    std::string json;
    EncodeLookupResult(r, &json);
    const Result<Response> ref = DecodeResponse("{\"ok\":true,\"results\":[" + json + "]}");
    return Describe(std::get<LookupResponse>(ref->body).results[0]);
  };
  const std::span<const LookupResult> all(g.lookup.results);
  const std::string first = encode(all.first(200));
  const std::string second = encode(all.subspan(100));  // half of it met in the first
  auto table = std::make_shared<ConnectionStrings>();
  LookupResponse a, b;
  ASSERT_TRUE(DecodeBinaryLookupFrames(first, &a, table.get()));
  const size_t after_first = table->size();
  ASSERT_TRUE(DecodeBinaryLookupFrames(second, &b, table.get()));
  EXPECT_EQ(table->size(), encoder.sent());
  EXPECT_GT(after_first, 0u);
  // The strings of results 100..199 were sent in the first answer only.
  std::string again = encode(all.subspan(100, 100));
  EXPECT_EQ(table->size(), encoder.sent()) << "nothing new: no string added";
  LookupResponse c;
  ASSERT_TRUE(DecodeBinaryLookupFrames(again, &c, table.get()));
  for (size_t i = 0; i < 200; ++i) ASSERT_EQ(Describe(a.results[i]), reference(all[i])) << i;
  for (size_t i = 0; i < 200; ++i) ASSERT_EQ(Describe(b.results[i]), reference(all[100 + i])) << i;
  for (size_t i = 0; i < 100; ++i) ASSERT_EQ(Describe(c.results[i]), reference(all[100 + i])) << i;

  // A new table (the daemon's "strings_kept":0): the old one is still held for a.
  encoder.Reset();
  EXPECT_EQ(encoder.sent(), 0u);
  EXPECT_EQ(encoder.text_bytes(), 0u);
  const std::string fresh = encode(all.last(50));
  auto old = std::exchange(table, std::make_shared<ConnectionStrings>());
  LookupResponse d;
  ASSERT_TRUE(DecodeBinaryLookupFrames(fresh, &d, table.get()));
  for (size_t i = 0; i < 50; ++i) ASSERT_EQ(Describe(d.results[i]), reference(all[250 + i])) << i;
  EXPECT_EQ(Describe(a.results[7]), reference(all[7]));
  // Read with a table that lacks what the daemon kept: an error naming the string, no crash.
  LookupResponse e;
  ConnectionStrings empty;
  const Status st = DecodeBinaryLookupFrames(again, &e, &empty);
  ASSERT_FALSE(st);
  EXPECT_NE(st.error().message.find("refers to string"), std::string::npos) << st.error().message;
}

TEST(BinaryAnswerTest, StringTableMemberAndHeader) {
  const auto request = [](const std::string& member) {
    return DecodeRequest(R"({"op":"lookup","image":"/bin/true","addrs":[1],"encoding":"binary")" +
                         member + "}");
  };
  DecodeRequestResult decoded = request(R"(,"string_table":"connection")");
  ASSERT_TRUE(decoded.request);
  EXPECT_TRUE(std::get<LookupRequest>(decoded.request->body).connection_strings);
  for (const char* member : {"", R"(,"string_table":"answer")", R"(,"string_table":null)"}) {
    decoded = request(member);
    ASSERT_TRUE(decoded.request) << member;
    EXPECT_FALSE(std::get<LookupRequest>(decoded.request->body).connection_strings) << member;
  }
  decoded = request(R"(,"string_table":true)");
  ASSERT_FALSE(decoded.request);
  EXPECT_EQ(std::get<ErrorResponse>(decoded.error->body).code, kErrBadRequest);
  // The client's request carries it; the header says how many strings are kept.
  Request r;
  LookupRequest lookup;
  lookup.image = "/bin/true";
  lookup.addrs.emplace_back().addr = 1;
  lookup.binary = lookup.connection_strings = true;
  r.body = lookup;
  std::string line;
  EncodeRequest(r, &line);
  EXPECT_NE(line.find(R"("string_table":"connection")"), std::string::npos) << line;
  std::string header;
  EncodeBinaryLookupBegin("3", &header, 42);
  EXPECT_EQ(header, "{\"v\":1,\"id\":3,\"ok\":true,\"encoding\":\"binary\",\"strings_kept\":42}\n");
  Response response;
  ASSERT_TRUE(DecodeResponseInto(std::string_view(header).substr(0, header.size() - 1), &response));
  EXPECT_EQ(std::get<LookupResponse>(response.body).strings_kept, 42u);
  // The next header, without it, does not inherit it (responses are decoded into one object).
  ASSERT_TRUE(DecodeResponseInto(R"({"v":1,"ok":true,"encoding":"binary"})", &response));
  EXPECT_FALSE(std::get<LookupResponse>(response.body).strings_kept);
}

}  // namespace
}  // namespace jitsym::proto
