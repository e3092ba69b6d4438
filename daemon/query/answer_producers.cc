#include "daemon/query/answer_producers.h"

#include <utility>

namespace jitsym::query {
namespace {

// Every step appends first and moves on after (server::AnswerProducer::Step): a step that
// throws leaves the producer where it was, and Fail closes exactly what was sent.

class Symbols : public server::AnswerProducer {
 public:
  Symbols(std::string id_json, std::unique_ptr<SymbolsCursor> cursor)
      : id_json_(std::move(id_json)), cursor_(std::move(cursor)) {}

  bool Step(std::string* out) override {
    if (!started_) {
      proto::EncodeSymbolsResponseBegin(id_json_, cursor_->pid(), cursor_->incarnation(), out);
      started_ = true;
      return true;
    }
    if (!cursor_->Next(&entry_)) {
      proto::EncodeListResponseEnd(out);
      return false;
    }
    if (sent_ > 0) out->push_back(',');
    proto::EncodeSymbolEntry(entry_, out);
    ++sent_;
    return true;
  }
  void Fail(std::string_view code, std::string_view message, std::string* out) override {
    out->push_back(']');
    proto::EncodeAnswerFailure(code, message, out);
  }
  size_t memory_bytes() const override { return sizeof(*this) + cursor_->memory_bytes(); }

 private:
  std::string id_json_;
  std::unique_ptr<SymbolsCursor> cursor_;
  proto::SymbolEntry entry_;  // one at a time, its strings' storage reused
  bool started_ = false;
  uint64_t sent_ = 0;
};

class Processes : public server::AnswerProducer {
 public:
  Processes(std::string id_json, std::unique_ptr<ProcessesCursor> cursor)
      : id_json_(std::move(id_json)), cursor_(std::move(cursor)) {}

  bool Step(std::string* out) override {
    switch (part_) {
      case Part::kHead:
        proto::EncodeProcessesResponseBegin(id_json_, out);
        part_ = Part::kProcesses;
        return true;
      case Part::kProcesses:
        if (cursor_->NextProcess(&process_)) {
          if (sent_++ > 0) out->push_back(',');
          proto::EncodeProcessInfo(process_, out);
          return true;
        }
        part_ = Part::kUnattached;
        sent_ = 0;
        [[fallthrough]];
      case Part::kUnattached:
        if (cursor_->NextUnattached(&unattached_)) {
          // The list is sent only when it has a file.
          if (sent_++ == 0) {
            proto::EncodeUnattachedBegin(out);
          } else {
            out->push_back(',');
          }
          proto::EncodeUnattachedInfo(unattached_, out);
          return true;
        }
        proto::EncodeListResponseEnd(out);
        part_ = Part::kDone;
        return false;
      case Part::kDone:
        break;
    }
    return false;
  }
  void Fail(std::string_view code, std::string_view message, std::string* out) override {
    out->push_back(']');  // the processes, or the unattached files
    proto::EncodeAnswerFailure(code, message, out);
  }

 private:
  enum class Part { kHead, kProcesses, kUnattached, kDone };
  std::string id_json_;
  std::unique_ptr<ProcessesCursor> cursor_;
  Part part_ = Part::kHead;
  uint64_t sent_ = 0;  // elements of the current list
  proto::ProcessInfo process_;
  proto::UnattachedInfo unattached_;
};

class Explain : public server::AnswerProducer {
 public:
  Explain(std::string id_json, proto::ExplainResponse explain)
      : explain_(std::move(explain)), steps_(std::move(id_json), explain_) {}

  bool Step(std::string* out) override { return steps_.Step(out); }
  void Fail(std::string_view code, std::string_view message, std::string* out) override {
    steps_.Close(out);
    proto::EncodeAnswerFailure(code, message, out);
  }
  // The report's elements and their strings (at most 1,000 definitions of names up to 16 KiB).
  size_t memory_bytes() const override {
    size_t n = sizeof(*this) + explain_.rule.size();
    for (const auto& inc : explain_.incarnations) {
      n += sizeof(inc) + inc.cgroup.value_or("").size();
      for (const auto& s : inc.sources) n += sizeof(s) + s.path.size() + s.error.size();
    }
    for (const auto& d : explain_.definitions) n += sizeof(d) + d.name.size() + d.source.size();
    for (const auto& i : explain_.ignored) n += sizeof(i) + i.path.size() + i.reason.size();
    for (const auto& r : explain_.answer.results) n += proto::LookupResultStringBytes(r);
    return n;
  }

 private:
  proto::ExplainResponse explain_;
  proto::ExplainAnswerSteps steps_;  // reads explain_
};

}  // namespace

std::unique_ptr<server::AnswerProducer> SymbolsProducer(std::string id_json,
                                                        std::unique_ptr<SymbolsCursor> cursor) {
  return std::make_unique<Symbols>(std::move(id_json), std::move(cursor));
}

std::unique_ptr<server::AnswerProducer> ProcessesProducer(std::string id_json,
                                                          std::unique_ptr<ProcessesCursor> cursor) {
  return std::make_unique<Processes>(std::move(id_json), std::move(cursor));
}

std::unique_ptr<server::AnswerProducer> ExplainProducer(std::string id_json,
                                                        proto::ExplainResponse explain) {
  return std::make_unique<Explain>(std::move(id_json), std::move(explain));
}

}  // namespace jitsym::query
