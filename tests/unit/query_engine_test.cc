// The lookup chain (LookupBatch, RunChain) with fake resolvers, and QueryEngine answering from a
// made-up IndexView: what a client is told, without a socket or watched files.
#include "daemon/query/query_engine.h"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <memory>
#include <string>
#include <vector>

#include "daemon/index/code_map.h"
#include "daemon/index/index_view.h"
#include "daemon/query/resolver.h"
#include "tests/unit/testing/self_path.h"

namespace jitsym::query {
namespace {

using ::jitsym::testing::SelfPath;

proto::AddressQuery Query(uint64_t addr) {
  proto::AddressQuery q;
  q.addr = addr;
  return q;
}

proto::AddressQuery BadQuery(std::string raw) {
  proto::AddressQuery q;
  q.error = "invalid address";
  q.raw = std::move(raw);
  return q;
}

security::PeerAccess AccessOf(uint32_t uid) {
  server::PeerCredentials peer;
  peer.uid = uid;
  peer.gid = uid;
  return security::PeerAccess(peer, {});
}

// Answers the addresses `answer` says yes to, and records which addresses it was asked.
class FakeResolver : public Resolver {
 public:
  FakeResolver(std::string name, std::function<bool(uint64_t)> answer)
      : name_(std::move(name)), answer_(std::move(answer)) {}

  std::optional<proto::ErrorResponse> Resolve(LookupBatch& batch) override {
    ++calls;
    for (size_t i : batch.pending()) {
      asked.push_back(batch.addr(i));
      if (!answer_(batch.addr(i))) continue;
      Answer a;
      a.name = name_;
      a.start = batch.addr(i) & ~uint64_t{0xf};
      a.size = 0x10;
      a.origin = proto::Origin::kPerfmap;
      batch.Answer(i, a);
    }
    return error;
  }

  int calls = 0;
  std::vector<uint64_t> asked;
  std::optional<proto::ErrorResponse> error;

 private:
  std::string name_;
  std::function<bool(uint64_t)> answer_;
};

TEST(ResolverChain, EachResolverSeesOnlyWhatTheOnesBeforeLeft) {
  proto::LookupRequest request;
  request.pid = 1;
  request.addrs = {Query(0x10), Query(0x21), BadQuery("zz"), Query(0x32), Query(0x43)};
  index::IndexView view;
  const security::PeerAccess access = AccessOf(0);
  proto::LookupResponse out;
  LookupBatch batch(request, view, access, &out);
  FakeResolver evens("even", [](uint64_t a) { return a % 2 == 0; });
  FakeResolver big("big", [](uint64_t a) { return a >= 0x40; });
  FakeResolver last("last", [](uint64_t) { return false; });
  Resolver* chain[] = {&evens, &big, &last};
  EXPECT_EQ(RunChain(chain, batch), std::nullopt);

  // The unparsable address reaches no resolver; each later resolver sees only the rest.
  EXPECT_EQ(evens.asked, (std::vector<uint64_t>{0x10, 0x21, 0x32, 0x43}));
  EXPECT_EQ(big.asked, (std::vector<uint64_t>{0x21, 0x43}));
  EXPECT_EQ(last.asked, (std::vector<uint64_t>{0x21}));
  ASSERT_EQ(out.results.size(), 5u);
  EXPECT_EQ(out.results[0].name, "even");
  EXPECT_EQ(out.results[0].offset, 0u);
  EXPECT_EQ(out.results[0].origin, proto::Origin::kPerfmap);
  EXPECT_FALSE(out.results[1].found);
  EXPECT_EQ(out.results[1].addr, 0x21u);
  EXPECT_TRUE(out.results[1].error.empty());
  EXPECT_FALSE(out.results[2].found);
  EXPECT_EQ(out.results[2].error, "invalid address");
  EXPECT_EQ(out.results[3].name, "even");
  EXPECT_EQ(out.results[4].name, "big");
  EXPECT_EQ(out.results[4].offset, 3u);
}

TEST(ResolverChain, StopsWhenNothingIsLeftOrOnAWholeRequestError) {
  proto::LookupRequest request;
  request.pid = 1;
  request.addrs = {Query(0x10), Query(0x20)};
  index::IndexView view;
  const security::PeerAccess access = AccessOf(0);
  {
    proto::LookupResponse out;
    LookupBatch batch(request, view, access, &out);
    FakeResolver all("all", [](uint64_t) { return true; });
    FakeResolver never("never", [](uint64_t) { return false; });
    Resolver* chain[] = {&all, &never};
    EXPECT_EQ(RunChain(chain, batch), std::nullopt);
    EXPECT_EQ(never.calls, 0);
  }
  {
    proto::LookupResponse out;
    LookupBatch batch(request, view, access, &out);
    FakeResolver failing("failing", [](uint64_t) { return false; });
    failing.error = proto::ErrorResponse{"not_found", "no such image"};
    FakeResolver never("never", [](uint64_t) { return true; });
    Resolver* chain[] = {&failing, &never};
    const auto error = RunChain(chain, batch);
    ASSERT_TRUE(error);
    EXPECT_EQ(error->message, "no such image");
    EXPECT_EQ(never.calls, 0);
  }
}

TEST(ResolverChain, HiddenAddressesAreDeniedOrAskedAgain) {
  proto::LookupRequest request;
  request.pid = 1;
  request.addrs = {Query(0x10), Query(0x20), Query(0x30)};
  index::IndexView view;
  const security::PeerAccess access = AccessOf(0);
  for (bool deny : {true, false}) {
    proto::LookupResponse out;
    LookupBatch batch(request, view, access, &out);
    batch.Hide(1);
    batch.Advance();
    EXPECT_EQ(batch.pending(), (std::vector<size_t>{0, 2}));
    if (deny) {
      batch.DenyHidden();
      batch.DenyPending();
    } else {
      batch.RestoreHidden();
    }
    batch.Advance();
    if (deny) {
      EXPECT_TRUE(batch.pending().empty());
      for (const auto& r : out.results) EXPECT_EQ(r.error, kDeniedError);
    } else {
      EXPECT_EQ(batch.pending(), (std::vector<size_t>{0, 1, 2}));
      for (const auto& r : out.results) EXPECT_TRUE(r.error.empty());
    }
  }
}

TEST(ResolverChain, RequestedFieldsDecideWhatIsBuilt) {
  native::NativeFrame frames[] = {{"", "a.cc", 3, 4}, {"outer", "", 0, 0}};
  Answer a;
  a.name = "f";
  a.start = 0x1000;
  a.image = "/lib/x.so";
  a.build_id = "abcd";
  a.frames = frames;
  proto::LookupResult all;
  ToWire(a, 0x1008, proto::kAllFields, &all);
  EXPECT_EQ(all.offset, 8u);
  EXPECT_EQ(all.image, "/lib/x.so");
  EXPECT_EQ(all.build_id, "abcd");
  ASSERT_EQ(all.frames.size(), 2u);
  EXPECT_EQ(all.frames[0].name, "??");  // an inlined frame without a name
  EXPECT_EQ(all.frames[0].file, "a.cc");
  EXPECT_EQ(all.frames[1].name, "outer");
  proto::LookupResult few;
  ToWire(a, 0x1008, proto::kFieldName | proto::kFieldOffset, &few);
  EXPECT_EQ(few.name, "f");
  EXPECT_TRUE(few.image.empty());
  EXPECT_TRUE(few.build_id.empty());
  EXPECT_TRUE(few.frames.empty());
}

// A pid no process has (pid_max is at most 2^22).
constexpr uint32_t kDeadPid = 0x7ffffff0;

std::shared_ptr<const index::SourceView> Source(Origin origin, std::string path, SourceState state,
                                                std::vector<std::pair<uint64_t, std::string>> fns) {
  index::CodeMap code;
  for (const auto& [start, name] : fns) code.Add(start, 0x100, 0, code.Intern(name));
  auto s = std::make_shared<index::SourceView>();
  s->origin = origin;
  s->path = std::move(path);
  s->state = state;
  s->code = code.Publish();
  s->ranges = fns.size();
  return s;
}

std::shared_ptr<const index::IndexView> MadeUpView(uint32_t pid, uint32_t owner) {
  auto p = std::make_shared<index::ProcessView>();
  p->pid = pid;
  p->incarnation = 7;
  p->alive = false;
  p->uid = owner;
  // In precedence order: the jitdump answers what both know.
  p->sources.push_back(
      Source(Origin::kJitdump, "/tmp/jit-x.dump", SourceState::kClosed, {{0x1000, "Jit::a"}}));
  p->sources.push_back(Source(Origin::kPerfmap, "/tmp/perf-x.map", SourceState::kFollowing,
                              {{0x1000, "Map::a"}, {0x2000, "Map::b"}}));
  auto view = std::make_shared<index::IndexView>();
  view->processes.Add(pid, p);
  return view;
}

proto::Request LookupOf(std::optional<int64_t> pid, std::vector<proto::AddressQuery> addrs) {
  proto::LookupRequest lookup;
  lookup.pid = pid;
  lookup.addrs = std::move(addrs);
  proto::Request request;
  request.body = lookup;
  return request;
}

server::PeerCredentials Peer(uint32_t uid) {
  server::PeerCredentials peer;
  peer.uid = uid;
  peer.gid = uid;
  return peer;
}

class QueryEngineTest : public ::testing::Test {
 protected:
  QueryEngineTest() : engine_(cell_, nullptr, QueryEngine::Options{}) {}

  const proto::LookupResponse& Lookup(const proto::Request& request, uint32_t uid) {
    response_ = engine_.Handle(request, Peer(uid));
    const auto* lookup = std::get_if<proto::LookupResponse>(&response_.body);
    EXPECT_TRUE(lookup) << (std::holds_alternative<proto::ErrorResponse>(response_.body)
                                ? std::get<proto::ErrorResponse>(response_.body).message
                                : "not a lookup answer");
    static const proto::LookupResponse kNone;
    return lookup ? *lookup : kNone;
  }
  std::string ErrorCode(const proto::Request& request, uint32_t uid) {
    const proto::Response r = engine_.Handle(request, Peer(uid));
    const auto* error = std::get_if<proto::ErrorResponse>(&r.body);
    return error ? error->code : "";
  }

  index::ViewCell cell_;
  QueryEngine engine_;
  proto::Response response_;
};

TEST_F(QueryEngineTest, AnswersFromTheIndexInSourceOrder) {
  const uint32_t me = ::getuid();
  cell_.Set(MadeUpView(kDeadPid, me));
  const auto& out = Lookup(
      LookupOf(kDeadPid, {Query(0x1010), Query(0x2020), Query(0x3000), BadQuery("0xzz")}), me);
  ASSERT_EQ(out.results.size(), 4u);
  EXPECT_TRUE(out.results[0].found);
  EXPECT_EQ(out.results[0].name, "Jit::a");
  EXPECT_EQ(out.results[0].origin, proto::Origin::kJitdump);
  EXPECT_EQ(out.results[0].source, "/tmp/jit-x.dump");
  EXPECT_EQ(out.results[0].offset, 0x10u);
  EXPECT_EQ(out.results[0].incarnation, 7u);
  EXPECT_EQ(out.results[1].name, "Map::b");
  EXPECT_EQ(out.results[1].origin, proto::Origin::kPerfmap);
  EXPECT_FALSE(out.results[2].found);
  EXPECT_TRUE(out.results[2].error.empty());
  EXPECT_EQ(out.results[3].error, "invalid address");

  // The answer keeps what it borrows alive when a newer view replaces the one it came from.
  cell_.Set(std::make_shared<index::IndexView>());
  EXPECT_EQ(out.results[0].name, "Jit::a");

  // Restricted to one origin.
  cell_.Set(MadeUpView(kDeadPid, me));
  proto::Request only_map = LookupOf(kDeadPid, {Query(0x1010)});
  std::get<proto::LookupRequest>(only_map.body).origin = "perfmap";
  EXPECT_EQ(Lookup(only_map, me).results[0].name, "Map::a");
  std::get<proto::LookupRequest>(only_map.body).origin = "no-such-origin";
  EXPECT_FALSE(Lookup(only_map, me).results[0].found);
}

// Every result of a response, as the JSON a client would read.
std::string AsJson(const proto::LookupResponse& lookup) {
  std::string out;
  for (const proto::LookupResult& r : lookup.results) {
    proto::EncodeLookupResult(r, &out);
    out += '\n';
  }
  return out;
}

// A slice's results storage is handed back and filled again by the next lookup: nothing of the
// first answer (names, frames, reasons) may show in the second.
TEST_F(QueryEngineTest, RecycledResultsCarryNothingOfTheirLastAnswer) {
  const uint32_t me = ::getuid();
  cell_.Set(MadeUpView(kDeadPid, me));
  const proto::Request jit =
      LookupOf(kDeadPid, {Query(0x1010), Query(0x3000), BadQuery("0xzz"), Query(0x2020)});
  const std::string fresh = AsJson(Lookup(jit, me));
  const proto::Request one_miss = LookupOf(kDeadPid, {Query(0x3000)});
  const std::string fresh_miss = AsJson(Lookup(one_miss, me));

  // Native answers with inlined frames fill results with everything a result may hold.
  proto::Request native = LookupOf(std::nullopt, {});
  auto& image = std::get<proto::LookupRequest>(native.body);
  image.image = SelfPath();
  for (uint64_t a = 0x1000; a < 0x1000 + 64 * 0x4000; a += 0x4000) image.addrs.push_back(Query(a));
  image.addrs.push_back(Query(0xffffffffffff0000ull));  // a miss: reason and detail
  const proto::LookupResponse& first = Lookup(native, me);
  size_t frames = 0;
  for (const proto::LookupResult& r : first.results) frames += r.frames.size();
  ASSERT_GT(frames, 0u);
  engine_.Recycle(std::move(response_));
  EXPECT_EQ(AsJson(Lookup(jit, me)), fresh);
  // And again from a recycled array longer than the request.
  engine_.Recycle(std::move(response_));
  EXPECT_EQ(AsJson(Lookup(one_miss, me)), fresh_miss);
}

TEST_F(QueryEngineTest, ProcessesOfOthersAreTreatedAsUnknown) {
  // An exited process of someone else: told exactly what a pid never indexed gets.
  cell_.Set(MadeUpView(kDeadPid, 4242));
  const auto& theirs = Lookup(LookupOf(kDeadPid, {Query(0x1010)}), 4343);
  ASSERT_EQ(theirs.results.size(), 1u);
  EXPECT_FALSE(theirs.results[0].found);
  EXPECT_TRUE(theirs.results[0].error.empty());
  EXPECT_TRUE(Lookup(LookupOf(kDeadPid, {Query(0x1010)}), 4242).results[0].found);
  EXPECT_TRUE(Lookup(LookupOf(kDeadPid, {Query(0x1010)}), 0).results[0].found);
}

TEST_F(QueryEngineTest, AThreadIdOfAnExitedProcessAnswersAsTheProcessForWhoMaySeeIt) {
  const uint32_t me = ::getuid();
  const uint32_t tid = kDeadPid + 3;
  auto view = std::make_shared<index::IndexView>(*MadeUpView(kDeadPid, me));
  auto p = std::make_shared<index::ProcessView>(*view->processes.at(kDeadPid)[0]);
  p->threads = index::ThreadIds({kDeadPid, tid});
  view->processes.Set(kDeadPid, {p});
  cell_.Set(view);
  const auto& out = Lookup(LookupOf(tid, {Query(0x1010)}), me);
  ASSERT_EQ(out.results.size(), 1u);
  EXPECT_EQ(out.results[0].name, "Jit::a");
  EXPECT_EQ(out.results[0].incarnation, 7u);
  // Someone else is told what a thread id never seen gets, as for the pid.
  const auto& theirs = Lookup(LookupOf(tid, {Query(0x1010)}), me + 1);
  EXPECT_FALSE(theirs.results[0].found);
  EXPECT_TRUE(theirs.results[0].error.empty());
  // A thread id nobody had is unknown.
  EXPECT_FALSE(Lookup(LookupOf(tid + 1, {Query(0x1010)}), me).results[0].found);
  // The listing tells how many thread ids are remembered.
  proto::Request list;
  list.body = proto::ProcessesRequest{};
  const proto::Response r = engine_.Handle(list, Peer(me));
  const auto& processes = std::get<proto::ProcessesResponse>(r.body).processes;
  ASSERT_EQ(processes.size(), 1u);
  EXPECT_EQ(processes[0].threads, 2u);
}

TEST_F(QueryEngineTest, LiveProcessesOfOthersAreDenied) {
  // pid 1 is alive and root's: anyone else may see that it exists, not what it runs.
  cell_.Set(MadeUpView(1, 0));
  const auto& out = Lookup(LookupOf(1, {Query(0x1010), Query(0x9000), BadQuery("zz")}), 4242);
  ASSERT_EQ(out.results.size(), 3u);
  EXPECT_EQ(out.results[0].error, kDeniedError);
  EXPECT_EQ(out.results[1].error, kDeniedError);
  EXPECT_EQ(out.results[2].error, "invalid address");
  proto::Request stats;
  stats.body = proto::StatsRequest{};
  const proto::Response s = engine_.Handle(stats, Peer(0));
  EXPECT_EQ(std::get<proto::StatsResponse>(s.body).denied, 2u);
}

TEST_F(QueryEngineTest, WhoHoldsAPidUnreadableIsBusyNotAGuess) {
  // Without a descriptor to read /proc, pid 1 would look gone: its addresses would be answered
  // as for a dead process and not denied. The daemon says it cannot tell, and to retry.
  cell_.Set(MadeUpView(1, 0));
  proto::Request lookup = LookupOf(1, {Query(0x1010)});
  proto::Request symbols;
  symbols.body = proto::SymbolsRequest{1};
  // Root may see pid 1; an address the index does not have is looked for in its mappings.
  const proto::Request unindexed = LookupOf(1, {Query(0x9000)});
  // Descriptors free: denied, and for root answered (not found). (Asked first also so that the
  // sanitizers' checks of these calls, which need descriptors of their own, are done and
  // remembered before none are left.)
  EXPECT_EQ(Lookup(lookup, 4242).results[0].error, kDeniedError);
  EXPECT_EQ(ErrorCode(symbols, 4242), proto::kErrPermission);
  EXPECT_EQ(Lookup(unindexed, 0).results.size(), 1u);
  struct rlimit saved {};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &saved), 0);
  struct rlimit none = saved;
  none.rlim_cur = 0;
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &none), 0);
  const proto::Response looked_up = engine_.Handle(lookup, Peer(4242));
  const proto::Response listed = engine_.Handle(symbols, Peer(4242));
  const proto::Response as_root = engine_.Handle(unindexed, Peer(0));
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &saved), 0);
  for (const proto::Response* r : {&looked_up, &listed, &as_root}) {
    const auto* error = std::get_if<proto::ErrorResponse>(&r->body);
    ASSERT_TRUE(error);
    EXPECT_EQ(error->code, proto::kErrBusy);
    EXPECT_NE(error->message.find("cannot tell who owns pid 1 now"), std::string::npos)
        << error->message;
  }
  // Descriptors back: denied again.
  EXPECT_EQ(Lookup(lookup, 4242).results[0].error, kDeniedError);
}

TEST_F(QueryEngineTest, MalformedLookupsAreBadRequests) {
  cell_.Set(MadeUpView(kDeadPid, 0));
  EXPECT_EQ(ErrorCode(LookupOf(std::nullopt, {Query(1)}), 0), proto::kErrBadRequest);
  EXPECT_EQ(ErrorCode(LookupOf(0, {Query(1)}), 0), proto::kErrBadRequest);
  EXPECT_EQ(ErrorCode(LookupOf(int64_t{1} << 31, {Query(1)}), 0), proto::kErrBadRequest);
  proto::Request both = LookupOf(kDeadPid, {Query(1)});
  std::get<proto::LookupRequest>(both.body).image = "Foo";
  EXPECT_EQ(ErrorCode(both, 0), proto::kErrBadRequest);
  proto::Request relative = LookupOf(std::nullopt, {Query(1)});
  std::get<proto::LookupRequest>(relative.body).image = "lib/foo.so";
  EXPECT_EQ(ErrorCode(relative, 0), proto::kErrBadRequest);
  proto::Request unknown_image = LookupOf(std::nullopt, {Query(1)});
  std::get<proto::LookupRequest>(unknown_image.body).image = "NoSuchImage";
  EXPECT_EQ(ErrorCode(unknown_image, 0), proto::kErrNotFound);
}

TEST_F(QueryEngineTest, ProcessesCarryOriginAndStateValues) {
  cell_.Set(MadeUpView(kDeadPid, ::getuid()));
  proto::Request request;
  request.body = proto::ProcessesRequest{};
  const proto::Response r = engine_.Handle(request, Peer(::getuid()));
  const auto& processes = std::get<proto::ProcessesResponse>(r.body).processes;
  ASSERT_EQ(processes.size(), 1u);
  ASSERT_EQ(processes[0].sources.size(), 2u);
  EXPECT_EQ(processes[0].sources[0].origin, proto::Origin::kJitdump);
  EXPECT_EQ(processes[0].sources[0].state, proto::SourceState::kClosed);
  EXPECT_EQ(processes[0].sources[1].origin, proto::Origin::kPerfmap);
  EXPECT_EQ(processes[0].sources[1].state, proto::SourceState::kFollowing);
  EXPECT_EQ(processes[0].ranges, 3u);
  // Someone else's process is not listed.
  const proto::Response other = engine_.Handle(request, Peer(::getuid() + 4242));
  EXPECT_TRUE(std::get<proto::ProcessesResponse>(other.body).processes.empty());
}

// The text of a reply as the server sends it: a producer's steps, or the whole response.
std::string Sent(server::Reply reply, const std::string& id_json) {
  std::string out;
  if (reply.producer == nullptr) {
    reply.response.id_json = id_json;  // as the server does
    proto::EncodeResponse(reply.response, &out);
    return out;
  }
  while (reply.producer->Step(&out)) {
  }
  return out;
}

TEST_F(QueryEngineTest, PulledAnswersAreTheWholeAnswersByteForByte) {
  const uint32_t me = ::getuid();
  cell_.Set(MadeUpView(kDeadPid, me));
  proto::ExplainRequest explain;
  explain.pid = kDeadPid;
  explain.addr = 0x1010;
  const std::vector<proto::Request> requests = {
      {"1", proto::SymbolsRequest{kDeadPid}},
      {"2", proto::ProcessesRequest{}},
      {"3", explain},
      {"4", proto::SymbolsRequest{kDeadPid + 1}},  // unknown: an error, whole
  };
  for (const proto::Request& request : requests) {
    proto::Response whole = engine_.Handle(request, Peer(me));
    whole.id_json = request.id_json;
    std::string want;
    proto::EncodeResponse(whole, &want);
    EXPECT_EQ(Sent(engine_.Respond(request, Peer(me)), request.id_json), want);
  }
  // The symbols answer lists the jitdump's range over the perf map's, then the perf map's.
  const proto::Response symbols = engine_.Handle(requests[0], Peer(me));
  const auto& list = std::get<proto::SymbolsResponse>(symbols.body).symbols;
  ASSERT_EQ(list.size(), 2u);
  EXPECT_EQ(list[0].name, "Jit::a");
  EXPECT_EQ(list[1].name, "Map::b");
}

}  // namespace
}  // namespace jitsym::query
