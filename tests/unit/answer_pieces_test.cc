// Answers in pieces (docs/protocol.md, *Large answers*): the pieces give the bytes of the whole
// answer, a failure after the first piece still ends a valid line that decodes as an error,
// and a client reads such an answer element by element (ArrayAnswerReader), fed in pieces of
// any size.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "proto/array_answer_reader.h"
#include "proto/protocol.h"

namespace jitsym::proto {
namespace {

SymbolsResponse SomeSymbols(int n) {
  SymbolsResponse s;
  s.pid = 42;
  s.incarnation = 3;
  for (int i = 0; i < n; ++i) {
    s.symbols.push_back({0x7f0000000000u + 0x40u * i, 0x40, "f" + std::to_string(i) + " \"]},[{",
                         i % 2 ? Origin::kR2rmap : Origin::kJitdump, i % 2 ? "Img" : ""});
  }
  return s;
}

ProcessesResponse SomeProcesses(int n, int unattached) {
  ProcessesResponse p;
  for (int i = 0; i < n; ++i) {
    ProcessInfo& info = p.processes.emplace_back();
    info.pid = 100 + i;
    info.incarnation = i;
    info.alive = i % 2;
    info.uid = 1000;
    info.sources.push_back({Origin::kPerfmap, "/tmp/perf-" + std::to_string(100 + i) + ".map",
                            SourceState::kFollowing, 5, 100, ""});
  }
  for (int i = 0; i < unattached; ++i)
    p.unattached.push_back({"/tmp/x" + std::to_string(i), 7, "?"});
  return p;
}

TEST(AnswerPieces, SymbolsAndProcessesPiecesAreTheWholeAnswer) {
  for (int n : {0, 1, 5}) {
    Response whole{"\"q\"", SomeSymbols(n)};
    std::string want;
    EncodeResponse(whole, &want);
    std::string got;
    EncodeSymbolsResponseBegin("\"q\"", 42, 3, &got);
    for (int i = 0; i < n; ++i) {
      if (i > 0) got.push_back(',');
      EncodeSymbolEntry(std::get<SymbolsResponse>(whole.body).symbols[i], &got);
    }
    EncodeListResponseEnd(&got);
    EXPECT_EQ(got, want);
  }
  for (auto [n, u] : {std::pair(0, 0), std::pair(3, 0), std::pair(0, 2), std::pair(2, 2)}) {
    const ProcessesResponse p = SomeProcesses(n, u);
    std::string want;
    EncodeResponse({"", p}, &want);
    std::string got;
    EncodeProcessesResponseBegin("", &got);
    for (int i = 0; i < n; ++i) {
      if (i > 0) got.push_back(',');
      EncodeProcessInfo(p.processes[i], &got);
    }
    if (u > 0) EncodeUnattachedBegin(&got);
    for (int i = 0; i < u; ++i) {
      if (i > 0) got.push_back(',');
      EncodeUnattachedInfo(p.unattached[i], &got);
    }
    EncodeListResponseEnd(&got);
    EXPECT_EQ(got, want) << n << " processes, " << u << " unattached";
  }
}

ExplainResponse SomeExplain(int incarnations, int definitions, int ignored) {
  ExplainResponse e;
  e.pid = 9;
  e.addr = 0x1000;
  e.time = 77;
  for (int i = 0; i < incarnations; ++i) {
    ExplainIncarnation& inc = e.incarnations.emplace_back();
    inc.incarnation = i;
    inc.sources.push_back(
        {Origin::kJitdump, "/tmp/jit-9.dump", 0, "root", SourceState::kClosed, 1, 2, 3, ""});
  }
  for (int i = 0; i < definitions; ++i) {
    ExplainDefinition& d = e.definitions.emplace_back();
    d.origin = Origin::kJitdump;
    d.source = "/tmp/jit-9.dump";
    d.name = "f" + std::to_string(i);
    d.from = i;
  }
  e.definitions_omitted = definitions > 1 ? 5 : 0;
  for (int i = 0; i < ignored; ++i) e.ignored.push_back({"/tmp/perf-9.map", "untrusted"});
  LookupResult& r = e.answer.results.emplace_back();
  r.addr = 0x1000;
  r.found = true;
  r.name = "f0";
  e.rule = "the rule";
  return e;
}

TEST(AnswerPieces, ExplainStepsAreTheWholeAnswer) {
  for (auto [i, d, g] : {std::tuple(0, 0, 0), std::tuple(2, 3, 1), std::tuple(1, 0, 2)}) {
    const ExplainResponse e = SomeExplain(i, d, g);
    std::string want;
    EncodeResponse({"5", e}, &want);
    ExplainAnswerSteps steps("5", e);
    std::string got;
    int n = 0;
    while (steps.Step(&got)) ++n;
    EXPECT_EQ(got, want);
    EXPECT_EQ(n, 1 + i + 1 + d + 1 + g) << "one step per element and between the lists";
  }
}

TEST(AnswerPieces, AFailureAfterTheFirstPieceDecodesAsAnError) {
  // Symbols: the list is closed, then the error.
  std::string line;
  EncodeSymbolsResponseBegin("1", 42, 3, &line);
  EncodeSymbolEntry(SomeSymbols(1).symbols[0], &line);
  line.push_back(']');
  EncodeAnswerFailure(kErrInternal, "answer incomplete: out of memory", &line);
  ASSERT_EQ(line.back(), '\n');
  line.pop_back();
  Result<Response> r = DecodeResponse(line);
  ASSERT_TRUE(r) << r.error().message;
  const auto* error = std::get_if<ErrorResponse>(&r->body);
  ASSERT_NE(error, nullptr) << "an answer with \"error\" is a failure, whatever \"ok\" said";
  EXPECT_EQ(error->code, kErrInternal);
  EXPECT_EQ(error->message, "answer incomplete: out of memory");
  EXPECT_EQ(r->id_json, "1");
  // Explain: whatever step it failed after.
  const ExplainResponse e = SomeExplain(2, 2, 1);
  for (int steps_done = 1; steps_done < 8; ++steps_done) {
    ExplainAnswerSteps steps("", e);
    std::string text;
    for (int k = 0; k < steps_done; ++k) steps.Step(&text);
    steps.Close(&text);
    EncodeAnswerFailure(kErrInternal, "broke", &text);
    text.pop_back();
    Result<Response> back = DecodeResponse(text);
    ASSERT_TRUE(back) << steps_done << ": " << back.error().message << "\n" << text;
    EXPECT_TRUE(std::holds_alternative<ErrorResponse>(back->body)) << text;
  }
}

// Feeds `line` to a reader in pieces of random sizes; returns the elements and the rest.
std::pair<std::vector<std::string>, Result<Response>> ReadInPieces(const std::string& line,
                                                                   const std::string& member,
                                                                   std::mt19937& rng) {
  ArrayAnswerReader reader(member);
  std::vector<std::string> elements;
  size_t at = 0;
  while (at < line.size()) {
    const size_t n = std::min<size_t>(line.size() - at, 1 + rng() % 40);
    Status st = reader.Feed(std::string_view(line).substr(at, n), [&](std::string_view e) {
      elements.emplace_back(e);
      return OkStatus();
    });
    if (!st.ok()) return {elements, st.error()};
    at += n;
  }
  return {elements, reader.Finish()};
}

TEST(ArrayAnswerReader, ElementsOneByOneAndTheRestAsAResponse) {
  std::mt19937 rng(1);
  const SymbolsResponse symbols = SomeSymbols(7);
  std::string line;
  EncodeResponse({"{\"symbols\":[1]}", symbols}, &line);  // an id that looks like the member
  line.pop_back();
  for (int round = 0; round < 50; ++round) {
    auto [elements, rest] = ReadInPieces(line, "symbols", rng);
    ASSERT_TRUE(rest) << rest.error().message;
    ASSERT_EQ(elements.size(), symbols.symbols.size());
    for (size_t i = 0; i < elements.size(); ++i) {
      SymbolEntry e;
      ASSERT_TRUE(DecodeSymbolEntry(elements[i], &e).ok()) << elements[i];
      EXPECT_EQ(e.name, symbols.symbols[i].name);
      EXPECT_EQ(e.start, symbols.symbols[i].start);
      EXPECT_EQ(e.image, symbols.symbols[i].image);
    }
    const auto& body = std::get<SymbolsResponse>(rest->body);
    EXPECT_EQ(body.pid, 42);
    EXPECT_EQ(body.incarnation, 3u);
    EXPECT_TRUE(body.symbols.empty());
    EXPECT_EQ(rest->id_json, "{\"symbols\":[1]}");
  }
  // Processes: the unattached files stay in the rest.
  const ProcessesResponse processes = SomeProcesses(4, 2);
  line.clear();
  EncodeResponse({"", processes}, &line);
  line.pop_back();
  auto [elements, rest] = ReadInPieces(line, "processes", rng);
  ASSERT_TRUE(rest) << rest.error().message;
  ASSERT_EQ(elements.size(), 4u);
  ProcessInfo p;
  ASSERT_TRUE(DecodeProcessInfo(elements[3], &p).ok());
  EXPECT_EQ(p.pid, 103);
  ASSERT_EQ(p.sources.size(), 1u);
  EXPECT_EQ(p.sources[0].path, "/tmp/perf-103.map");
  EXPECT_EQ(std::get<ProcessesResponse>(rest->body).unattached.size(), 2u);
}

TEST(ArrayAnswerReader, ErrorsAndBrokenAnswers) {
  std::mt19937 rng(2);
  // An error response has no array: it is the rest, whole.
  std::string line;
  EncodeResponse(MakeErrorResponse("", kErrNotFound, "no symbols known for pid 5"), &line);
  line.pop_back();
  auto [none, rest] = ReadInPieces(line, "symbols", rng);
  ASSERT_TRUE(rest);
  EXPECT_TRUE(none.empty());
  EXPECT_EQ(std::get<ErrorResponse>(rest->body).code, kErrNotFound);
  // An answer that broke off: the elements before it, then the failure.
  line.clear();
  EncodeSymbolsResponseBegin("", 1, 1, &line);
  EncodeSymbolEntry(SomeSymbols(1).symbols[0], &line);
  line.push_back(']');
  EncodeAnswerFailure(kErrInternal, "answer incomplete", &line);
  line.pop_back();
  auto [before_failure, failed] = ReadInPieces(line, "symbols", rng);
  ASSERT_TRUE(failed);
  EXPECT_EQ(before_failure.size(), 1u);
  EXPECT_EQ(std::get<ErrorResponse>(failed->body).message, "answer incomplete");
  // Cut inside the array, or inside an element.
  line.clear();
  EncodeResponse({"", SomeSymbols(3)}, &line);
  for (size_t cut : {line.size() / 2, line.size() - 3}) {
    auto [some, cut_rest] = ReadInPieces(line.substr(0, cut), "symbols", rng);
    EXPECT_FALSE(cut_rest) << "cut at " << cut;
  }
  // An element longer than allowed.
  ArrayAnswerReader small("symbols", 64);
  line.pop_back();
  Status st = small.Feed(line, [](std::string_view) { return OkStatus(); });
  EXPECT_FALSE(st.ok());
  // The caller's error stops the reading.
  ArrayAnswerReader reader("symbols");
  st = reader.Feed(line, [](std::string_view) { return MakeError(ErrorKind::kIo, "disk full"); });
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().message, "disk full");
}

}  // namespace
}  // namespace jitsym::proto
