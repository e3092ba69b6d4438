// Naming a profile.proto's locations through jitsymd (see profile_symbolize.h).
#include "client/profile_symbolize.h"

#include <algorithm>
#include <map>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

namespace jitsym::client {
namespace {

// The sample's process: its numeric `pid` label, else the default.
std::optional<int64_t> PidOf(const pprof::Profile& p, const pprof::Sample& s,
                             std::optional<int64_t> default_pid) {
  for (const pprof::Label& l : s.label) {
    if (p.str(l.key) == "pid" && l.str == 0 && l.num > 0) return l.num;
  }
  return default_pid;
}

bool Unnamed(const pprof::Location& loc) {
  return std::none_of(loc.line.begin(), loc.line.end(),
                      [](const pprof::Line& l) { return l.function_id != 0; });
}

// Appends strings and functions to a profile, reusing what it has.
class Appender {
 public:
  explicit Appender(pprof::Profile* p) : p_(p) {
    for (size_t i = 0; i < p->string_table.size(); ++i) strings_.emplace(p->string_table[i], i);
    for (const pprof::Function& f : p->function) next_function_ = std::max(next_function_, f.id);
    ++next_function_;
  }

  int64_t String(const std::string& s) {
    auto [it, inserted] = strings_.try_emplace(s, p_->string_table.size());
    if (inserted) p_->string_table.push_back(s);
    return static_cast<int64_t>(it->second);
  }

  uint64_t Function(const std::string& name, const std::string& file) {
    auto [it, inserted] = functions_.try_emplace({name, file}, next_function_);
    if (inserted) {
      pprof::Function f;
      f.id = next_function_++;
      f.name = String(name);
      f.system_name = f.name;
      f.filename = String(file);
      p_->function.push_back(f);
    }
    return it->second;
  }

 private:
  pprof::Profile* p_;
  std::unordered_map<std::string, size_t> strings_;
  std::map<std::pair<std::string, std::string>, uint64_t> functions_;
  uint64_t next_function_ = 0;
};

}  // namespace

bool SymbolizeProfile(pprof::Profile* profile, std::optional<int64_t> default_pid,
                      PcResolver* resolver, FrameSummary* jit, FrameSummary* files,
                      SymbolizeCounts* counts) {
  pprof::Profile& p = *profile;
  std::unordered_map<uint64_t, size_t> loc_index, map_index;
  uint64_t next_location = 0;
  for (size_t i = 0; i < p.location.size(); ++i) {
    loc_index.emplace(p.location[i].id, i);
    next_location = std::max(next_location, p.location[i].id);
  }
  ++next_location;
  for (size_t i = 0; i < p.mapping.size(); ++i) map_index.emplace(p.mapping[i].id, i);
  auto mapping_of = [&](const pprof::Location& loc) -> const pprof::Mapping* {
    auto it = map_index.find(loc.mapping_id);
    return it == map_index.end() ? nullptr : &p.mapping[it->second];
  };
  auto in_file = [&](const pprof::Location& loc) {
    const pprof::Mapping* m = mapping_of(loc);
    return m != nullptr && IsNativeFile(p.str(m->filename));
  };

  // Which process each unnamed location is asked for: JIT locations belong to the first process
  // that used them; another process gets a copy. Samples without a pid are one more "process"
  // (kNoPid), whose copies are not asked about: JIT names of one process never reach samples of
  // another, nor samples whose process is unknown. Native locations are the same everywhere.
  constexpr int64_t kNoPid = -1;
  std::unordered_map<uint64_t, int64_t> owner;              // location id -> pid
  std::map<std::pair<uint64_t, int64_t>, uint64_t> copies;  // (location, pid) -> copy
  std::map<int64_t, std::vector<size_t>> by_pid;            // pid -> location indices
  std::vector<size_t> file_locations;
  std::unordered_set<uint64_t> seen_file;
  auto claim = [&](size_t index, int64_t pid) {
    if (pid == kNoPid) {
      ++counts->no_pid;
    } else {
      by_pid[pid].push_back(index);
    }
  };
  for (pprof::Sample& s : p.sample) {
    const int64_t pid = PidOf(p, s, default_pid).value_or(kNoPid);
    for (uint64_t& id : s.location_id) {
      auto li = loc_index.find(id);
      if (li == loc_index.end() || !Unnamed(p.location[li->second])) continue;
      const size_t index = li->second;
      if (in_file(p.location[index])) {
        if (seen_file.insert(id).second) file_locations.push_back(index);
        continue;
      }
      auto [o, first] = owner.try_emplace(id, pid);
      if (first) {
        claim(index, pid);
        continue;
      }
      if (o->second == pid) continue;
      auto [c, made] = copies.try_emplace({id, pid}, next_location);
      if (made) {
        pprof::Location copy = p.location[index];
        copy.id = next_location++;
        p.location.push_back(copy);
        claim(p.location.size() - 1, pid);
      }
      id = c->second;
    }
  }
  for (const auto& entry : by_pid) counts->pids.push_back(entry.first);

  Appender add(&p);
  auto fill = [&](size_t index, const NamedPc& named) {
    pprof::Location& loc = p.location[index];
    loc.line.clear();
    for (const NamedFrame& f : named.frames) {  // innermost first, as pprof's lines
      loc.line.push_back({add.Function(f.name, f.file), f.line, f.column});
    }
  };

  // JIT code, per process.
  for (const auto& entry : by_pid) {
    const std::vector<size_t>& which = entry.second;  // a plain reference: lambdas capture it
    std::vector<uint64_t> addrs;
    for (size_t index : which) addrs.push_back(p.location[index].address);
    proto::LookupRequest request;
    request.pid = entry.first;
    if (!resolver->Ask(
            request, addrs,
            [&](size_t i, const proto::LookupResult& r) { fill(which[i], NamePc(r)); }, jit)) {
      return false;
    }
  }
  // Native code, per file, by file offset.
  std::map<std::string, std::vector<size_t>> by_file;
  for (size_t index : file_locations) {
    by_file[std::string(p.str(mapping_of(p.location[index])->filename))].push_back(index);
  }
  for (const auto& entry : by_file) {
    const std::string& file = entry.first;
    const std::vector<size_t>& which = entry.second;  // a plain reference: lambdas capture it
    std::vector<uint64_t> offsets;
    for (size_t index : which) {
      const pprof::Location& loc = p.location[index];
      const pprof::Mapping* m = mapping_of(loc);
      offsets.push_back(loc.address - m->memory_start + m->file_offset);
    }
    proto::LookupRequest by_image;
    by_image.image = file;
    by_image.file_offset = true;
    if (!resolver->Ask(
            by_image, offsets,
            [&](size_t i, const proto::LookupResult& r) {
              const size_t index = which[i];
              fill(index, NamePc(r));
              pprof::Mapping& m = p.mapping[map_index[p.location[index].mapping_id]];
              if (!r.build_id.empty() && m.build_id == 0) {
                m.build_id = add.String(std::string(r.build_id));
              }
            },
            files)) {
      return false;
    }
  }
  // Mappings whose every location now has functions: pprof need not look for their files.
  std::unordered_map<uint64_t, bool> complete;
  for (const pprof::Location& loc : p.location) {
    if (loc.mapping_id == 0) continue;
    auto [it, _] = complete.try_emplace(loc.mapping_id, true);
    if (Unnamed(loc)) it->second = false;
  }
  for (pprof::Mapping& m : p.mapping) {
    auto it = complete.find(m.id);
    if (it != complete.end() && it->second) {
      m.has_functions = m.has_filenames = m.has_line_numbers = m.has_inline_frames = true;
    }
  }
  return true;
}

}  // namespace jitsym::client
