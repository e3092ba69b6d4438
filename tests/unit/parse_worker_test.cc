// Parse workers: the sandbox a worker enters, the messages it exchanges with the daemon, and the
// daemon's pool against the real worker (this test binary is its own worker executable) and
// against workers that misbehave as one taken over by its file would.
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "daemon/parse_worker/channel.h"
#include "daemon/parse_worker/messages.h"
#include "daemon/parse_worker/parser.h"
#include "daemon/parse_worker/sandbox.h"
#include "daemon/parse_worker/worker_main.h"
#include "daemon/parse_worker/worker_pool.h"
#include "daemon/util/clock.h"
#include "gtest/gtest.h"
#include "tests/unit/testing/self_path.h"

namespace jitsym::parse_worker {
namespace {

// This binary started as a parse worker (by the pools below): it is one, and nothing else.
const bool kRunAsWorker = [] {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::vector<std::string> args;
  for (std::string a; std::getline(in, a, '\0');) args.push_back(a);
  if (args.size() >= 2 && args[1] == kWorkerFlag) {
    std::_Exit(RunParseWorker(std::vector<std::string>(args.begin() + 1, args.end())));
  }
  return false;
}();

// Runs `body` in a child process that entered the sandbox; its exit status.
template <typename Body>
int InSandbox(Body body) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    SandboxSettings s;
    s.address_space_bytes = 0;
    bool filtered = false;
    EnterSandbox(s, &filtered);
    std::_Exit(filtered ? body() : 100);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 200 + WTERMSIG(status);
}

TEST(ParseWorkerSandbox, NoOpenNoSocketNoSignalsToOthersButItsDescriptorsWork) {
  const int passwd = ::open("/etc/passwd", O_RDONLY | O_CLOEXEC);
  ASSERT_GE(passwd, 0);
  const pid_t parent = ::getpid();
  const int status = InSandbox([&] {
    int failures = 0;
    char c;
    if (::open("/etc/passwd", O_RDONLY) != -1 || errno != EPERM) failures |= 1;
    if (::openat(AT_FDCWD, "/etc/hostname", O_RDONLY) != -1 || errno != EPERM) failures |= 2;
    if (::socket(AF_UNIX, SOCK_STREAM, 0) != -1 || errno != EPERM) failures |= 4;
    if (::kill(parent, 0) != -1 || errno != EPERM) failures |= 8;
    if (::pread(passwd, &c, 1, 0) != 1) failures |= 16;  // a descriptor it was given
    if (::prctl(PR_GET_DUMPABLE, 0, 0, 0, 0) != 0 || ::prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) != 1)
      failures |= 32;
    if (::geteuid() == 0 || ::getegid() == 0) failures |= 64;
    char* argv[] = {const_cast<char*>("/bin/true"), nullptr};
    ::execv("/bin/true", argv);
    return failures;
  });
  ::close(passwd);
  EXPECT_EQ(status, 0) << "bit set: 1 open, 2 openat, 4 socket, 8 kill, 16 read, 32 prctl, "
                          "64 uid (execv returned: execve refused too)";
}

TEST(ParseWorkerSandbox, AbortStillWorksInsideIt) {
  // abort(3) signals the process itself (tgkill): allowed, so a failed assertion is a SIGABRT
  // the daemon reports, not a hang.
  EXPECT_EQ(InSandbox([] {
              std::abort();
              return 0;
            }),
            200 + SIGABRT);
}

TEST(ParseWorkerSandbox, TheAddressSpaceLimitHolds) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "a sanitizer's shadow needs more address space than any limit";
#else
  const pid_t pid = ::fork();
  if (pid == 0) {
    SandboxSettings s;
    s.address_space_bytes = uint64_t{256} << 20;
    bool filtered = false;
    EnterSandbox(s, &filtered);
    // A new mapping (malloc could reuse what this test process freed before the fork).
    void* p = ::mmap(nullptr, size_t{512} << 20, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    std::_Exit(p == MAP_FAILED ? 0 : 1);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "wait status " << status;
#endif
}

TEST(ParseWorkerChannel, FramesCarryPayloadsAndDescriptorsAndRefuseHugeLengths) {
  int sv[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
  os::UniqueFd a(sv[0]), b(sv[1]);
  const int fd = ::open("/etc/passwd", O_RDONLY | O_CLOEXEC);
  const std::string big(300000, 'x');  // more than one socket buffer: sent by a thread
  std::thread sender([&] { EXPECT_TRUE(SendFrame(a.get(), 7, big, {fd})); });
  Result<Frame> got = ReceiveFrame(b.get());
  sender.join();
  ::close(fd);
  ASSERT_TRUE(got.ok()) << got.error().message;
  EXPECT_EQ(got->type, 7u);
  EXPECT_EQ(got->payload, big);
  ASSERT_EQ(got->fds.size(), 1u);
  struct stat st {};
  EXPECT_EQ(::fstat(got->fds[0].get(), &st), 0);
  // A length past the bound: refused before anything is allocated.
  const uint32_t header[2] = {kMaxFrame + 1, 1};
  ASSERT_EQ(::write(a.get(), header, sizeof header), static_cast<ssize_t>(sizeof header));
  Result<Frame> huge = ReceiveFrame(b.get());
  ASSERT_FALSE(huge.ok());
  EXPECT_EQ(huge.error().kind, ErrorKind::kMalformed);
  // Half a header, then the end: "closed", not a hang.
  ASSERT_EQ(::write(a.get(), header, 3), 3);
  a.reset();
  Result<Frame> cut = ReceiveFrame(b.get());
  ASSERT_FALSE(cut.ok());
  EXPECT_EQ(cut.error().message, "closed");
  // Nothing arrives before the deadline.
  int sv2[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv2), 0);
  os::UniqueFd c(sv2[0]), d(sv2[1]);
  Result<Frame> late = ReceiveFrame(d.get(), MonotonicNowNs() + 50000000);
  ASSERT_FALSE(late.ok());
  EXPECT_EQ(late.error().kind, ErrorKind::kLimit);
}

SymbolizeReply SampleReply() {
  SymbolizeReply r;
  r.build_id = "abcd";
  r.strings = {"main", "a.cc"};  // ids 1 and 2
  AddressAnswer found;
  found.state = AddressAnswer::kFound;
  found.vaddr = 0x1010;
  found.name = 1;
  found.start = 0x1000;
  found.size = 0x40;
  found.first_frame = 0;
  found.frame_count = 1;
  r.frames = {{1, 2, 3, 4}};
  AddressAnswer miss;
  miss.state = AddressAnswer::kMiss;
  miss.vaddr = 0x9000;
  r.answers = {found, miss, AddressAnswer{}};
  return r;
}

TEST(ParseWorkerMessages, RoundTripAndNoIndexOutsideTheStringTable) {
  const std::string bytes = Encode(SampleReply());
  Result<SymbolizeReply> back = DecodeSymbolizeReply(bytes);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(Encode(*back), bytes);
  // Every single-byte change and every cut: refused or decoded with every index in range, never
  // a read outside the input (this runs under ASan in CI).
  std::mt19937 rng(7);
  for (int round = 0; round < 20000; ++round) {
    std::string m = bytes;
    m[rng() % m.size()] = static_cast<char>(rng());
    if (round % 3 == 0) m.resize(rng() % m.size());
    Result<SymbolizeReply> r = DecodeSymbolizeReply(m);
    if (!r) continue;
    const uint64_t ids = r->strings_base + r->strings.size();
    ASSERT_GE(r->strings_base, 1u);
    for (const AddressAnswer& a : r->answers) {
      ASSERT_LT(a.name, ids);
      ASSERT_LT(a.clone, ids);
      ASSERT_LT(a.missing, ids);
      ASSERT_LE(uint64_t{a.first_frame} + a.frame_count, r->frames.size());
    }
    for (const AnswerFrame& f : r->frames) {
      ASSERT_LT(f.name, ids);
      ASSERT_LT(f.file, ids);
    }
  }
  // A count that claims more items than the bytes could hold is refused before any allocation.
  std::string lying = Encode(SymbolizeReply{});
  const uint32_t many = 0xfffffff0u;
  std::memcpy(lying.data() + lying.size() - 4, &many, 4);
  EXPECT_FALSE(DecodeSymbolizeReply(lying).ok());
  // Frames outside the reply's.
  SymbolizeReply outside = SampleReply();
  outside.answers[0].first_frame = 1;
  EXPECT_FALSE(DecodeSymbolizeReply(Encode(outside)).ok());
  outside.answers[0].first_frame = 0xffffffffu;
  EXPECT_FALSE(DecodeSymbolizeReply(Encode(outside)).ok());
}

// A function of this binary, as a file offset of its mapping.
uint64_t FileOffsetOf(const void* fn) {
  const uint64_t addr = reinterpret_cast<uint64_t>(fn);
  std::ifstream maps("/proc/self/maps");
  for (std::string line; std::getline(maps, line);) {
    uint64_t start = 0, end = 0, offset = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx %*s %lx", &start, &end, &offset) == 3 && addr >= start &&
        addr < end) {
      return addr - start + offset;
    }
  }
  return 0;
}

SymbolizeRequest RequestFor(const std::string& path, std::vector<uint64_t> offsets) {
  SymbolizeRequest r;
  r.path = path;
  ::stat(path.c_str(), &r.st);
  r.file_offsets = true;
  r.addrs = std::move(offsets);
  return r;
}

PoolOptions TestPool(const std::string& exe) {
  PoolOptions o;
  o.exe = exe;
  o.address_space_bytes = 0;
  o.timeout_ms = 20000;
  o.log_level = "warning";
  return o;
}

// Without frames asked for, each answer carries only its innermost frame (the source position):
// the same as the first of all its frames.
TEST(ParseWorkerServe, WithoutFramesOnlyTheInnermostComes) {
  const std::string self = testing::SelfPath();
  std::vector<uint64_t> offsets;
  const uint64_t base = FileOffsetOf(reinterpret_cast<const void*>(&FileOffsetOf));
  for (uint64_t k = 0; k < 4096; ++k) offsets.push_back(base - 0x20000 + k * 64);
  SymbolizeRequest all = RequestFor(self, offsets);
  SymbolizeRequest innermost = all;
  innermost.all_frames = false;
  os::UniqueFd fd(::open(self.c_str(), O_RDONLY | O_CLOEXEC));
  InProcessParser here(native::ModuleCache::Options{});
  Result<SymbolizeReply> full = here.Symbolize(all, fd.get());
  Result<SymbolizeReply> short_ = here.Symbolize(innermost, fd.get());
  ASSERT_TRUE(full.ok() && short_.ok());
  ASSERT_EQ(full->answers.size(), short_->answers.size());
  size_t inlined = 0;
  for (size_t k = 0; k < full->answers.size(); ++k) {
    const AddressAnswer& a = full->answers[k];
    const AddressAnswer& b = short_->answers[k];
    ASSERT_EQ(a.state, b.state);
    ASSERT_EQ(a.name, b.name);  // one numbering: the same ids
    ASSERT_EQ(b.frame_count, std::min<uint32_t>(1, a.frame_count));
    if (a.frame_count > 1) ++inlined;
    if (b.frame_count == 1) {
      const AnswerFrame& x = full->frames[a.first_frame];
      const AnswerFrame& y = short_->frames[b.first_frame];
      EXPECT_TRUE(x.name == y.name && x.file == y.file && x.line == y.line && x.column == y.column);
    }
  }
  EXPECT_GT(inlined, 0u) << "no inlined frames in the addresses tried";
  EXPECT_LT(short_->frames.size(), full->frames.size());
}

TEST(ParseWorkerPool, AWorkerAnswersExactlyAsThisProcessWould) {
  const std::string self = testing::SelfPath();
  const SymbolizeRequest request =
      RequestFor(self, {FileOffsetOf(reinterpret_cast<const void*>(&FileOffsetOf)),
                        FileOffsetOf(reinterpret_cast<const void*>(&SampleReply)), 1, 2});
  os::UniqueFd fd(::open(self.c_str(), O_RDONLY | O_CLOEXEC));
  InProcessParser here(native::ModuleCache::Options{});
  WorkerPool pool(TestPool(self));
  Result<SymbolizeReply> expected = here.Symbolize(request, fd.get());
  Result<SymbolizeReply> got = pool.Symbolize(request, fd.get());
  ASSERT_TRUE(got.ok()) << got.error().message;
  ASSERT_TRUE(expected.ok());
  // Each numbers the module's strings under a token of its own (its pid): the rest is equal.
  EXPECT_NE(got->strings_token, expected->strings_token);
  got->strings_token = expected->strings_token = 0;
  EXPECT_EQ(Encode(*got), Encode(*expected));
  ASSERT_EQ(got->answers.size(), 4u);
  ASSERT_EQ(got->answers[0].state, AddressAnswer::kFound);
  EXPECT_NE(got->strings[got->answers[0].name - got->strings_base].find("FileOffsetOf"),
            std::string::npos);
  EXPECT_EQ(pool.Stats().workers, 1u);
  // The second request reuses the worker and its module, and sends no string the asker has.
  SymbolizeRequest again = request;
  Result<SymbolizeReply> second = pool.Symbolize(again, fd.get());
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(pool.Stats().started, 1u);
  again.strings_token = second->strings_token;
  again.strings_known = second->strings_base + static_cast<uint32_t>(second->strings.size());
  Result<SymbolizeReply> third = pool.Symbolize(again, fd.get());
  ASSERT_TRUE(third.ok());
  EXPECT_EQ(third->strings_token, second->strings_token);
  EXPECT_TRUE(third->strings.empty());
  EXPECT_EQ(third->answers[0].name, second->answers[0].name);
}

TEST(ParseWorkerPool, AboveTheTablesBudgetIdleWorkersOfOtherOwnersStop) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root: a file of another user";
  char tmpl[] = "/tmp/parse-worker-budget-XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  ::chmod(dir.c_str(), 0755);
  const std::string mine = dir + "/root-true", theirs = dir + "/their-true";
  ASSERT_EQ(std::system(("cp /bin/true " + mine + " && cp /bin/true " + theirs).c_str()), 0);
  ASSERT_EQ(::chown(theirs.c_str(), 4343, 4343), 0);
  PoolOptions o = TestPool(testing::SelfPath());
  o.cache_bytes = 1;  // any module is over it
  WorkerPool pool(o);
  for (const std::string& path : {mine, theirs}) {
    os::UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    Result<SymbolizeReply> r = pool.Symbolize(RequestFor(path, {0x1000}), fd.get());
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_TRUE(r->error.empty()) << r->error;
  }
  // root's worker went when uid 4343's had read its file; the one just used stays.
  EXPECT_EQ(pool.Stats().started, 2u);
  EXPECT_EQ(pool.Stats().workers, 1u);
  std::system(("rm -rf " + dir).c_str());
}

// A worker that does what `body` (Python, with the helpers below) says: one taken over by its
// file, say. It writes what it learned to `out`.
std::string FakeWorker(const std::string& dir, const std::string& body) {
  const std::string path = dir + "/fake-worker";
  std::ofstream f(path);
  f << "#!/usr/bin/python3\n"
       "import os, socket, struct, sys, time\n"
       "s = socket.socket(fileno=3)\n"
       "def recv():\n"
       "    fds = []\n"
       "    data, anc, _, _ = s.recvmsg(8, socket.CMSG_SPACE(16))\n"
       "    for lvl, typ, d in anc:\n"
       "        fds += list(struct.unpack('%di' % (len(d) // 4), d))\n"
       "    while len(data) < 8: data += s.recv(8 - len(data))\n"
       "    n, t = struct.unpack('II', data)\n"
       "    p = b''\n"
       "    while len(p) < n: p += s.recv(n - len(p))\n"
       "    return t, p, fds\n"
       "def send(t, p): s.sendall(struct.pack('II', len(p), t) + p)\n"
       "def ask(kind, path):\n"
       "    b = path.encode()\n"
       "    send(2, struct.pack('<BBI', kind, 1, len(b)) + b)\n"
       "    t, p, fds = recv()\n"
       "    return struct.unpack('i', p[:4])[0], fds\n"
       "def reply_error(msg):\n"
       "    b = msg.encode()\n"
       "    send(4, struct.pack('I', len(b)) + b + struct.pack('<IBIQI', 0, 0, 0, 0, 1) +\n"
       "         struct.pack('III', 0, 0, 0))\n"
       "out = open('"
    << dir << "/out', 'a')\n"
    << body;
  f.close();
  ::chmod(path.c_str(), 0755);
  return path;
}

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The answers to two requests for one file made at once (FakeWorkerTest::AskTwiceAtOnce), and
// the pool's counts when both were answered.
struct TwoAnswers {
  Result<SymbolizeReply> a = MakeError(ErrorKind::kLimit, "not asked");
  Result<SymbolizeReply> b = MakeError(ErrorKind::kLimit, "not asked");
  ParserStats stats;
};

class FakeWorkerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/parse-worker-test-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    ::chmod(dir_.c_str(), 0755);
    // A file of someone else's (uid 4242), and the file to ask about, owned by uid 4343.
    other_ = dir_ + "/others-secret";
    std::ofstream(other_) << "secret";
    ::chown(other_.c_str(), 4242, 4242);
    ::chmod(other_.c_str(), 0600);
    file_ = dir_ + "/bobs-file";
    std::ofstream(file_) << "\177ELF not really";
    ::chown(file_.c_str(), 4343, 4343);
    own_ = dir_ + "/bobs-other-file";
    std::ofstream(own_) << "bob's";
    ::chown(own_.c_str(), 4343, 4343);
  }
  void TearDown() override { std::system(("rm -rf " + dir_).c_str()); }

  Result<SymbolizeReply> Ask(WorkerPool& pool) {
    os::UniqueFd fd(::open(file_.c_str(), O_RDONLY | O_CLOEXEC));
    return pool.Symbolize(RequestFor(file_, {1}), fd.get());
  }
  // Two requests for one file at once, from two threads, to a pool of workers `exe`.
  TwoAnswers AskTwiceAtOnce(const std::string& exe) {
    PoolOptions o = TestPool(exe);
    o.timeout_ms = 5000;
    WorkerPool pool(o);
    TwoAnswers out;
    std::thread other([&] { out.a = Ask(pool); });
    out.b = Ask(pool);
    other.join();
    out.stats = pool.Stats();
    return out;
  }

  std::string dir_, other_, file_, own_;
};

TEST_F(FakeWorkerTest, ATakenOverWorkerGetsNoFileItsOwnerCouldNotOpen) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root: files of other users";
  const std::string exe = FakeWorker(dir_,
                                     "t, p, fds = recv()\n"
                                     "for path in ['/etc/shadow', '" +
                                         other_ + "', '" + own_ +
                                         "', '/etc/passwd']:\n"
                                         "    err, fds = ask(1, path)\n"
                                         "    out.write('%s %d %d\\n' % (path, err, len(fds)))\n"
                                         "out.flush()\n"
                                         "reply_error('done')\n"
                                         "recv()\n");
  WorkerPool pool(TestPool(exe));
  Result<SymbolizeReply> r = Ask(pool);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->error, "done");
  const std::string out = Slurp(dir_ + "/out");
  // Root's unreadable file and another user's: "no such file", no descriptor. The owner's own
  // file and a file everyone may read: given.
  EXPECT_NE(out.find("/etc/shadow " + std::to_string(ENOENT) + " 0"), std::string::npos) << out;
  EXPECT_NE(out.find(other_ + " " + std::to_string(ENOENT) + " 0"), std::string::npos) << out;
  EXPECT_NE(out.find(own_ + " 0 1"), std::string::npos) << out;
  EXPECT_NE(out.find("/etc/passwd 0 1"), std::string::npos) << out;
}

// Two requests for one file at once: both go to the worker that has its module, on two lanes,
// and are served together (this worker answers neither until it has both).
TEST_F(FakeWorkerTest, TwoRequestsForOneFileAreServedAtOnceByTheWorkerThatHasIt) {
  const std::string exe = FakeWorker(dir_,
                                     "recv()\n"
                                     "first = s\n"
                                     "s = socket.socket(fileno=4)\n"
                                     "recv()\n"
                                     "reply_error('second')\n"
                                     "s = first\n"
                                     "reply_error('first')\n"
                                     "recv()\n");
  const TwoAnswers r = AskTwiceAtOnce(exe);
  const Result<SymbolizeReply>& a = r.a;
  const Result<SymbolizeReply>& b = r.b;
  ASSERT_TRUE(a.ok()) << a.error().message;
  ASSERT_TRUE(b.ok()) << b.error().message;
  EXPECT_NE(a->error, b->error);
  EXPECT_EQ(r.stats.started, 1u);
}

// A worker that dies while it serves two requests: the one that finds it dead first reports
// what happened and counts the failure; the other says it ended while serving another request.
TEST_F(FakeWorkerTest, AWorkerThatDiesUnderTwoRequestsIsReportedOnce) {
  const std::string exe = FakeWorker(dir_,
                                     "recv()\n"
                                     "s = socket.socket(fileno=4)\n"
                                     "recv()\n"
                                     "os.kill(os.getpid(), 9)\n");
  const TwoAnswers r = AskTwiceAtOnce(exe);
  const Result<SymbolizeReply>& a = r.a;
  const Result<SymbolizeReply>& b = r.b;
  ASSERT_FALSE(a.ok());
  ASSERT_FALSE(b.ok());
  const std::string both = a.error().message + "\n" + b.error().message;
  EXPECT_NE(both.find("was killed by SIGKILL"), std::string::npos) << both;
  EXPECT_NE(both.find("while serving another request"), std::string::npos) << both;
  EXPECT_EQ(r.stats.failed, 1u);
  EXPECT_EQ(r.stats.started, 1u);
}

TEST_F(FakeWorkerTest, AWorkerThatHangsIsKilledAtTheDeadlineAndItsFileBacksOff) {
  const std::string exe =
      FakeWorker(dir_, "recv()\nout.write('%d\\n' % os.getpid())\nout.flush()\ntime.sleep(600)\n");
  PoolOptions o = TestPool(exe);
  o.timeout_ms = 300;
  WorkerPool pool(o);
  Result<SymbolizeReply> r = Ask(pool);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("took longer than 300 ms"), std::string::npos)
      << r.error().message;
  EXPECT_NE(r.error().message.find(file_), std::string::npos);
  const pid_t pid = std::atoi(Slurp(dir_ + "/out").c_str());
  ASSERT_GT(pid, 0);
  EXPECT_NE(::kill(pid, 0), 0) << "the hung worker is still there";
  // Asked again at once: refused without starting another worker.
  Result<SymbolizeReply> again = Ask(pool);
  ASSERT_FALSE(again.ok());
  EXPECT_NE(again.error().message.find("not read again for"), std::string::npos)
      << again.error().message;
  EXPECT_EQ(pool.Stats().started, 1u);
  EXPECT_EQ(pool.Stats().failed, 1u);
}

TEST_F(FakeWorkerTest, AWorkerThatDiesOrBreaksTheProtocolIsReportedNotBelieved) {
  const std::string dies = FakeWorker(dir_, "recv()\nos.kill(os.getpid(), 9)\n");
  WorkerPool pool(TestPool(dies));
  Result<SymbolizeReply> r = Ask(pool);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("was killed by SIGKILL"), std::string::npos)
      << r.error().message;

  // A reply with a string index past its table.
  std::string dir2 = dir_ + "/2";
  ::mkdir(dir2.c_str(), 0755);
  const std::string liar = FakeWorker(
      dir2,
      "recv()\n"
      "send(4, struct.pack('I', 0) * 2 + b'\\0' + struct.pack('I', 0)"
      " + struct.pack('<QI', 0, 1) + struct.pack('I', 0) + struct.pack('I', 1) + b'\\2' +"
      " struct.pack('Q', 5) + struct.pack('III', 9, 0, 0) +"
      " struct.pack('QQII', 0, 0, 0, 0) + struct.pack('I', 0))\n"
      "time.sleep(600)\n");
  WorkerPool lied_to(TestPool(liar));
  Result<SymbolizeReply> l = Ask(lied_to);
  ASSERT_FALSE(l.ok());
  EXPECT_NE(l.error().message.find("broke the protocol"), std::string::npos) << l.error().message;
}

}  // namespace
}  // namespace jitsym::parse_worker
