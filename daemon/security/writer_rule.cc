// The writer rule of writer_rule.h.
#include "daemon/security/writer_rule.h"

#include "daemon/security/file_trust.h"

namespace jitsym::security {
namespace {

bool MayHaveWritten(const WriterCandidate& c, const WriterFacts& f) {
  // A file of root's may be any process's; a user's file only its own processes'.
  return f.file_uid == 0 || f.file_uid == c.uid;
}

std::string PidList(const std::vector<const WriterCandidate*>& list) {
  std::string out;
  for (const WriterCandidate* c : list) {
    if (!out.empty()) out += ", ";
    out += std::to_string(c->host_pid);
  }
  return out;
}

}  // namespace

WriterJudgement JudgeWriter(const WriterFacts& f, bool waited) {
  std::vector<const WriterCandidate*> all;
  for (const WriterCandidate& c : f.in_container) all.push_back(&c);
  if (f.host) all.push_back(&*f.host);
  for (const WriterCandidate& c : f.namesakes) all.push_back(&c);

  // 1. Holders: a mapping or an open descriptor names the writer. Several (a forked child
  //    keeps its parent's mappings): the one that calls itself by the file's number.
  std::vector<const WriterCandidate*> holders;
  for (const WriterCandidate* c : all) {
    if (c->holds) holders.push_back(c);
  }
  if (holders.size() > 1) {
    std::vector<const WriterCandidate*> named;
    for (const WriterCandidate* c : holders) {
      if (c->nspid == f.name_pid) named.push_back(c);
    }
    if (named.size() == 1) holders = named;
  }
  if (holders.size() == 1) return {WriterKind::kProcess, holders[0]->host_pid, false, {}};
  if (holders.size() > 1) {
    return {WriterKind::kUnattached, 0, false,
            "mapped or held open by several processes (" + PidList(holders) + ")"};
  }

  // 2. A container's filesystem: the number is what one of its processes calls itself.
  if (f.container_dir) {
    if (f.in_container.size() == 1) {
      return {WriterKind::kProcess, f.in_container[0].host_pid, false, {}};
    }
    if (f.in_container.size() > 1) {
      std::vector<const WriterCandidate*> list;
      for (const WriterCandidate& c : f.in_container) list.push_back(&c);
      const std::string why = "several processes of the container call themselves " +
                              std::to_string(f.name_pid) + " (" + PidList(list) + ")";
      return {waited ? WriterKind::kUnattached : WriterKind::kWait, 0, false, why};
    }
    if (waited) {
      return {WriterKind::kUnattached, 0, false,
              "no process of the container calls itself " + std::to_string(f.name_pid)};
    }
    return {WriterKind::kWait, 0, false,
            "waiting for process " + std::to_string(f.name_pid) + " of the container"};
  }

  // 3. A host directory: the host pid, unless the number is also a plausible writer's pid in
  //    another pid namespace.
  std::vector<const WriterCandidate*> others;
  for (const WriterCandidate& c : f.namesakes) {
    if (MayHaveWritten(c, f)) others.push_back(&c);
  }
  if (!others.empty()) {
    const std::string why = "pid " + std::to_string(f.name_pid) +
                            " is also the pid inside another pid namespace of host pid " +
                            PidList(others) + ", and no process maps or holds the file";
    return {waited ? WriterKind::kUnattached : WriterKind::kWait, 0, false, why};
  }
  if (f.host && f.host->nspid != f.name_pid) {
    // The host pid belongs to a process of a container, which calls itself otherwise and
    // would not name a file so: whoever wrote it has exited.
    return {WriterKind::kByName, f.name_pid, true, {}};
  }
  if (f.host && f.jitdump && f.found_at_startup && f.host->start_ns != 0 &&
      f.host->start_ns <= f.file_ctime_ns + kStartToleranceNs) {
    // Written while this process ran, yet not mapped by it: a live jitdump writer keeps its
    // file mapped until it exits, so another process wrote it (one of another pid namespace
    // that has gone).
    return {WriterKind::kUnattached, 0, false,
            "pid " + std::to_string(f.name_pid) +
                " is alive but does not map this jitdump, so did not write it"};
  }
  return {WriterKind::kByName, f.name_pid, false, {}};
}

}  // namespace jitsym::security
