// ProfileIndex and ProfileBuilder of profile_proto.h: id lookups in a decoded profile, and
// interning and sample aggregation for the encoder.
#include <algorithm>
#include <cstring>

#include "client/profile_proto.h"

namespace jitsym::client::pprof {

ProfileIndex::ProfileIndex(const Profile& profile) : profile_(profile) {
  locations_.reserve(profile.location.size());
  for (size_t i = 0; i < profile.location.size(); ++i)
    locations_.emplace(profile.location[i].id, i);
  functions_.reserve(profile.function.size());
  for (size_t i = 0; i < profile.function.size(); ++i)
    functions_.emplace(profile.function[i].id, i);
  mappings_.reserve(profile.mapping.size());
  for (size_t i = 0; i < profile.mapping.size(); ++i) mappings_.emplace(profile.mapping[i].id, i);
}

namespace {

template <typename T>
void Put(std::string& key, T v) {
  char buf[sizeof(T)];
  std::memcpy(buf, &v, sizeof(T));
  key.append(buf, sizeof(T));
}

// The id interned for `key`, or a new one made by `make` (which returns it).
template <typename Make>
uint64_t Intern(KeyTable& table, std::string_view key, Make&& make) {
  const uint64_t hash = KeyTable::Hash(key);
  if (const uint64_t* id = table.Find(key, hash)) return *id;
  const uint64_t id = make();
  table.Insert(key, hash, id);
  return id;
}

}  // namespace

ProfileBuilder::ProfileBuilder() { strings_.Insert("", 0); }

int64_t ProfileBuilder::String(std::string_view s) {
  return static_cast<int64_t>(Intern(strings_, s, [&] {
    profile_.string_table.emplace_back(s);
    return profile_.string_table.size() - 1;
  }));
}

void ProfileBuilder::AddSampleType(std::string_view type, std::string_view unit) {
  profile_.sample_type.push_back(ValueType{String(type), String(unit)});
  // Samples already added get a 0 for the new type (every sample has one value per type).
  for (Sample& s : profile_.sample) s.value.resize(profile_.sample_type.size());
}

void ProfileBuilder::SetPeriod(std::string_view type, std::string_view unit, int64_t period) {
  profile_.period_type = ValueType{String(type), String(unit)};
  profile_.period = period;
}

void ProfileBuilder::SetTime(int64_t time_nanos, int64_t duration_nanos) {
  profile_.time_nanos = time_nanos;
  profile_.duration_nanos = duration_nanos;
}

void ProfileBuilder::AddComment(std::string_view text) { profile_.comment.push_back(String(text)); }

void ProfileBuilder::SetDefaultSampleType(std::string_view type) {
  profile_.default_sample_type = String(type);
}

uint64_t ProfileBuilder::AddMapping(const MappingSpec& spec) {
  Mapping m;
  m.memory_start = spec.memory_start;
  m.memory_limit = spec.memory_limit;
  m.file_offset = spec.file_offset;
  m.filename = String(spec.filename);
  m.build_id = String(spec.build_id);
  m.has_functions = spec.has_functions;
  m.has_filenames = spec.has_filenames;
  m.has_line_numbers = spec.has_line_numbers;
  m.has_inline_frames = spec.has_inline_frames;
  scratch_.clear();
  for (uint64_t v : {m.memory_start, m.memory_limit, m.file_offset}) Put(scratch_, v);
  for (int64_t v : {m.filename, m.build_id}) Put(scratch_, v);
  Put(scratch_, static_cast<uint8_t>(m.has_functions | m.has_filenames << 1 |
                                     m.has_line_numbers << 2 | m.has_inline_frames << 3));
  return Intern(mappings_, scratch_, [&] {
    m.id = profile_.mapping.size() + 1;
    profile_.mapping.push_back(m);
    return m.id;
  });
}

uint64_t ProfileBuilder::AddFunction(std::string_view name, std::string_view system_name,
                                     std::string_view filename, int64_t start_line) {
  Function f;
  f.name = String(name);
  f.system_name = String(system_name);
  f.filename = String(filename);
  f.start_line = start_line;
  scratch_.clear();
  for (int64_t v : {f.name, f.system_name, f.filename, f.start_line}) Put(scratch_, v);
  return Intern(functions_, scratch_, [&] {
    f.id = profile_.function.size() + 1;
    profile_.function.push_back(f);
    return f.id;
  });
}

uint64_t ProfileBuilder::AddLocation(uint64_t mapping_id, uint64_t address,
                                     std::span<const Line> lines) {
  scratch_.clear();
  Put(scratch_, mapping_id);
  Put(scratch_, address);
  for (const Line& l : lines) {
    Put(scratch_, l.function_id);
    Put(scratch_, l.line);
    Put(scratch_, l.column);
  }
  return Intern(locations_, scratch_, [&] {
    Location& l = profile_.location.emplace_back();
    l.id = profile_.location.size();
    l.mapping_id = mapping_id;
    l.address = address;
    l.line.assign(lines.begin(), lines.end());
    return l.id;
  });
}

uint64_t ProfileBuilder::FindLocationByKey(std::string_view key) const {
  const uint64_t* id = location_keys_.Find(key);
  return id == nullptr ? 0 : *id;
}

uint64_t ProfileBuilder::AddLocationByKey(std::string_view key, uint64_t mapping_id,
                                          uint64_t address, std::span<const Line> lines) {
  const uint64_t hash = KeyTable::Hash(key);
  if (const uint64_t* id = location_keys_.Find(key, hash)) return *id;
  const uint64_t id = AddLocation(mapping_id, address, lines);
  location_keys_.Insert(key, hash, id);
  return id;
}

Label ProfileBuilder::StringLabel(std::string_view key, std::string_view value) {
  return Label{String(key), String(value), 0, 0};
}

Label ProfileBuilder::NumLabel(std::string_view key, int64_t value, std::string_view unit) {
  return Label{String(key), 0, value, String(unit)};
}

void ProfileBuilder::AddSample(std::span<const uint64_t> location_ids,
                               std::span<const int64_t> values, std::span<const Label> labels) {
  scratch_.clear();
  Put(scratch_, static_cast<uint64_t>(location_ids.size()));
  scratch_.append(reinterpret_cast<const char*>(location_ids.data()),
                  location_ids.size() * sizeof(uint64_t));
  for (const Label& l : labels) {
    for (int64_t v : {l.key, l.str, l.num, l.num_unit}) Put(scratch_, v);
  }
  const size_t types = profile_.sample_type.size();
  const uint64_t hash = KeyTable::Hash(scratch_);
  if (const uint64_t* index = samples_.Find(scratch_, hash)) {
    std::vector<int64_t>& sum = profile_.sample[*index].value;
    // Wrapping, not undefined, should a caller's counts ever overflow.
    for (size_t i = 0; i < types && i < values.size(); ++i) {
      sum[i] =
          static_cast<int64_t>(static_cast<uint64_t>(sum[i]) + static_cast<uint64_t>(values[i]));
    }
    return;
  }
  Sample& s = profile_.sample.emplace_back();
  s.location_id.assign(location_ids.begin(), location_ids.end());
  s.value.assign(values.begin(), values.begin() + std::min(values.size(), types));
  s.value.resize(types);
  s.label.assign(labels.begin(), labels.end());
  samples_.Insert(scratch_, hash, profile_.sample.size() - 1);
}

Profile ProfileBuilder::Take() {
  Profile out = std::move(profile_);
  *this = ProfileBuilder();
  return out;
}

}  // namespace jitsym::client::pprof
