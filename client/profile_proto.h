// The pprof profile format (`profile.proto`, what `go tool pprof`, Pyroscope, Parca and Cloud
// Profiler read): structs mirroring the schema, an encoder, a decoder, gzip, and a builder that
// interns strings, functions, mappings and locations and aggregates identical samples.
// Spec: github.com/google/pprof proto/profile.proto (package perftools.profiles, proto3).
//
// Our own codec, not libprotobuf: profile.proto is eight small messages of varints and
// length-delimited fields, and a hand decoder gives us limits against hostile input (counts,
// total items, inflated size), byte offsets in its errors, and no protoc step in the build.
//
//   Profile   := sample_type:1* sample:2* mapping:3* location:4* function:5* string_table:6*
//                drop_frames:7 keep_frames:8 time_nanos:9 duration_nanos:10 period_type:11
//                period:12 comment:13* default_sample_type:14 doc_url:15
//   ValueType := type:1 unit:2                              (string indices)
//   Sample    := location_id:1* value:2* label:3*           (leaf first)
//   Label     := key:1 str:2 num:3 num_unit:4
//   Mapping   := id:1 memory_start:2 memory_limit:3 file_offset:4 filename:5 build_id:6
//                has_functions:7 has_filenames:8 has_line_numbers:9 has_inline_frames:10
//   Location  := id:1 mapping_id:2 address:3 line:4* is_folded:5
//   Line      := function_id:1 line:2 column:3              (innermost inlined function first)
//   Function  := id:1 name:2 system_name:3 filename:4 start_line:5
//
// On disk a profile is gzip'd (Gzip / MaybeGunzip); Encode and Decode work on the protobuf bytes.
#ifndef JITSYM_CLIENT_PROFILE_PROTO_H_
#define JITSYM_CLIENT_PROFILE_PROTO_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "client/key_table.h"
#include "daemon/util/result.h"

namespace jitsym::client::pprof {

// Every int64 naming a string is an index into Profile::string_table.
struct ValueType {
  int64_t type = 0;
  int64_t unit = 0;
  bool operator==(const ValueType&) const = default;
};

struct Label {
  int64_t key = 0;
  int64_t str = 0;  // a string label, or
  int64_t num = 0;  // a numeric one, with
  int64_t num_unit = 0;
  bool operator==(const Label&) const = default;
};

struct Sample {
  std::vector<uint64_t> location_id;  // leaf first
  std::vector<int64_t> value;         // one per Profile::sample_type
  std::vector<Label> label;
  bool operator==(const Sample&) const = default;
};

struct Mapping {
  uint64_t id = 0;  // nonzero, unique
  uint64_t memory_start = 0;
  uint64_t memory_limit = 0;
  uint64_t file_offset = 0;
  int64_t filename = 0;
  int64_t build_id = 0;
  bool has_functions = false;
  bool has_filenames = false;
  bool has_line_numbers = false;
  bool has_inline_frames = false;
  bool operator==(const Mapping&) const = default;
};

struct Line {
  uint64_t function_id = 0;  // 0: no function
  int64_t line = 0;
  int64_t column = 0;
  bool operator==(const Line&) const = default;
};

struct Location {
  uint64_t id = 0;          // nonzero, unique
  uint64_t mapping_id = 0;  // 0: no mapping
  uint64_t address = 0;
  std::vector<Line> line;  // inlined functions first, the function they are inlined into last
  bool is_folded = false;
  bool operator==(const Location&) const = default;
};

struct Function {
  uint64_t id = 0;  // nonzero, unique
  int64_t name = 0;
  int64_t system_name = 0;
  int64_t filename = 0;
  int64_t start_line = 0;
  bool operator==(const Function&) const = default;
};

struct Profile {
  std::vector<ValueType> sample_type;
  std::vector<Sample> sample;
  std::vector<Mapping> mapping;
  std::vector<Location> location;
  std::vector<Function> function;
  std::vector<std::string> string_table{""};  // [0] is always ""
  int64_t drop_frames = 0;
  int64_t keep_frames = 0;
  int64_t time_nanos = 0;
  int64_t duration_nanos = 0;
  ValueType period_type;
  int64_t period = 0;
  std::vector<int64_t> comment;
  int64_t default_sample_type = 0;
  int64_t doc_url = 0;
  bool operator==(const Profile&) const = default;

  // string_table[index], or "" when out of range: safe on any profile, validated or not.
  std::string_view str(int64_t index) const {
    return index >= 0 && static_cast<uint64_t>(index) < string_table.size()
               ? std::string_view(string_table[static_cast<size_t>(index)])
               : std::string_view();
  }
};

// The protobuf bytes of a profile, as protoc's encoder writes them: fields in number order, zero
// scalars (and an all-zero period_type) omitted, every string_table entry written ("" too),
// repeated varints (location_id, value, comment) packed. Not gzip'd. Encodes whatever it is
// given; Validate first a profile not made by ProfileBuilder or Decode.
std::string Encode(const Profile& profile);

struct DecodeLimits {
  size_t max_samples = size_t{1} << 24;
  size_t max_locations = size_t{1} << 24;
  size_t max_functions = size_t{1} << 24;
  size_t max_mappings = size_t{1} << 20;
  size_t max_strings = size_t{1} << 24;
  // Sample types, location ids, values, labels, lines and comments, summed over the whole
  // profile: bounds the memory a small input can make us allocate.
  size_t max_items = size_t{1} << 28;
};

// Decodes protobuf bytes (gunzip first: MaybeGunzip). Accepts packed and unpacked repeated
// fields, skips unknown fields of every wire type (and known fields of the wrong wire type, as
// protobuf does) without looking inside them, so nesting is at most Profile > Location > Line
// whatever the input; a repeated non-repeated field is last-one-wins, period_type merges.
// Errors, each with the byte offset of the field at fault:
//   kNotThisFormat  empty input, a first field that is not one of Profile's (with its wire
//                   type), a broken or mistyped one among the first three, or no string table
//   kUnsupported    a group (wire type 3): profile.proto has none
//   kMalformed      truncated field, bad varint, wire type 4/6/7, field number 0, or a profile
//                   Validate refuses (offset of the message holding the bad reference)
//   kLimit          more samples, locations, ... than `limits` allow
// A profile Decode returns has passed Validate: every index and id in it is in range.
Result<Profile> Decode(std::string_view bytes, const DecodeLimits& limits = {});

// Checks what callers index with: string_table[0] is ""; every string index (in sample types,
// labels, mappings, functions, comment, drop/keep_frames, period_type, default_sample_type,
// doc_url) is in the table; mapping, location and function ids are nonzero and unique; every
// sample's location ids name locations and it has one value per sample type; nonzero
// Location::mapping_id and Line::function_id name a mapping and a function. kMalformed
// otherwise, naming the message (offset 0: a built profile has no bytes).
Status Validate(const Profile& profile);

// gzip (RFC 1952) at zlib's default level.
std::string Gzip(std::string_view bytes);

// The bytes inflated when they start with the gzip magic (1f 8b; concatenated members are
// read in turn), else the bytes as they are. kLimit when the output would exceed `max_out`
// (a gzip bomb stops there, nothing larger is allocated); kMalformed, with the offset in the
// compressed input, for a broken or truncated stream or bytes after the last member.
Result<std::string> MaybeGunzip(std::string_view bytes, size_t max_out);

// Id to entry of a profile (nullptr for an id it does not hold). Keeps a reference: the profile
// must outlive the index and not change under it.
class ProfileIndex {
 public:
  explicit ProfileIndex(const Profile& profile);
  const Location* location(uint64_t id) const { return Find(locations_, profile_.location, id); }
  const Function* function(uint64_t id) const { return Find(functions_, profile_.function, id); }
  const Mapping* mapping(uint64_t id) const { return Find(mappings_, profile_.mapping, id); }

 private:
  template <typename T>
  static const T* Find(const std::unordered_map<uint64_t, size_t>& m, const std::vector<T>& v,
                       uint64_t id) {
    auto it = m.find(id);
    return it == m.end() ? nullptr : &v[it->second];
  }
  const Profile& profile_;
  std::unordered_map<uint64_t, size_t> locations_, functions_, mappings_;
};

// Builds a profile for the encoder: interns strings, functions, mappings and locations (the
// same content gets the same id), and adds the values of samples with the same locations and
// labels together. Ids are 1, 2, 3, ... in order of first use. Made for millions of samples:
// each Add* is one lookup in a flat hash table (KeyTable) on the common, already seen, path.
// Take() passes Validate as long as the ids given to it came from this builder.
class ProfileBuilder {
 public:
  ProfileBuilder();

  // Index of s in the string table ("" is 0).
  int64_t String(std::string_view s);

  // Profile-wide fields.
  void AddSampleType(std::string_view type, std::string_view unit);
  void SetPeriod(std::string_view type, std::string_view unit, int64_t period);
  void SetTime(int64_t time_nanos, int64_t duration_nanos);
  void AddComment(std::string_view text);
  void SetDefaultSampleType(std::string_view type);

  struct MappingSpec {
    uint64_t memory_start = 0;
    uint64_t memory_limit = 0;
    uint64_t file_offset = 0;
    std::string_view filename;
    std::string_view build_id;
    bool has_functions = false;
    bool has_filenames = false;
    bool has_line_numbers = false;
    bool has_inline_frames = false;
  };
  uint64_t AddMapping(const MappingSpec& spec);

  // pprof shows a system_name that differs from the name next to it (`-raw`: "name(system)"):
  // pass the name again when there is no other (a mangled C++ name is one).
  uint64_t AddFunction(std::string_view name, std::string_view system_name,
                       std::string_view filename, int64_t start_line);

  // A location by its content: mapping (0: none), address and lines (innermost first).
  uint64_t AddLocation(uint64_t mapping_id, uint64_t address, std::span<const Line> lines);
  // The location the caller cached under `key` (its own frame identity: bytes it chooses), or
  // 0. A caller that finds one skips building the lines again.
  uint64_t FindLocationByKey(std::string_view key) const;
  // AddLocation, remembered under `key` for FindLocationByKey.
  uint64_t AddLocationByKey(std::string_view key, uint64_t mapping_id, uint64_t address,
                            std::span<const Line> lines);

  Label StringLabel(std::string_view key, std::string_view value);
  Label NumLabel(std::string_view key, int64_t value, std::string_view unit = {});

  // One sample (location ids leaf first, as returned by AddLocation; labels from *Label).
  // `values` has one entry per sample type (missing ones count 0, extra ones are dropped). A
  // sample with the same locations and labels (in the same order) as an earlier one adds its
  // values to that one. Add the sample types first: a type added later is 0 in earlier samples.
  void AddSample(std::span<const uint64_t> location_ids, std::span<const int64_t> values,
                 std::span<const Label> labels = {});

  size_t sample_count() const { return profile_.sample.size(); }

  // The profile built so far; the builder starts over empty.
  Profile Take();

 private:
  Profile profile_;
  // Content (the fields' bytes) to id; samples_ maps locations and labels to a sample's index.
  KeyTable strings_, functions_, mappings_, locations_, location_keys_, samples_;
  std::string scratch_;  // the key being looked up
};

}  // namespace jitsym::client::pprof

#endif  // JITSYM_CLIENT_PROFILE_PROTO_H_
