// Printable stacks of a profile's samples (see named_stacks.h).
#include "client/named_stacks.h"

#include <cstdio>
#include <regex>

#include "client/pc_resolver.h"

namespace jitsym::client {
namespace {

// Short names of native functions, computed once per name.
class ShortNames {
 public:
  const std::string& Of(const std::string& name) {
    auto [it, inserted] = names_.try_emplace(name);
    if (inserted) it->second = ShortFunctionName(name);
    return it->second;
  }

 private:
  std::unordered_map<std::string, std::string> names_;
};

}  // namespace

std::string ShortFunctionName(std::string name) {
  static const std::regex args(R"(\([^()]*\)(\s*const)?)");
  static const std::regex templates(R"(<[^<>]*>)");
  static const std::regex leading(R"(^.*\s+(\w+::))");
  if (name.find('(') != std::string::npos) {
    for (std::string next; (next = std::regex_replace(name, args, "")) != name;) name = next;
  }
  if (name.find('<') != std::string::npos) {
    for (std::string next; (next = std::regex_replace(name, templates, "")) != name;) {
      name = next;
    }
  }
  if (name.find("::") != std::string::npos) {
    name = std::regex_replace(name, leading, "$1", std::regex_constants::format_first_only);
  }
  return name;
}

std::string HexPc(uint64_t pc) {
  char buf[24];
  std::snprintf(buf, sizeof(buf), "0x%016llx", static_cast<unsigned long long>(pc));
  return buf;
}

NamedStacks CpuProfileStacks(const CpuProfile& profile, const ResolvedPcs& resolved) {
  NamedStacks named;
  ShortNames short_names;
  for (const auto& s : profile.samples) {
    auto& stack = named.stacks.emplace_back();
    auto& origins = named.origins.emplace_back();
    named.counts.push_back(s.count);
    const uint64_t* p = profile.pcs_of(s);
    for (uint32_t k = 0; k < s.depth; ++k) {
      const uint64_t pc = ResolvedPc(p, k);
      auto it = resolved.named.find(pc);
      if (it == resolved.named.end()) {
        stack.push_back(HexPc(pc));
        origins.push_back(proto::Origin::kUnknown);
        continue;
      }
      const bool native = it->second.origin == proto::Origin::kElf;
      for (const NamedFrame& f : it->second.frames) {  // innermost first
        stack.push_back(native ? short_names.Of(f.name) : f.name);
        origins.push_back(it->second.origin);
      }
    }
  }
  return named;
}

NamedStacks ProtoProfileStacks(const pprof::Profile& p, size_t value) {
  pprof::ProfileIndex index(p);
  NamedStacks named;
  ShortNames short_names;
  for (const pprof::Sample& s : p.sample) {
    auto& stack = named.stacks.emplace_back();
    const int64_t v = value < s.value.size() ? s.value[value] : 0;
    named.counts.push_back(v < 0 ? 0 : static_cast<uint64_t>(v));
    for (uint64_t id : s.location_id) {
      const pprof::Location* loc = index.location(id);
      const pprof::Mapping* m = loc == nullptr ? nullptr : index.mapping(loc->mapping_id);
      const bool native = m != nullptr && IsNativeFile(p.str(m->filename));
      bool any = false;
      if (loc != nullptr) {
        for (const pprof::Line& line : loc->line) {  // innermost first
          const pprof::Function* f = index.function(line.function_id);
          if (f == nullptr) continue;
          const std::string name(p.str(f->name));
          stack.push_back(native ? short_names.Of(name) : name);
          any = true;
        }
      }
      if (!any) {
        stack.push_back(HexPc(loc == nullptr ? 0 : loc->address));
      }
    }
  }
  return named;
}

}  // namespace jitsym::client
