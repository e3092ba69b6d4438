// An answer pulled from a RequestHandler's AnswerProducer (server.h) step by step, for a
// Session (internal to daemon/server): steps are appended until the output reaches the high
// water; a step that throws is taken back, and the answer then ends as the protocol says
// (docs/protocol.md, *Large answers*).
#ifndef JITSYM_DAEMON_SERVER_PULLED_ANSWER_H_
#define JITSYM_DAEMON_SERVER_PULLED_ANSWER_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "daemon/server/server.h"

namespace jitsym::server {

class PulledAnswer {
 public:
  // `charged`: what the session charged to the memory budget for it (released with it).
  PulledAnswer(std::unique_ptr<AnswerProducer> producer, std::string id_json, uint64_t charged)
      : producer_(std::move(producer)), id_json_(std::move(id_json)), charged_(charged) {}

  enum class Outcome {
    kMore,      // *out reached `until`: pull again once it is written
    kDone,      // the answer is complete
    kFailed,    // a step threw before anything of the answer was in *out: error() answers
    kCutShort,  // a step threw later: the answer ends with its "error" member (counted)
    kBroken,    // even that failed: close the connection once *out is written
  };
  Outcome Pull(std::string* out, size_t until);

  // kFailed: the error response that answers instead.
  proto::Response error() const;
  uint64_t charged() const { return charged_; }

 private:
  Outcome Failed(const char* what, std::string* out);

  std::unique_ptr<AnswerProducer> producer_;
  std::string id_json_;
  uint64_t charged_;
  bool started_ = false;  // a step succeeded: "ok":true may be on its way
  std::string error_;
};

}  // namespace jitsym::server

#endif  // JITSYM_DAEMON_SERVER_PULLED_ANSWER_H_
