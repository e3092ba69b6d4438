// The answers the server pulls step by step as the client reads them (server::AnswerProducer):
// symbols from its cursor, processes from the index view, explain from its report. Each step is
// the head, one element or the end, encoded by the protocol's encoder of that element (the one
// the whole answer uses too), so an answer of any size holds one element's text at a time
// beside what its cursor reads.
#ifndef JITSYM_DAEMON_QUERY_ANSWER_PRODUCERS_H_
#define JITSYM_DAEMON_QUERY_ANSWER_PRODUCERS_H_

#include <memory>
#include <string>

#include "daemon/query/processes_query.h"
#include "daemon/query/symbols_query.h"
#include "daemon/server/server.h"
#include "proto/protocol.h"

namespace jitsym::query {

std::unique_ptr<server::AnswerProducer> SymbolsProducer(std::string id_json,
                                                        std::unique_ptr<SymbolsCursor> cursor);
std::unique_ptr<server::AnswerProducer> ProcessesProducer(std::string id_json,
                                                          std::unique_ptr<ProcessesCursor> cursor);
// The report is built whole (it is bounded: kMaxExplainDefinitions definitions, the
// incarnations of one pid) and sent in steps.
std::unique_ptr<server::AnswerProducer> ExplainProducer(std::string id_json,
                                                        proto::ExplainResponse explain);

}  // namespace jitsym::query

#endif  // JITSYM_DAEMON_QUERY_ANSWER_PRODUCERS_H_
