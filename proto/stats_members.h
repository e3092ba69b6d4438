// The members of StatsResponse in wire order, in one place for the encoder and the decoder
// (internal to proto/).
#ifndef JITSYM_PROTO_STATS_MEMBERS_H_
#define JITSYM_PROTO_STATS_MEMBERS_H_

#include "proto/protocol.h"

namespace jitsym::proto {

// Calls f(name, member) for each counter; `Stats` is StatsResponse or const StatsResponse.
template <typename Stats, typename F>
void ForEachStat(Stats& s, F&& f) {
  f("processes", s.processes);
  f("ranges", s.ranges);
  f("memory_bytes", s.memory_bytes);
  f("files_followed", s.files_followed);
  f("files_failed", s.files_failed);
  f("bytes_ingested", s.bytes_ingested);
  f("records_ingested", s.records_ingested);
  f("files_untrusted", s.files_untrusted);
  f("files_pending", s.files_pending);
  f("files_over_limit", s.files_over_limit);
  f("files_unattached", s.files_unattached);
  f("denied", s.denied);
  f("queries", s.queries);
  f("addresses", s.addresses);
  f("connections", s.connections);
  f("errors", s.errors);
  f("uptime_ns", s.uptime_ns);
  f("processes_exited", s.processes_exited);
  f("evictions", s.evictions);
  f("memory_budget_bytes", s.memory_budget_bytes);
  f("parse_workers", s.parse_workers);
  f("parse_workers_started", s.parse_workers_started);
  f("parse_failures", s.parse_failures);
  f("parse_refused", s.parse_refused);
  f("parse_tables_bytes", s.parse_tables_bytes);
}

}  // namespace jitsym::proto

#endif  // JITSYM_PROTO_STATS_MEMBERS_H_
