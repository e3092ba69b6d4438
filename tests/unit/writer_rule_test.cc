// The writer rule (daemon/security/writer_rule.h) on made-up processes: which process wrote a
// file named with a pid when pid numbers repeat across pid namespaces.
#include "daemon/security/writer_rule.h"

#include <gtest/gtest.h>

namespace jitsym::security {
namespace {

constexpr uint32_t kAlice = 1000, kBob = 1001;
constexpr uint64_t kSec = 1000000000ull;

WriterCandidate Proc(uint32_t host_pid, uint32_t nspid, uint32_t uid, bool holds = false,
                     uint64_t start_ns = 100 * kSec) {
  WriterCandidate c;
  c.host_pid = host_pid;
  c.nspid = nspid;
  c.uid = uid;
  c.holds = holds;
  c.start_ns = start_ns;
  return c;
}

WriterFacts File(uint32_t name_pid, uint32_t uid, bool jitdump = true) {
  WriterFacts f;
  f.name_pid = name_pid;
  f.file_uid = uid;
  f.jitdump = jitdump;
  f.file_ctime_ns = 200 * kSec;
  return f;
}

TEST(JudgeWriter, TheProcessThatMapsTheFileWroteIt) {
  // node in a container calls itself 1 and maps /tmp/jit-1.dump; host pid 1 is init.
  WriterFacts f = File(1, 0);
  f.host = Proc(1, 1, 0);
  f.namesakes = {Proc(5123, 1, 0, /*holds=*/true)};
  const auto w = JudgeWriter(f, false);
  EXPECT_EQ(w.kind, WriterKind::kProcess);
  EXPECT_EQ(w.host_pid, 5123u);
}

TEST(JudgeWriter, ANamesakeThatCouldHaveWrittenItMakesTheFileWaitThenStayUnattached) {
  WriterFacts f = File(1, 0, /*jitdump=*/false);
  f.host = Proc(1, 1, 0);
  f.namesakes = {Proc(5123, 1, 0)};
  EXPECT_EQ(JudgeWriter(f, false).kind, WriterKind::kWait);
  const auto w = JudgeWriter(f, true);
  EXPECT_EQ(w.kind, WriterKind::kUnattached);
  EXPECT_NE(w.why.find("5123"), std::string::npos) << w.why;
}

TEST(JudgeWriter, ANamesakeOfAnotherOwnerIsNoCandidateForAUsersFile) {
  WriterFacts f = File(42, kAlice, false);
  f.host = Proc(42, 42, kAlice);
  f.namesakes = {Proc(6000, 42, kBob)};
  const auto w = JudgeWriter(f, false);
  EXPECT_EQ(w.kind, WriterKind::kByName);
  EXPECT_EQ(w.host_pid, 42u);
  EXPECT_FALSE(w.ignore_live);
}

TEST(JudgeWriter, AContainersFileNamesThePidItsProcessCallsItself) {
  WriterFacts f = File(7, 100000);
  f.container_dir = true;
  f.in_container = {Proc(9100, 7, 100000)};
  f.host = Proc(7, 7, 0);  // ignored: the name is not a host pid
  const auto w = JudgeWriter(f, false);
  EXPECT_EQ(w.kind, WriterKind::kProcess);
  EXPECT_EQ(w.host_pid, 9100u);

  WriterFacts gone = File(7, 100000);
  gone.container_dir = true;
  EXPECT_EQ(JudgeWriter(gone, false).kind, WriterKind::kWait);
  EXPECT_EQ(JudgeWriter(gone, true).kind, WriterKind::kUnattached);

  // `unshare --pid --fork --mount`: the unshare process shares the mount namespace but stays
  // in the host's pid namespace; both may call themselves 7 only if one of them maps it.
  WriterFacts two = File(7, 0);
  two.container_dir = true;
  two.in_container = {Proc(7, 7, 0), Proc(9100, 7, 0)};
  EXPECT_EQ(JudgeWriter(two, false).kind, WriterKind::kWait);
  two.in_container[1].holds = true;
  EXPECT_EQ(JudgeWriter(two, false).host_pid, 9100u);
}

TEST(JudgeWriter, AHostPidOfAContainerProcessIsNotTheWriterOfAFileNamedByIt) {
  // Host pid 5123 calls itself 1: a file named 5123 in a host directory is not its.
  WriterFacts f = File(5123, 0, false);
  f.host = Proc(5123, 1, 0);
  const auto w = JudgeWriter(f, false);
  EXPECT_EQ(w.kind, WriterKind::kByName);
  EXPECT_TRUE(w.ignore_live);
}

TEST(JudgeWriter, AJitdumpFoundAtStartUpThatTheLiveProcessDoesNotMapIsNotItsOwn) {
  WriterFacts f = File(1, 0);
  f.found_at_startup = true;
  f.host = Proc(1, 1, 0, false, 10 * kSec);  // init, started long before the file
  EXPECT_EQ(JudgeWriter(f, false).kind, WriterKind::kUnattached);
  // A perf map is not mapped by its writer: the name decides.
  WriterFacts map = f;
  map.jitdump = false;
  EXPECT_EQ(JudgeWriter(map, false).kind, WriterKind::kByName);
  // Announced by inotify (not at start-up): the writer maps it moments later; the name holds.
  WriterFacts fresh = f;
  fresh.found_at_startup = false;
  EXPECT_EQ(JudgeWriter(fresh, false).kind, WriterKind::kByName);
}

TEST(JudgeWriter, SeveralHoldersArePickedByTheNumberTheyCallThemselves) {
  WriterFacts f = File(1, 0);
  f.host = Proc(1, 1, 0);
  // A forked child keeps its parent's mapping.
  f.namesakes = {Proc(5123, 1, 0, true), Proc(5124, 2, 0, true)};
  const auto w = JudgeWriter(f, false);
  EXPECT_EQ(w.kind, WriterKind::kProcess);
  EXPECT_EQ(w.host_pid, 5123u);
  f.namesakes = {Proc(5123, 1, 0, true), Proc(7123, 1, 0, true)};
  EXPECT_EQ(JudgeWriter(f, false).kind, WriterKind::kUnattached);
}

}  // namespace
}  // namespace jitsym::security
