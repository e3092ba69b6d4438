// The "explain" operation: see explain.h.
#include "daemon/query/explain.h"

#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "daemon/query/resolver.h"

namespace jitsym::query {
namespace {

// Why a followed file was believed for its process (the writer rule admits no other owner).
std::string Trust(const index::SourceView& source, const index::ProcessView& process) {
  if (!source.owner) return "";
  if (*source.owner == 0) return "root";
  if (process.uid && *process.uid == *source.owner) return "process owner";
  return "other";
}

// Whether a side file's name names pid: jit-PID.dump, perf-PID.map, perfinfo-PID.map, ...
bool NamesPid(std::string_view path, uint32_t pid) {
  const size_t slash = path.rfind('/');
  const std::string_view base = slash == std::string_view::npos ? path : path.substr(slash + 1);
  return base.find("-" + std::to_string(pid) + ".") != std::string_view::npos;
}

// Whether the definition answered at `time` (nullopt: now, the newest one still valid).
bool ValidAt(const proto::ExplainDefinition& d, std::optional<uint64_t> time) {
  if (!time) return !d.to;
  return (!d.from || *d.from <= *time) && (!d.to || *time < *d.to);
}

std::string At(std::optional<uint64_t> time) {
  return time ? "at T=" + std::to_string(*time) : "now (no time given: the newest definitions)";
}

// The origins of a process's sources in precedence order, each once: "jitdump, then perfmap".
std::string Precedence(const index::ProcessView& process) {
  std::vector<std::string> seen;
  for (const auto& s : process.sources) {
    if (std::find(seen.begin(), seen.end(), s->origin) == seen.end()) seen.push_back(s->origin);
  }
  std::string out;
  for (size_t i = 0; i < seen.size(); ++i) {
    if (i > 0) out += i + 1 == seen.size() ? " outranks " : ", ";
    out += seen[i];
  }
  return out;
}

std::string PidRule(const proto::ExplainRequest& request, const proto::LookupResult& answer,
                    const proto::ExplainResponse& out, const index::ProcessView* chosen,
                    bool any_visible) {
  const std::string pid = std::to_string(*request.pid);
  if (answer.error == kDeniedError) {
    return "lookup answers \"permission denied\": you may not query pid " + pid +
           ", so nothing else about it is shown";
  }
  if (!any_visible && !answer.found) {
    return "the daemon knows no incarnation of pid " + pid +
           " that you may query, and no image mapped at the address (in a live process of "
           "yours with that pid) answers";
  }
  std::string rule;
  // For a miss at a time outside every lifetime, say so first.
  if (!answer.found && request.time && !out.incarnations.empty()) {
    const proto::ExplainIncarnation* alive = nullptr;  // the latest started by T
    for (const auto& inc : out.incarnations) {
      if (inc.start_time && *inc.start_time <= *request.time) alive = &inc;
    }
    const auto& first = out.incarnations.front();
    if (alive == nullptr && first.start_time) {
      rule = "T is before the process started (incarnation " + std::to_string(first.incarnation) +
             " started at " + std::to_string(*first.start_time) + "); ";
    } else if (alive != nullptr && alive->exit_time && *alive->exit_time < *request.time) {
      rule = "T is after incarnation " + std::to_string(alive->incarnation) + " exited (at " +
             std::to_string(*alive->exit_time) + "); ";
    }
  }
  if (chosen != nullptr) {
    rule = "incarnation " + std::to_string(chosen->incarnation) +
           (request.time ? " (the latest started at or before T)" : " (the latest)") + " answers; ";
  }
  const bool from_index = answer.found && (answer.origin == proto::Origin::kJitdump ||
                                           answer.origin == proto::Origin::kPerfmap ||
                                           answer.origin == proto::Origin::kMlpd);
  if (from_index) {
    rule += "the first source in precedence order";
    if (chosen != nullptr && !chosen->sources.empty()) rule += " (" + Precedence(*chosen) + ")";
    rule += " with a definition valid " + At(request.time) +
            " answers, and within it the newest such definition (from <= T < to): the " +
            std::string(proto::OriginName(answer.origin)) + " definition '" +
            std::string(answer.name) + "'";
    return rule;
  }
  if (answer.found) {
    rule += "no JIT source has a definition of the address valid " + At(request.time) +
            ", so the " + std::string(proto::OriginName(answer.origin)) +
            " image mapped there answers with its symbol covering the address";
    return rule;
  }
  if (out.definitions.empty()) {
    rule +=
        "no source of the process ever defined code at the address, and no symbol of an "
        "image mapped there covers it";
    return rule;
  }
  std::optional<uint64_t> first;
  for (const auto& d : out.definitions) {
    if (d.from && (!first || *d.from < *first)) first = d.from;
  }
  rule += "no definition of the address is valid " + At(request.time);
  if (request.time && first && *first > *request.time) {
    rule += " (the first one is valid from " + std::to_string(*first) + ", later than T)";
  } else {
    rule += " (it was removed, or replaced at other addresses)";
  }
  return rule;
}

std::string ImageRule(const proto::ExplainRequest& request, const proto::LookupResult* answer) {
  const std::string image = request.image.value_or("");
  if (answer == nullptr) return "no answer for image '" + image + "'";
  if (answer->error == kDeniedError) return "lookup answers \"permission denied\"";
  if (!answer->found) return "no symbol of image '" + image + "' covers the address";
  return "the " + std::string(proto::OriginName(answer->origin)) + " symbols of image '" + image +
         "': the one covering the address answers (images do not change over time)";
}

}  // namespace

proto::LookupRequest ExplainLookup(const proto::ExplainRequest& request) {
  proto::LookupRequest lookup;
  lookup.pid = request.pid;
  lookup.image = request.image;
  lookup.time = request.time;
  proto::AddressQuery& q = lookup.addrs.emplace_back();
  q.addr = request.addr;
  return lookup;
}

proto::ExplainResponse BuildExplain(const index::IndexView& view,
                                    const proto::ExplainRequest& request,
                                    const security::PeerAccess& access, uint32_t process_pid,
                                    proto::LookupResponse answer) {
  proto::ExplainResponse out;
  out.pid = request.pid;
  out.image = request.image;
  out.addr = request.addr;
  out.time = request.time;
  const proto::LookupResult* a = answer.results.empty() ? nullptr : &answer.results.front();
  const bool denied = a != nullptr && a->error == kDeniedError;

  const index::ProcessView* chosen = nullptr;
  bool any_visible = false;
  if (request.pid && !denied) {
    if (auto it = view.processes.find(process_pid); it != view.processes.end()) {
      for (const auto& p : it->second) {
        if (!access.MaySeeProcess(p->uid)) continue;
        any_visible = true;
        if (a != nullptr && a->incarnation && *a->incarnation == p->incarnation) chosen = p.get();
        proto::ExplainIncarnation& inc = out.incarnations.emplace_back();
        inc.incarnation = p->incarnation;
        inc.alive = p->alive;
        inc.uid = p->uid;
        inc.start_time = p->start_time;
        inc.exit_time = p->exit_time;
        if (p->nspid) inc.nspid = p->nspid;
        if (!p->cgroup.empty()) inc.cgroup = p->cgroup;
        for (const auto& s : p->sources) {
          proto::ExplainSource& es = inc.sources.emplace_back();
          es.origin = proto::OriginFromName(s->origin).value_or(proto::Origin::kUnknown);
          es.path = s->path;
          es.owner = s->owner;
          es.trust = Trust(*s, *p);
          es.state = proto::SourceStateFromName(s->state).value_or(proto::SourceState::kUnknown);
          es.ranges = s->ranges;
          es.bytes_read = s->bytes_read;
          es.records = s->records;
          es.error = s->error;
          if (es.state == proto::SourceState::kUntrusted) {
            out.ignored.push_back({s->path,
                                   "untrusted: owned by neither root nor the process's "
                                   "owner"});
          }
          for (const index::Definition& d : s->code->History(request.addr)) {
            proto::ExplainDefinition& ed = out.definitions.emplace_back();
            ed.incarnation = p->incarnation;
            ed.origin = es.origin;
            ed.source = s->path;
            ed.name = d.name;
            ed.removed = d.removed;
            ed.start = d.start;
            ed.size = d.size;
            ed.from = d.from;
            ed.to = d.to;
          }
        }
      }
    }
    // Files naming the pid that no process took (their writer could not be told), listed to
    // those who may see their owner's processes, as `processes` lists them.
    // Files refused for the pid (untrusted owner, waited too long, ...), on the same terms.
    if (view.refused) {
      for (const index::RefusedFile& r : *view.refused) {
        if ((r.pid == process_pid || r.pid == static_cast<uint64_t>(*request.pid)) &&
            access.MaySeeProcess(r.uid)) {
          out.ignored.push_back({r.path, r.reason});
        }
      }
    }
    if (view.unattached) {
      for (const index::UnattachedFile& u : *view.unattached) {
        if (NamesPid(u.path, process_pid) && access.MaySeeProcess(u.uid)) {
          out.ignored.push_back({u.path, "unattached: " + u.reason});
        }
      }
    }
  }

  // The definition that answered: from the source and incarnation the lookup named, valid at T.
  bool picked = false;
  if (a != nullptr && a->found) {
    for (auto& d : out.definitions) {
      if (!d.removed && d.incarnation == a->incarnation && d.source == a->source &&
          d.start == a->start && ValidAt(d, request.time)) {
        d.picked = picked = true;
        break;
      }
    }
    if (!picked) {  // an image or ELF symbol: valid as long as the image is mapped
      proto::ExplainDefinition& d = out.definitions.emplace_back();
      d.origin = a->origin;
      d.source = std::string(a->source.empty() ? a->image : a->source);
      d.name = a->name;
      d.start = a->start;
      d.size = a->size;
      d.picked = true;
    }
  }
  if (out.definitions.size() > kMaxExplainDefinitions) {
    // Keep the newest, and the one that answered.
    const size_t drop = out.definitions.size() - kMaxExplainDefinitions;
    auto keep = std::find_if(out.definitions.begin(), out.definitions.begin() + drop,
                             [](const auto& d) { return d.picked; });
    std::optional<proto::ExplainDefinition> kept;
    if (keep != out.definitions.begin() + drop) kept = std::move(*keep);
    out.definitions.erase(out.definitions.begin(), out.definitions.begin() + drop);
    if (kept) out.definitions.insert(out.definitions.begin(), std::move(*kept));
    out.definitions_omitted = drop - (kept ? 1 : 0);
  }
  if (request.pid) {
    out.rule = a == nullptr ? "no answer" : PidRule(request, *a, out, chosen, any_visible);
    if (!out.ignored.empty() && !(a != nullptr && a->found)) {
      out.rule += "; files naming the pid were ignored (see ignored)";
    }
  } else {
    out.rule = ImageRule(request, a);
  }
  out.answer = std::move(answer);
  return out;
}

}  // namespace jitsym::query
