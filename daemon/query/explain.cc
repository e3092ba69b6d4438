// The "explain" operation: see explain.h.
#include "daemon/query/explain.h"

#include <algorithm>
#include <deque>
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

// Whether a definition valid in [from, to) answered at `time` (nullopt: now, the newest one
// still valid).
bool ValidAt(uint64_t from, std::optional<uint64_t> to, std::optional<uint64_t> time) {
  if (!time) return !to;
  return from <= *time && (!to || *time < *to);
}

std::string At(std::optional<uint64_t> time) {
  return time ? "at T=" + std::to_string(*time) : "now (no time given: the newest definitions)";
}

// The origins of a process's sources in precedence order, each once: "jitdump, then perfmap".
std::string Precedence(const index::ProcessView& process) {
  std::vector<std::string> seen;
  for (const auto& s : process.sources) {
    const std::string name(OriginName(s->origin));
    if (std::find(seen.begin(), seen.end(), name) == seen.end()) seen.push_back(name);
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

// The definitions of the address in the order the sources made them, keeping only what the
// report lists: the newest kMaxExplainDefinitions, and the one that answered if it is older.
// An address a JIT reused a million times has a million definitions; their names are views
// into the index until the end, and only the listed ones are copied.
class NewestDefinitions {
 public:
  struct Seen {
    uint64_t incarnation;
    proto::Origin origin;
    const std::string* source;  // the source's path, in the index view
    index::Definition definition;
  };
  // `answer`: the lookup's found answer (null if none), which names the definition that gave
  // it (the first one of its incarnation and source, at its start, valid at `time`).
  NewestDefinitions(const proto::LookupResult* answer, std::optional<uint64_t> time)
      : answer_(answer), time_(time) {}

  void Add(const Seen& seen) {
    if (!picked_ && answer_ != nullptr && IsPicked(seen)) {
      picked_ = Make(seen);
      picked_->picked = true;
      picked_at_ = seen_;
    }
    ++seen_;
    newest_.push_back(seen);
    if (newest_.size() > kMaxExplainDefinitions) newest_.pop_front();
  }
  bool picked() const { return picked_.has_value(); }
  // An answer no definition of a source gave (an image's): the newest of all.
  void AddPicked(proto::ExplainDefinition d) { extra_ = std::move(d); }

  void Finish(proto::ExplainResponse* out) {
    const uint64_t total = seen_ + (extra_ ? 1 : 0);
    const uint64_t listed = std::min<uint64_t>(total, kMaxExplainDefinitions);
    const uint64_t dropped = total - listed;  // the oldest
    out->definitions_omitted = dropped;
    if (picked_ && picked_at_ < dropped) {  // older than the listed ones: kept, first
      out->definitions.push_back(std::move(*picked_));
      --out->definitions_omitted;
    }
    const uint64_t first = seen_ - newest_.size();  // the place of newest_[0] among all seen
    for (size_t i = 0; i < newest_.size(); ++i) {
      if (first + i < dropped) continue;
      proto::ExplainDefinition d = Make(newest_[i]);
      d.picked = first + i == picked_at_;
      out->definitions.push_back(std::move(d));
    }
    if (extra_) out->definitions.push_back(std::move(*extra_));
  }

 private:
  static proto::ExplainDefinition Make(const Seen& s) {
    proto::ExplainDefinition d;
    d.incarnation = s.incarnation;
    d.origin = s.origin;
    d.source = *s.source;
    d.name = s.definition.name;
    d.removed = s.definition.removed;
    d.start = s.definition.start;
    d.size = s.definition.size;
    d.from = s.definition.from;
    d.to = s.definition.to;
    return d;
  }
  bool IsPicked(const Seen& s) const {
    const index::Definition& d = s.definition;
    if (d.removed || s.incarnation != answer_->incarnation || *s.source != answer_->source ||
        d.start != answer_->start) {
      return false;
    }
    return ValidAt(d.from, d.to, time_);
  }

  const proto::LookupResult* answer_;
  std::optional<uint64_t> time_;
  std::deque<Seen> newest_;
  uint64_t seen_ = 0;
  std::optional<proto::ExplainDefinition> picked_;
  uint64_t picked_at_ = UINT64_MAX;  // its place among all seen
  std::optional<proto::ExplainDefinition> extra_;
};

}  // namespace

proto::LookupRequest ExplainLookup(const proto::ExplainRequest& request) {
  proto::LookupRequest lookup;
  lookup.pid = request.pid;
  lookup.image = request.image;
  lookup.image_fd = request.image_fd;
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
  NewestDefinitions definitions(a != nullptr && a->found ? a : nullptr, request.time);
  if (request.pid && !denied) {
    if (const auto* incarnations = view.processes.Find(process_pid)) {
      for (const auto& p : *incarnations) {
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
          es.origin = s->origin;
          es.path = s->path;
          es.owner = s->owner;
          es.trust = Trust(*s, *p);
          es.state = s->state;
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
            definitions.Add({p->incarnation, es.origin, &s->path, d});
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

  // The definition that answered: from the source and incarnation the lookup named, valid at
  // T; else an image or ELF symbol, valid as long as the image is mapped (the newest).
  if (a != nullptr && a->found && !definitions.picked()) {
    proto::ExplainDefinition d;
    d.origin = a->origin;
    d.source = std::string(a->source.empty() ? a->image : a->source);
    d.name = a->name;
    d.start = a->start;
    d.size = a->size;
    d.picked = true;
    definitions.AddPicked(std::move(d));
  }
  definitions.Finish(&out);
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
