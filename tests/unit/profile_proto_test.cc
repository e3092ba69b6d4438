// The profile.proto codec: round trips of a built profile, inputs our encoder never writes
// (unpacked repeated fields, unknown fields of every wire type, groups), every truncation of a
// good profile, references out of range, limits, gzip (round trip, concatenated members, a
// bomb), and the builder's interning and aggregation.
#include "client/profile_proto.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "tests/unit/testing/pprof_profile.h"

namespace jitsym::client::pprof {
namespace {

using jitsym::testing::NodeProfile;
using jitsym::testing::RawProto;

// Names of a sample's frames, leaf first, inlined functions before their callers.
std::vector<std::string> FrameNames(const Profile& p, const Sample& s) {
  const ProfileIndex index(p);
  std::vector<std::string> out;
  for (uint64_t id : s.location_id) {
    const Location* l = index.location(id);
    if (l == nullptr) {
      out.push_back("<no location>");
      continue;
    }
    if (l->line.empty()) out.push_back("<no line>");
    for (const Line& line : l->line) {
      const Function* f = index.function(line.function_id);
      out.push_back(f != nullptr ? std::string(p.str(f->name)) : "<no function>");
    }
  }
  return out;
}

// --- Encode / Decode ---------------------------------------------------------------------------

TEST(ProfileProtoTest, RoundTrip) {
  const Profile p = NodeProfile();
  ASSERT_TRUE(Validate(p).ok()) << Validate(p).error().message;
  const std::string bytes = Encode(p);
  auto back = Decode(bytes);
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(*back, p);
  EXPECT_EQ(Encode(*back), bytes);  // deterministic

  // What a reader sees: the aggregated samples with their names, values and labels.
  ASSERT_EQ(back->sample.size(), 5u);
  const Sample& s = back->sample[0];
  EXPECT_EQ(s.value, (std::vector<int64_t>{7, 7 * 250000}));
  EXPECT_EQ(FrameNames(*back, s), (std::vector<std::string>{"LazyCompile:*hot /app/a.js:10",
                                                            "uv__run_timers", "uv_run", "main"}));
  ASSERT_EQ(s.label.size(), 3u);
  EXPECT_EQ(back->str(s.label[0].key), "pid");
  EXPECT_EQ(s.label[0].num, 4242);
  EXPECT_EQ(back->str(s.label[1].key), "tid");
  EXPECT_EQ(s.label[1].num, 4243);
  EXPECT_EQ(back->str(s.label[2].str), "node");
  EXPECT_EQ(back->sample[1].value[0], 3);
  EXPECT_EQ(back->str(back->mapping[0].build_id), "4b2e1f0a9c8d7e6f5a4b3c2d1e0f9a8b7c6d5e4f");
  EXPECT_EQ(back->str(back->period_type.unit), "nanoseconds");
  EXPECT_EQ(back->period, 250000);
  EXPECT_EQ(back->str(back->default_sample_type), "cpu");
  EXPECT_EQ(back->location[2].line[0].column, 7);
}

// A default Profile is the smallest valid one: its string table, "" alone.
TEST(ProfileProtoTest, EmptyProfile) {
  EXPECT_EQ(Encode(Profile{}), std::string("\x32\x00", 2));
  auto back = Decode(Encode(Profile{}));
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(*back, Profile{});
}

TEST(ProfileProtoTest, LargeRoundTrip) {
  const Profile p = NodeProfile(20000);
  auto back = Decode(Encode(p));
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(*back, p);
}

TEST(ProfileProtoTest, EveryFieldRoundTrips) {
  Profile p;
  p.string_table = {"", "a", "b", "c"};
  p.sample_type = {{1, 2}};
  p.sample = {{{1, 1, 1}, {-5}, {{1, 2, -3, 3}}}};
  p.mapping = {{9, 1, ~uint64_t{0}, 3, 1, 2, true, false, true, false}};
  p.location = {{1, 9, ~uint64_t{0}, {{0, -1, -2}, {4, 1u << 31, 1}}, true}};
  p.function = {{4, 1, 2, 3, -7}};
  p.drop_frames = 1;
  p.keep_frames = 2;
  p.time_nanos = -1;
  p.duration_nanos = 5;
  p.period_type = {3, 0};
  p.period = 1;
  p.comment = {1, 2, 3};
  p.default_sample_type = 1;
  p.doc_url = 3;
  ASSERT_TRUE(Validate(p).ok()) << Validate(p).error().message;
  auto back = Decode(Encode(p));
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(*back, p);
}

TEST(ProfileProtoTest, EncodesAsProtocDoes) {
  Profile p;
  p.string_table = {"", "x"};
  p.sample_type = {{1, 0}};
  p.sample = {{{300, 1}, {2}, {}}};
  p.location = {{300, 0, 0, {}, false}, {1, 0, 0, {}, false}};
  // sample_type {type: 1}; sample {location_id: [300, 1] packed, value: [2] packed};
  // location {id: 300}, {id: 1}; strings; nothing else (zeros omitted).
  const std::string want = RawProto()
                               .Len(1, RawProto().Varint(1, 1).bytes())
                               .Len(2, RawProto()
                                           .Len(1, RawProto().Uvarint(300).Uvarint(1).bytes())
                                           .Len(2, RawProto().Uvarint(2).bytes())
                                           .bytes())
                               .Len(4, RawProto().Varint(1, 300).bytes())
                               .Len(4, RawProto().Varint(1, 1).bytes())
                               .Len(6, "")
                               .Len(6, "x")
                               .bytes();
  EXPECT_EQ(Encode(p), want);
}

// The profile of EncodesAsProtocDoes, written the other ways protobuf allows.
TEST(ProfileProtoTest, AcceptsUnpackedAndUnknownFields) {
  const std::string label = RawProto()
                                .Varint(1, 1)
                                .Varint(3, static_cast<uint64_t>(-2))
                                .Fixed32(9, 0xdeadbeef)  // unknown, every wire type
                                .Fixed64(10, 1)
                                .Len(11, "\x08\x01")
                                .Varint(12, 5)
                                .bytes();
  const std::string unknown = RawProto().Varint(1, 7).Len(2, "\xff\xff").bytes();
  const std::string profile = RawProto()
                                  .Len(1, RawProto().Varint(1, 1).bytes())
                                  .Varint(99, 7)
                                  .Fixed64(100, 1)
                                  .Len(2, RawProto()
                                              .Varint(1, 300)  // unpacked, then packed
                                              .Len(1, RawProto().Uvarint(1).bytes())
                                              .Varint(2, 2)
                                              .Len(3, label)
                                              .Fixed32(1, 5)  // wrong wire type: skipped
                                              .bytes())
                                  .Len(4, RawProto().Varint(1, 300).Len(2, "xx").bytes())
                                  .Len(4, RawProto().Varint(1, 1).bytes())
                                  .Len(6, "")
                                  .Len(6, "x")
                                  .Varint(13, 1)  // comment, unpacked
                                  .Len(13, RawProto().Uvarint(1).Uvarint(0).bytes())
                                  .Len(7, "ignored")  // drop_frames with the wrong wire type
                                  .Varint(12, 1)
                                  .Varint(12, 100)  // last one wins
                                  .Len(11, RawProto().Varint(1, 1).bytes())
                                  .Len(11, RawProto().Varint(2, 1).bytes())  // merged
                                  .Len(5000, unknown)
                                  .bytes();
  auto p = Decode(profile);
  ASSERT_TRUE(p.ok()) << p.error().message;
  ASSERT_EQ(p->sample.size(), 1u);
  EXPECT_EQ(p->sample[0].location_id, (std::vector<uint64_t>{300, 1}));
  EXPECT_EQ(p->sample[0].value, (std::vector<int64_t>{2}));
  ASSERT_EQ(p->sample[0].label.size(), 1u);
  EXPECT_EQ(p->sample[0].label[0].num, -2);
  EXPECT_EQ(p->comment, (std::vector<int64_t>{1, 1, 0}));
  EXPECT_EQ(p->period, 100);
  EXPECT_EQ(p->drop_frames, 0);
  EXPECT_EQ(p->period_type, (ValueType{1, 1}));
  EXPECT_EQ(p->location.size(), 2u);
}

// Go's runtime/pprof writes period_type or time_nanos first, and a sample's values before its
// location ids: fields in any order decode alike.
TEST(ProfileProtoTest, FieldsInAnyOrder) {
  const Profile p = NodeProfile();
  const std::string first = RawProto()
                                .Varint(9, static_cast<uint64_t>(p.time_nanos))
                                .Len(11, RawProto()
                                             .Varint(1, static_cast<uint64_t>(p.period_type.type))
                                             .Varint(2, static_cast<uint64_t>(p.period_type.unit))
                                             .bytes())
                                .bytes();
  const Sample& s = p.sample[0];
  RawProto locations;
  for (uint64_t id : s.location_id) locations.Uvarint(id);
  RawProto sample;
  for (int64_t v : s.value) sample.Varint(2, static_cast<uint64_t>(v));
  sample.Len(1, locations.bytes());
  for (const Label& l : s.label) {
    sample.Len(3, RawProto()
                      .Varint(3, static_cast<uint64_t>(l.num))
                      .Varint(2, static_cast<uint64_t>(l.str))
                      .Varint(1, static_cast<uint64_t>(l.key))
                      .bytes());
  }
  Profile rest = p;
  rest.sample.erase(rest.sample.begin());
  auto back = Decode(first + Encode(rest) + RawProto().Len(2, sample.bytes()).bytes());
  ASSERT_TRUE(back.ok()) << back.error().message;
  rest.sample.push_back(s);
  EXPECT_EQ(*back, rest);
}

TEST(ProfileProtoTest, NotAProfile) {
  for (std::string_view bytes :
       {std::string_view(""), std::string_view("\0\0\0\0\0\0\0\0\3\0\0\0", 12),
        std::string_view("PERFILE2"), std::string_view("\x1f\x8b\x08\x00", 4),
        std::string_view("--- symbol\nbinary=/bin/x\n")}) {
    auto p = Decode(bytes);
    ASSERT_FALSE(p.ok());
    EXPECT_EQ(p.error().kind, ErrorKind::kNotThisFormat) << bytes << ": " << p.error().message;
  }
  // Profile fields, but no string table.
  auto p = Decode(RawProto().Varint(12, 5).bytes());
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.error().kind, ErrorKind::kNotThisFormat);
}

TEST(ProfileProtoTest, AProfileCutBeforeItsStringTableIsMalformed) {
  // Go's runtime writes the string table last: a profile cut short has every other field.
  const std::string bytes = RawProto().Varint(12, 5).Varint(9, 77).Varint(10, 3).bytes();
  auto p = Decode(bytes);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.error().kind, ErrorKind::kMalformed) << p.error().message;
  EXPECT_EQ(p.error().offset, bytes.size());
}

TEST(ProfileProtoTest, WireErrorsCarryOffsets) {
  // Three good fields first (9 bytes): errors in the first three are "not a profile".
  const std::string head = RawProto().Len(6, "").Len(6, "abc").Varint(12, 1).bytes();
  struct Case {
    std::string tail;
    ErrorKind kind;
    uint64_t offset;
  };
  const Case cases[] = {
      {RawProto().Tag(3, 3).bytes(), ErrorKind::kUnsupported, 9},  // group start
      {RawProto().Tag(3, 4).bytes(), ErrorKind::kMalformed, 9},    // group end
      {RawProto().Tag(3, 6).bytes(), ErrorKind::kMalformed, 9},    // no wire type 6
      {RawProto().Tag(3, 7).bytes(), ErrorKind::kMalformed, 9},    // nor 7
      {std::string("\x00", 1), ErrorKind::kMalformed, 9},          // field 0
      {RawProto().Tag(9, 0).bytes(), ErrorKind::kMalformed, 9},    // no varint
      {RawProto().Tag(9, 1).Raw("1234567").bytes(), ErrorKind::kMalformed, 9},
      {RawProto().Tag(9, 5).Raw("123").bytes(), ErrorKind::kMalformed, 9},
      {RawProto().Tag(6, 2).Uvarint(4).Raw("abc").bytes(), ErrorKind::kMalformed, 9},
      {RawProto().Tag(6, 2).Uvarint(~uint64_t{0}).bytes(), ErrorKind::kMalformed, 9},
      {std::string(11, '\xff'), ErrorKind::kMalformed, 9},  // varint of 11 bytes
      // Inside a sample at 9: a label (at 11) holding a group (at 13).
      {RawProto().Len(2, RawProto().Len(3, RawProto().Tag(1, 3).bytes()).bytes()).bytes(),
       ErrorKind::kUnsupported, 13},
      // A packed location_id whose last varint is cut: the varint's own offset (14).
      {RawProto().Len(2, RawProto().Len(1, "\x01\x81").bytes()).bytes(), ErrorKind::kMalformed, 14},
  };
  for (const Case& c : cases) {
    auto p = Decode(head + c.tail);
    ASSERT_FALSE(p.ok());
    EXPECT_EQ(p.error().kind, c.kind) << p.error().message;
    EXPECT_EQ(p.error().offset, c.offset) << p.error().message;
  }
}

// Every prefix of a good profile: never a crash, never a success it should not be, and an error
// offset inside the input. A cut at a field boundary is a smaller valid message that the
// validator judges.
TEST(ProfileProtoTest, EveryTruncation) {
  const std::string bytes = Encode(NodeProfile());
  for (size_t n = 0; n < bytes.size(); ++n) {
    auto p = Decode(std::string_view(bytes).substr(0, n));
    if (p.ok()) {
      EXPECT_TRUE(Validate(*p).ok());
      continue;
    }
    EXPECT_LE(p.error().offset, n) << n << ": " << p.error().message;
    EXPECT_FALSE(p.error().message.empty());
  }
}

// Random byte flips of a good profile: whatever Decode accepts is valid and round-trips.
TEST(ProfileProtoTest, Mutations) {
  const std::string good = Encode(NodeProfile());
  std::mt19937 rng(16);
  for (int i = 0; i < 5000; ++i) {
    std::string bytes = good;
    for (int k = 0; k < 1 + i % 4; ++k) bytes[rng() % bytes.size()] = static_cast<char>(rng());
    auto p = Decode(bytes);
    if (!p.ok()) continue;
    ASSERT_TRUE(Validate(*p).ok());
    auto again = Decode(Encode(*p));
    ASSERT_TRUE(again.ok()) << again.error().message;
    ASSERT_EQ(*again, *p);
  }
}

// --- Validate ----------------------------------------------------------------------------------

TEST(ProfileProtoTest, BadReferences) {
  const Profile good = NodeProfile();
  const int64_t past = static_cast<int64_t>(good.string_table.size());
  std::vector<std::pair<std::string, Profile>> cases;
  auto add = [&](std::string name, auto&& change) {
    Profile p = good;
    change(p);
    cases.emplace_back(std::move(name), std::move(p));
  };
  add("empty first string", [](Profile& p) { p.string_table[0] = "x"; });
  add("sample type", [&](Profile& p) { p.sample_type[0].unit = past; });
  add("negative index", [](Profile& p) { p.sample_type[0].type = -1; });
  add("period type", [&](Profile& p) { p.period_type.type = past; });
  add("drop frames", [&](Profile& p) { p.drop_frames = past; });
  add("keep frames", [&](Profile& p) { p.keep_frames = past; });
  add("default sample type", [&](Profile& p) { p.default_sample_type = past; });
  add("doc url", [&](Profile& p) { p.doc_url = past; });
  add("comment", [&](Profile& p) { p.comment.push_back(past); });
  add("label key", [&](Profile& p) { p.sample[0].label[0].key = past; });
  add("label str", [&](Profile& p) { p.sample[0].label[2].str = past; });
  add("label unit", [&](Profile& p) { p.sample[0].label[0].num_unit = -5; });
  add("mapping file", [&](Profile& p) { p.mapping[0].filename = past; });
  add("build id", [&](Profile& p) { p.mapping[0].build_id = past; });
  add("function name", [&](Profile& p) { p.function[0].name = past; });
  add("system name", [&](Profile& p) { p.function[0].system_name = past; });
  add("function file", [&](Profile& p) { p.function[0].filename = past; });
  add("sample location", [](Profile& p) { p.sample[0].location_id.push_back(999); });
  add("sample location 0", [](Profile& p) { p.sample[0].location_id.push_back(0); });
  add("too few values", [](Profile& p) { p.sample[0].value.pop_back(); });
  add("too many values", [](Profile& p) { p.sample[0].value.push_back(1); });
  add("location mapping", [](Profile& p) { p.location[0].mapping_id = 99; });
  add("line function", [](Profile& p) { p.location[0].line[0].function_id = 99; });
  add("location id 0", [](Profile& p) { p.location[0].id = 0; });
  add("mapping id 0", [](Profile& p) { p.mapping[0].id = 0; });
  add("function id 0", [](Profile& p) { p.function[0].id = 0; });
  add("duplicate location", [](Profile& p) { p.location[1].id = p.location[0].id; });
  add("duplicate mapping", [](Profile& p) { p.mapping[1].id = p.mapping[0].id; });
  add("duplicate function", [](Profile& p) { p.function[1].id = p.function[0].id; });
  for (const auto& [name, p] : cases) {
    const Status s = Validate(p);
    ASSERT_FALSE(s.ok()) << name;
    EXPECT_EQ(s.error().kind, ErrorKind::kMalformed) << name;
    // Decode refuses the same, with the offset of the message at fault where there is one.
    auto d = Decode(Encode(p));
    ASSERT_FALSE(d.ok()) << name;
    EXPECT_EQ(d.error().kind, ErrorKind::kMalformed) << name;
  }
  // The offset names the sample that holds the bad reference.
  Profile p = good;
  p.sample[2].location_id[0] = 999;
  auto d = Decode(Encode(p));
  ASSERT_FALSE(d.ok());
  Profile before;  // what precedes the third sample: sample types, two samples
  before.string_table.clear();
  before.sample_type = p.sample_type;
  before.sample = {p.sample[0], p.sample[1]};
  EXPECT_EQ(d.error().offset, Encode(before).size()) << d.error().message;
  EXPECT_NE(d.error().message.find("location 999"), std::string::npos) << d.error().message;
}

TEST(ProfileProtoTest, SparseIdsAreFine) {
  Profile p = NodeProfile();
  for (Location& l : p.location) l.id *= 1000;
  for (Sample& s : p.sample) {
    for (uint64_t& id : s.location_id) id *= 1000;
  }
  ASSERT_TRUE(Validate(p).ok()) << Validate(p).error().message;
  auto back = Decode(Encode(p));
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(FrameNames(*back, back->sample[0])[0], "LazyCompile:*hot /app/a.js:10");
}

TEST(ProfileProtoTest, StrIsSafeOnAnyIndex) {
  const Profile p = NodeProfile();
  EXPECT_EQ(p.str(-1), "");
  EXPECT_EQ(p.str(1 << 30), "");
  EXPECT_EQ(p.str(0), "");
  EXPECT_EQ(p.str(1), "samples");
  const ProfileIndex index(p);
  EXPECT_EQ(index.location(0), nullptr);
  EXPECT_EQ(index.location(12345), nullptr);
  EXPECT_NE(index.mapping(1), nullptr);
}

// --- Limits ------------------------------------------------------------------------------------

TEST(ProfileProtoTest, Limits) {
  const std::string bytes = Encode(NodeProfile(100));
  struct Case {
    const char* name;
    DecodeLimits limits;
  };
  DecodeLimits samples, locations, functions, mappings, strings, items;
  samples.max_samples = 10;
  locations.max_locations = 10;
  functions.max_functions = 10;
  mappings.max_mappings = 2;
  strings.max_strings = 10;
  items.max_items = 50;
  for (const Case& c :
       {Case{"samples", samples}, Case{"locations", locations}, Case{"functions", functions},
        Case{"mappings", mappings}, Case{"strings", strings}, Case{"items", items}}) {
    auto p = Decode(bytes, c.limits);
    ASSERT_FALSE(p.ok()) << c.name;
    EXPECT_EQ(p.error().kind, ErrorKind::kLimit) << c.name;
    EXPECT_GT(p.error().offset, 0u) << c.name;
    EXPECT_LT(p.error().offset, bytes.size()) << c.name;
  }
  EXPECT_TRUE(Decode(bytes).ok());
}

// A million empty samples in 2 MB: refused at the limit, not allocated.
TEST(ProfileProtoTest, ManyEmptyMessages) {
  std::string bytes = RawProto().Len(6, "").bytes();
  for (int i = 0; i < 1000000; ++i) bytes += RawProto().Len(2, "").bytes();
  DecodeLimits limits;
  limits.max_samples = 1000;
  auto p = Decode(bytes, limits);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.error().kind, ErrorKind::kLimit);
  EXPECT_EQ(p.error().offset, 2 + 1000 * 2u);

  // Empty sample types likewise count against the items.
  std::string types = RawProto().Len(6, "").bytes();
  for (int i = 0; i < 1000; ++i) types += RawProto().Len(1, "").bytes();
  limits = DecodeLimits();
  limits.max_items = 100;
  auto q = Decode(types, limits);
  ASSERT_FALSE(q.ok());
  EXPECT_EQ(q.error().kind, ErrorKind::kLimit);
  EXPECT_EQ(q.error().offset, 2 + 100 * 2u);
}

// --- gzip --------------------------------------------------------------------------------------

TEST(ProfileProtoTest, GzipRoundTrip) {
  const std::string bytes = Encode(NodeProfile(2000));
  const std::string gz = Gzip(bytes);
  ASSERT_GE(gz.size(), 2u);
  EXPECT_EQ(static_cast<unsigned char>(gz[0]), 0x1f);
  EXPECT_EQ(static_cast<unsigned char>(gz[1]), 0x8b);
  EXPECT_LT(gz.size(), bytes.size());
  auto raw = MaybeGunzip(gz, bytes.size());
  ASSERT_TRUE(raw.ok()) << raw.error().message;
  EXPECT_EQ(*raw, bytes);
  // Not gzip: the bytes as they are.
  auto same = MaybeGunzip(bytes, bytes.size());
  ASSERT_TRUE(same.ok());
  EXPECT_EQ(*same, bytes);
  EXPECT_EQ(*MaybeGunzip(Gzip(""), 0), "");
  // Concatenated members, as `cat a.gz b.gz` makes.
  auto two = MaybeGunzip(Gzip("abc") + Gzip("def"), 100);
  ASSERT_TRUE(two.ok()) << two.error().message;
  EXPECT_EQ(*two, "abcdef");
}

TEST(ProfileProtoTest, GzipErrors) {
  const std::string gz = Gzip(Encode(NodeProfile(100)));
  for (size_t n = 2; n < gz.size(); ++n) {
    auto r = MaybeGunzip(std::string_view(gz).substr(0, n), 1 << 20);
    ASSERT_FALSE(r.ok()) << n;
    EXPECT_EQ(r.error().kind, ErrorKind::kMalformed) << n;
    EXPECT_LE(r.error().offset, n);
  }
  std::string bad = gz;
  bad[gz.size() / 2] ^= 0x55;
  bad[gz.size() / 2 + 1] ^= 0x55;
  auto r = MaybeGunzip(bad, 1 << 20);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, ErrorKind::kMalformed) << r.error().message;
  auto trailing = MaybeGunzip(gz + "junk", 1 << 20);
  ASSERT_FALSE(trailing.ok());
  EXPECT_EQ(trailing.error().kind, ErrorKind::kMalformed);
  EXPECT_EQ(trailing.error().offset, gz.size());
}

// 1 GiB of zeros compresses to about 1 MB; inflating stops at the limit.
TEST(ProfileProtoTest, GzipBomb) {
  const std::string zeros(64 << 20, '\0');
  const std::string member = Gzip(zeros);
  std::string bomb;
  for (int i = 0; i < 16; ++i) bomb += member;
  ASSERT_LT(bomb.size(), 2u << 20);
  auto r = MaybeGunzip(bomb, 32 << 20);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, ErrorKind::kLimit);
  EXPECT_LT(r.error().offset, bomb.size());
  auto raw = MaybeGunzip(zeros, 1 << 20);  // not gzip, but over the limit all the same
  ASSERT_FALSE(raw.ok());
  EXPECT_EQ(raw.error().kind, ErrorKind::kLimit);
}

// --- ProfileBuilder ----------------------------------------------------------------------------

TEST(ProfileBuilderTest, InternsAndAggregates) {
  ProfileBuilder b;
  EXPECT_EQ(b.String(""), 0);
  EXPECT_EQ(b.String("a"), 1);
  EXPECT_EQ(b.String("a"), 1);
  b.AddSampleType("samples", "count");
  ProfileBuilder::MappingSpec spec;
  spec.memory_start = 1;
  spec.memory_limit = 2;
  spec.filename = "/x";
  const uint64_t m = b.AddMapping(spec);
  EXPECT_EQ(b.AddMapping(spec), m);
  spec.filename = "/y";
  EXPECT_NE(b.AddMapping(spec), m);
  const uint64_t f = b.AddFunction("f", "_Z1fv", "f.cc", 1);
  EXPECT_EQ(b.AddFunction("f", "_Z1fv", "f.cc", 1), f);
  EXPECT_NE(b.AddFunction("f", "_Z1fv", "f.cc", 2), f);
  const Line lines[] = {{f, 3, 0}};
  const Line other[] = {{f, 4, 0}};
  const uint64_t l = b.AddLocation(m, 0x10, lines);
  EXPECT_EQ(b.AddLocation(m, 0x10, lines), l);
  EXPECT_NE(b.AddLocation(m, 0x10, other), l);
  EXPECT_EQ(b.FindLocationByKey("k"), 0u);
  EXPECT_EQ(b.AddLocationByKey("k", m, 0x10, lines), l);  // same content, same location
  EXPECT_EQ(b.FindLocationByKey("k"), l);
  EXPECT_EQ(b.AddLocationByKey("k", m, 0x99, other), l);  // the key wins

  const uint64_t stack[] = {l};
  const int64_t one[] = {1};
  const Label pid[] = {b.NumLabel("pid", 1)};
  const Label pid2[] = {b.NumLabel("pid", 2)};
  b.AddSample(stack, one, pid);
  b.AddSample(stack, one, pid);
  b.AddSample(stack, one, pid2);
  b.AddSample(stack, one);
  EXPECT_EQ(b.sample_count(), 3u);
  b.AddSampleType("cpu", "nanoseconds");  // earlier samples get a 0
  const int64_t two[] = {1, 5, 99};       // the extra value is dropped
  b.AddSample(stack, two, pid);
  const Profile p = b.Take();
  ASSERT_TRUE(Validate(p).ok()) << Validate(p).error().message;
  ASSERT_EQ(p.sample.size(), 3u);
  EXPECT_EQ(p.sample[0].value, (std::vector<int64_t>{3, 5}));
  EXPECT_EQ(p.sample[1].value, (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(p.sample[2].value, (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(p.function.size(), 2u);
  EXPECT_EQ(p.location.size(), 2u);
  EXPECT_EQ(p.mapping.size(), 2u);

  // Take starts over.
  EXPECT_EQ(b.sample_count(), 0u);
  EXPECT_EQ(b.FindLocationByKey("k"), 0u);
  EXPECT_EQ(b.String("a"), 1);
  EXPECT_EQ(b.Take().string_table, (std::vector<std::string>{"", "a"}));
}

// Two million samples over a thousand stacks: each AddSample is a hash lookup, and the values
// add up.
TEST(ProfileBuilderTest, ManySamples) {
  ProfileBuilder b;
  b.AddSampleType("samples", "count");
  std::vector<uint64_t> locs;
  for (int i = 0; i < 100; ++i) {
    const Line l[] = {{b.AddFunction("f" + std::to_string(i), "", "", 0), i, 0}};
    locs.push_back(b.AddLocation(0, static_cast<uint64_t>(i), l));
  }
  const Label tid[] = {b.NumLabel("tid", 7)};
  const int64_t one[] = {1};
  std::mt19937 rng(1);
  std::vector<uint64_t> stack(24);
  for (int i = 0; i < 2000000; ++i) {
    const unsigned k = rng() % 1000;
    for (size_t d = 0; d < stack.size(); ++d) stack[d] = locs[(k + d * 7) % locs.size()];
    stack[0] = locs[k % 100];
    stack[1] = locs[k / 10];
    b.AddSample(stack, one, tid);
  }
  const Profile p = b.Take();
  EXPECT_EQ(p.sample.size(), 1000u);
  int64_t total = 0;
  for (const Sample& s : p.sample) total += s.value[0];
  EXPECT_EQ(total, 2000000);
}

}  // namespace
}  // namespace jitsym::client::pprof
