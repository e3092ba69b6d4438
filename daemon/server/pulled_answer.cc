#include "daemon/server/pulled_answer.h"

#include <exception>
#include <utility>

#include "daemon/util/log.h"

namespace jitsym::server {

PulledAnswer::Outcome PulledAnswer::Pull(std::string* out, size_t until) {
  while (out->size() < until) {
    const size_t mark = out->size();
    try {
      const bool more = producer_->Step(out);
      started_ = true;
      if (!more) return Outcome::kDone;
    } catch (const std::exception& e) {
      out->resize(mark);  // never half an element
      return Failed(e.what(), out);
    } catch (...) {
      out->resize(mark);
      return Failed("a non-standard exception", out);
    }
  }
  return Outcome::kMore;
}

PulledAnswer::Outcome PulledAnswer::Failed(const char* what, std::string* out) {
  JITSYM_LOG(kError, "request handler failed while answering: ", what);
  error_ = std::string("internal error: ") + what;
  if (!started_) return Outcome::kFailed;
  const size_t mark = out->size();
  try {
    producer_->Fail(proto::kErrInternal, "answer incomplete: " + error_, out);
    return Outcome::kCutShort;
  } catch (...) {
    out->resize(mark);
    return Outcome::kBroken;
  }
}

proto::Response PulledAnswer::error() const {
  return proto::MakeErrorResponse(id_json_, proto::kErrInternal, error_);
}

}  // namespace jitsym::server
