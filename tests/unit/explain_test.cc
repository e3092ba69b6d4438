// The explain operation on made-up index views (through QueryEngine, as a client would ask):
// the definitions over time, the one that answered, the answer being lookup's, and what a
// client that may not see the process is told. And its wire form, both ways.
#include "daemon/query/explain.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <memory>
#include <string>

#include "daemon/index/code_map.h"
#include "daemon/index/index_view.h"
#include "daemon/query/query_engine.h"

namespace jitsym::query {
namespace {

constexpr uint32_t kDeadPid = 0x7fffffe0;  // no process has it (pid_max <= 2^22)

// jitdump: f1 at 0x1000 from 100, removed at 200, f2 reusing 0x1000 from 300. perfmap: m1 at
// 0x1000 (answers only where the jitdump has nothing).
std::shared_ptr<const index::IndexView> View(uint32_t owner) {
  index::CodeMap jit;
  jit.Add(0x1000, 0x40, 100, jit.Intern("f1"));
  jit.Remove(0x1000, 0x40, 200);
  jit.Add(0x1000, 0x20, 300, jit.Intern("f2"));
  auto jsrc = std::make_shared<index::SourceView>();
  jsrc->origin = Origin::kJitdump;
  jsrc->path = "/tmp/jit-2147483616.dump";
  jsrc->state = SourceState::kFollowing;
  jsrc->owner = owner;
  jsrc->records = 3;
  jsrc->bytes_read = 400;
  jsrc->code = jit.Publish();
  index::CodeMap map;
  map.AddBackdated(0x1000, 0x100, 0, map.Intern("m1"));
  auto msrc = std::make_shared<index::SourceView>();
  msrc->origin = Origin::kPerfmap;
  msrc->path = "/tmp/perf-2147483616.map";
  msrc->state = SourceState::kClosed;
  msrc->owner = 0;
  msrc->code = map.Publish();
  auto p = std::make_shared<index::ProcessView>();
  p->pid = kDeadPid;
  p->incarnation = 5;
  p->uid = owner;
  p->start_time = 50;
  p->exit_time = 1000;
  p->sources = {jsrc, msrc};
  auto view = std::make_shared<index::IndexView>();
  view->processes.Add(kDeadPid, p);
  view->unattached = std::make_shared<const std::vector<index::UnattachedFile>>(
      std::vector<index::UnattachedFile>{{"/tmp/jit-21474836160.dump", owner, "a longer pid"},
                                         {"/tmp/perf-2147483616.map", owner, "writer unknown"},
                                         {"/tmp/perf-1.map", owner, "other pid"}});
  view->refused = std::make_shared<const std::vector<index::RefusedFile>>(
      std::vector<index::RefusedFile>{{"/tmp/jit-x.dump", 4444, kDeadPid, "untrusted: bob's"},
                                      {"/tmp/jit-y.dump", owner, kDeadPid, "untrusted: own"},
                                      {"/tmp/jit-z.dump", owner, 77, "another pid"}});
  return view;
}

server::PeerCredentials Peer(uint32_t uid) {
  server::PeerCredentials peer;
  peer.uid = uid;
  peer.gid = uid;
  return peer;
}

class ExplainTest : public ::testing::Test {
 protected:
  ExplainTest() : engine_(cell_, nullptr, QueryEngine::Options{}) {}

  proto::ExplainResponse Explain(uint64_t addr, std::optional<uint64_t> time, uint32_t uid) {
    proto::ExplainRequest e;
    e.pid = kDeadPid;
    e.addr = addr;
    e.time = time;
    proto::Request request;
    request.body = e;
    const proto::Response r = engine_.Handle(request, Peer(uid));
    const auto* out = std::get_if<proto::ExplainResponse>(&r.body);
    EXPECT_TRUE(out);
    return out ? *out : proto::ExplainResponse{};
  }
  std::string Picked(const proto::ExplainResponse& e) {
    std::string out;
    for (const auto& d : e.definitions) {
      if (d.picked) out += std::string(proto::OriginName(d.origin)) + ":" + d.name;
    }
    return out;
  }

  index::ViewCell cell_;
  QueryEngine engine_;
};

TEST_F(ExplainTest, EveryDefinitionWithItsIntervalAndTheOneThatAnswered) {
  const uint32_t me = ::getuid();
  cell_.Set(View(me));
  const proto::ExplainResponse e = Explain(0x1010, 150, me);
  ASSERT_EQ(e.definitions.size(), 4u);
  EXPECT_EQ(e.definitions[0].name, "f1");
  EXPECT_EQ(e.definitions[0].from, 100u);
  EXPECT_EQ(e.definitions[0].to, 200u);
  EXPECT_EQ(e.definitions[0].incarnation, 5u);
  EXPECT_TRUE(e.definitions[1].removed);
  EXPECT_EQ(e.definitions[1].to, 300u);
  EXPECT_EQ(e.definitions[2].name, "f2");
  EXPECT_FALSE(e.definitions[2].to.has_value());
  EXPECT_EQ(e.definitions[3].origin, proto::Origin::kPerfmap);
  EXPECT_EQ(Picked(e), "jitdump:f1");
  ASSERT_EQ(e.answer.results.size(), 1u);
  EXPECT_EQ(e.answer.results[0].name, "f1");
  EXPECT_NE(e.rule.find("jitdump outranks perfmap"), std::string::npos) << e.rule;

  // Removed from the jitdump at 250: the perf map answers, and says so.
  const proto::ExplainResponse gap = Explain(0x1010, 250, me);
  EXPECT_EQ(Picked(gap), "perfmap:m1");
  EXPECT_EQ(gap.answer.results[0].name, "m1");
  // Past f2's end, only the perf map ever had code.
  EXPECT_EQ(Picked(Explain(0x1030, 400, me)), "perfmap:m1");
  EXPECT_EQ(Picked(Explain(0x1010, std::nullopt, me)), "jitdump:f2");
  // Outside the process's lifetime [50, 1000).
  EXPECT_NE(Explain(0x9000, 10, me).rule.find("before the process started"), std::string::npos);
  EXPECT_NE(Explain(0x9000, 5000, me).rule.find("after incarnation 5 exited"), std::string::npos)
      << Explain(0x9000, 5000, me).rule;
  // Nothing at all.
  const proto::ExplainResponse none = Explain(0x9000, 150, me);
  EXPECT_TRUE(none.definitions.empty());
  EXPECT_FALSE(none.answer.results[0].found);
  EXPECT_NE(none.rule.find("ever defined"), std::string::npos) << none.rule;
}

TEST_F(ExplainTest, TheNewestDefinitionsAreListedAndTheOneThatAnsweredIsKept) {
  // 1,500 definitions of one address, at times 10, 20, ...: the newest 1,000 are listed.
  const uint32_t me = ::getuid();
  index::CodeMap jit;
  for (int i = 0; i < 1500; ++i) {
    jit.Add(0x1000, 0x40, 10 * (i + 1), jit.Intern("g" + std::to_string(i)));
  }
  auto source = std::make_shared<index::SourceView>();
  source->origin = Origin::kJitdump;
  source->path = "/tmp/jit-2147483616.dump";
  source->owner = me;
  source->code = jit.Publish();
  auto p = std::make_shared<index::ProcessView>();
  p->pid = kDeadPid;
  p->incarnation = 5;
  p->uid = me;
  p->start_time = 1;
  p->sources = {source};
  auto view = std::make_shared<index::IndexView>();
  view->processes.Add(kDeadPid, p);
  cell_.Set(view);
  // Now: the newest answers, among the listed ones.
  const proto::ExplainResponse now = Explain(0x1010, std::nullopt, me);
  ASSERT_EQ(now.definitions.size(), 1000u);
  EXPECT_EQ(now.definitions_omitted, 500u);
  EXPECT_EQ(now.definitions.front().name, "g500");
  EXPECT_EQ(Picked(now), "jitdump:g1499");
  EXPECT_TRUE(now.definitions.back().picked);
  // At T=55 definition 4 answered: older than the listed ones, it is kept, first.
  const proto::ExplainResponse old = Explain(0x1010, 55, me);
  ASSERT_EQ(old.definitions.size(), 1001u);
  EXPECT_EQ(old.definitions_omitted, 499u);
  EXPECT_EQ(old.definitions[0].name, "g4");
  EXPECT_TRUE(old.definitions[0].picked);
  EXPECT_EQ(old.definitions[0].from, 50u);
  EXPECT_EQ(old.definitions[0].to, 60u);
  EXPECT_EQ(old.definitions[1].name, "g500");
  EXPECT_EQ(Picked(old), "jitdump:g4");
}

TEST_F(ExplainTest, ProcessSourcesAndIgnoredFiles) {
  const uint32_t me = ::getuid();
  cell_.Set(View(me));
  const proto::ExplainResponse e = Explain(0x1010, 150, me);
  ASSERT_EQ(e.incarnations.size(), 1u);
  EXPECT_EQ(e.incarnations[0].start_time, 50u);
  EXPECT_EQ(e.incarnations[0].exit_time, 1000u);
  ASSERT_EQ(e.incarnations[0].sources.size(), 2u);
  EXPECT_EQ(e.incarnations[0].sources[0].records, 3u);
  EXPECT_EQ(e.incarnations[0].sources[0].trust, me == 0 ? "root" : "process owner");
  EXPECT_EQ(e.incarnations[0].sources[1].trust, "root");
  // Files refused for the pid that the client may see (its own; another user's file only to
  // root), and unattached files whose name names the pid; not another pid's.
  std::vector<std::string> paths;
  for (const auto& i : e.ignored) paths.push_back(i.path);
  if (me == 0) {
    EXPECT_EQ(paths, (std::vector<std::string>{"/tmp/jit-x.dump", "/tmp/jit-y.dump",
                                               "/tmp/perf-2147483616.map"}));
  } else {
    EXPECT_EQ(paths, (std::vector<std::string>{"/tmp/jit-y.dump", "/tmp/perf-2147483616.map"}));
  }
}

TEST_F(ExplainTest, AnotherUserIsToldWhatLookupTellsAndNothingMore) {
  cell_.Set(View(4242));
  const proto::ExplainResponse e = Explain(0x1010, 150, 4343);
  EXPECT_TRUE(e.incarnations.empty());
  EXPECT_TRUE(e.definitions.empty());
  EXPECT_TRUE(e.ignored.empty());
  ASSERT_EQ(e.answer.results.size(), 1u);
  EXPECT_FALSE(e.answer.results[0].found);
  std::string wire;
  proto::EncodeExplain(e, &wire);
  EXPECT_EQ(wire.find("/tmp/"), std::string::npos) << wire;
  EXPECT_EQ(Explain(0x1010, 150, 4242).definitions.size(), 4u);
}

TEST(ExplainWire, RequestAndResponseRoundTrip) {
  auto decoded = proto::DecodeRequest(R"({"op":"explain","pid":12,"addr":"0x10","time":"1.5"})");
  ASSERT_TRUE(decoded.request);
  const auto& req = std::get<proto::ExplainRequest>(decoded.request->body);
  EXPECT_EQ(req.pid, 12);
  EXPECT_EQ(req.addr, 0x10u);
  EXPECT_EQ(req.time, 1500000000u);
  std::string line;
  proto::EncodeRequest(*decoded.request, &line);
  line.pop_back();
  ASSERT_TRUE(proto::DecodeRequest(line).request);
  for (const char* bad :
       {R"({"op":"explain","addr":"0x10"})",
        R"({"op":"explain","pid":1,"image":"x","addr":"0x10"})", R"({"op":"explain","pid":1})",
        R"({"op":"explain","pid":1,"addr":"zz"})"}) {
    auto r = proto::DecodeRequest(bad);
    EXPECT_FALSE(r.request) << bad;
    ASSERT_TRUE(r.error) << bad;
    EXPECT_EQ(std::get<proto::ErrorResponse>(r.error->body).code, proto::kErrBadRequest);
  }

  proto::ExplainResponse e;
  e.pid = 12;
  e.addr = 0x10;
  e.time = 7;
  auto& inc = e.incarnations.emplace_back();
  inc.incarnation = 3;
  inc.uid = 1000;
  inc.start_time = 1;
  inc.sources.push_back({proto::Origin::kJitdump, "/tmp/jit-12.dump", 1000, "process owner",
                         proto::SourceState::kError, 2, 99, 4, "offset 8: bad"});
  proto::ExplainDefinition d;
  d.incarnation = 3;
  d.origin = proto::Origin::kJitdump;
  d.source = "/tmp/jit-12.dump";
  d.name = "f\"1";
  d.start = 0x10;
  d.size = 4;
  d.from = 5;
  d.picked = true;
  e.definitions.push_back(d);
  e.ignored.push_back({"/tmp/perf-12.map", "unattached: why"});
  e.answer.results.emplace_back();
  e.answer.results[0].addr = 0x10;
  e.answer.results[0].found = true;
  e.answer.results[0].name = "f\"1";
  e.rule = "a rule";
  proto::Response response;
  response.body = e;
  std::string out;
  proto::EncodeResponse(response, &out);
  out.pop_back();
  auto back = proto::DecodeResponse(out);
  ASSERT_TRUE(back) << out;
  const auto& got = std::get<proto::ExplainResponse>(back->body);
  std::string again;
  proto::EncodeExplain(got, &again);
  std::string first;
  proto::EncodeExplain(e, &first);
  EXPECT_EQ(again, first);
  EXPECT_EQ(got.answer.results[0].name, "f\"1");
  EXPECT_EQ(got.incarnations[0].sources[0].error, "offset 8: bad");
}

}  // namespace
}  // namespace jitsym::query
