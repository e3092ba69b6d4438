// Calls on filesystems whose server is a process (daemon/os/mounts.h, fs_workers.h,
// guarded_fs.h), without FUSE: a read of a pipe no one writes stands in for the request a
// server never answers, and a tmpfs (/dev/shm) stands in for a FUSE mount, guarded for the test.
#include "daemon/os/guarded_fs.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>

#include "daemon/os/fs_workers.h"
#include "daemon/os/mounts.h"
#include "daemon/os/small_file.h"

namespace jitsym::os {
namespace {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

double MsSince(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

constexpr const char* kMountinfo =
    "22 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw\n"
    "40 22 0:45 / /tmp rw,nosuid shared:20 - tmpfs tmpfs rw,size=100k\n"
    "108 40 0:42 / /tmp/bob/mnt rw,nosuid,nodev,relatime shared:60 - fuse.sshfs bob@h:/ "
    "rw,user_id=1002,group_id=1002,allow_other\n"
    "109 22 8:17 / /media/usb rw master:3 - fuseblk /dev/sdb1 rw,user_id=0,group_id=0\n"
    "110 22 0:50 / /run/user/1001/doc rw - fuse portal rw,user_id=1001,group_id=1001\n"
    "111 22 0:51 / /srv/with\\040space rw - ext4 /dev/vdb rw\n"
    "112 40 0:52 / /tmp/ovl rw - overlay overlay "
    "rw,lowerdir=/tmp/bob/mnt/lower:/srv/with\\040space,upperdir=/tmp/up,workdir=/tmp/work\n"
    "113 40 0:53 / /tmp/ovl2 rw - overlay overlay rw,lowerdir=/srv/lower,upperdir=/tmp/u2\n"
    "114 40 0:54 / /tmp/ovl3 rw - overlay overlay rw,lowerdir=/tmp/ovl,upperdir=/tmp/u3\n"
    "115 40 0:55 / /tmp/stack rw - tmpfs a rw\n"
    "116 40 0:56 / /tmp/stack rw - fuse.x b rw,user_id=5\n"
    "this line is not a mount\n"
    "117 40 0:57 / /tmp/nosep rw - \n";

TEST(MountTable, FuseInEveryFormIsGuardedWithItsOwner) {
  const MountTable t = MountTable::Parse(kMountinfo);
  auto sshfs = t.ById(108);
  ASSERT_NE(sshfs, nullptr);
  EXPECT_TRUE(sshfs->guarded());
  EXPECT_EQ(sshfs->fstype, "fuse.sshfs");
  EXPECT_EQ(sshfs->owner, 1002u);
  EXPECT_EQ(sshfs->Describe(), "fuse.sshfs at /tmp/bob/mnt (user_id 1002)");
  EXPECT_TRUE(t.ById(109)->guarded());  // fuseblk
  EXPECT_EQ(t.ById(109)->owner, 0u);
  EXPECT_TRUE(t.ById(110)->guarded());  // fuse
  EXPECT_FALSE(t.ById(22)->guarded());
  EXPECT_FALSE(t.ById(40)->guarded());
  EXPECT_FALSE(t.ById(40)->owner.has_value());
  EXPECT_TRUE(t.any_guarded());
  EXPECT_EQ(t.ById(111)->mount_point, "/srv/with space");
  EXPECT_EQ(t.ById(117), nullptr);  // no type after the separator
  EXPECT_EQ(t.size(), 11u);
}

TEST(MountTable, AnOverlayIsGuardedWhenALayerIsOnAGuardedMount) {
  const MountTable t = MountTable::Parse(kMountinfo);
  EXPECT_TRUE(t.ById(112)->guarded());
  EXPECT_NE(t.ById(112)->guard_reason.find("an overlay over fuse.sshfs at /tmp/bob/mnt"),
            std::string::npos)
      << t.ById(112)->guard_reason;
  EXPECT_FALSE(t.ById(113)->guarded());
  EXPECT_TRUE(t.ById(114)->guarded());  // over the overlay over FUSE
}

TEST(MountTable, ContainingIsTheLongestMountPointAndTheTopOfAStack) {
  const MountTable t = MountTable::Parse(kMountinfo);
  EXPECT_EQ(t.Containing("/tmp/bob/mnt/jit-1.dump")->id, 108u);
  EXPECT_EQ(t.Containing("/tmp/bob/mnt")->id, 108u);
  EXPECT_EQ(t.Containing("/tmp/bob/mntx")->id, 40u);
  EXPECT_EQ(t.Containing("/etc/passwd")->id, 22u);
  EXPECT_EQ(t.Containing("/tmp/stack/f")->id, 116u);
  EXPECT_EQ(t.ByDev(makedev(0, 42))->id, 108u);
  EXPECT_EQ(t.ByDev(makedev(9, 9)), nullptr);
}

TEST(MountTable, GuardReasonIsTheOneRule) {
  EXPECT_FALSE(GuardReason("fuse").empty());
  EXPECT_FALSE(GuardReason("fuseblk").empty());
  EXPECT_FALSE(GuardReason("fuse.gvfsd-fuse").empty());
  for (const char* ordinary : {"ext4", "tmpfs", "overlay", "nfs4", "proc", "fusectl", "9p"}) {
    EXPECT_TRUE(GuardReason(ordinary).empty()) << ordinary;
  }
}

TEST(MountTable, OwnMountsKnowTheMountOfADescriptor) {
  auto own = OwnMounts();
  ASSERT_NE(own, nullptr);
  UniqueFd proc(::open("/proc", O_PATH | O_CLOEXEC));
  const std::optional<uint64_t> id = MountIdOf(proc.get());
  ASSERT_TRUE(id.has_value());
  auto m = own->ById(*id);
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->fstype, "proc");
  EXPECT_FALSE(m->guarded());
}

TEST(MountTable, FdinfoSaysHowADescriptorWasOpened) {
  char name[] = "/tmp/jitsym-fdinfo-XXXXXX";
  UniqueFd made(::mkstemp(name));
  ASSERT_TRUE(made.valid());
  struct stat st {};
  ASSERT_EQ(::fstat(made.get(), &st), 0);
  for (int flags : {O_RDONLY, O_WRONLY, O_RDWR, O_PATH}) {
    UniqueFd fd(::open(name, flags | O_CLOEXEC));
    ASSERT_TRUE(fd.valid()) << flags;
    const std::optional<FdMount> info =
        ParseFdinfoOf("/proc/self/fdinfo/" + std::to_string(fd.get()));
    ASSERT_TRUE(info && info->flags) << flags;
    EXPECT_EQ(*info->flags & (O_ACCMODE | O_PATH), static_cast<uint64_t>(flags)) << flags;
    EXPECT_EQ(info->mount_id, MountIdOf(made.get()).value_or(0));
    EXPECT_TRUE(info->ino == 0 || info->ino == st.st_ino);  // shown since Linux 5.14
  }
  ::unlink(name);
}

// A mount for the pool's bookkeeping; only its device, owner and words matter.
Mount FakeMount(uint64_t dev, uint32_t owner) {
  Mount m;
  m.dev = dev;
  m.fstype = "fuse.test";
  m.mount_point = "/fake/" + std::to_string(dev);
  m.owner = owner;
  m.guard_reason = "a test's stand-in";
  return m;
}

fsworker::Request StatRequest() {
  fsworker::Request r;
  r.op = fsworker::Op::kStat;
  return r;
}

fsworker::Request WaitRequest() {
  fsworker::Request r;
  r.op = fsworker::Op::kWaitForTesting;
  return r;
}

struct Pipe {
  int r = -1, w = -1;
  Pipe() {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) == 0) {
      r = fds[0];
      w = fds[1];
    }
  }
  ~Pipe() {
    if (r >= 0) ::close(r);
    if (w >= 0) ::close(w);
  }
};

FsWorkers::Options Fast() {
  FsWorkers::Options o;
  o.timeout = milliseconds(200);
  o.backoff = milliseconds(60000);
  return o;
}

TEST(FsWorkers, AnswersWhatItIsAsked) {
  FsWorkers pool(Fast());
  UniqueFd tmp(::open("/tmp", O_PATH | O_CLOEXEC));
  const int fds[] = {tmp.get()};
  auto answer = pool.Call(FakeMount(1, 1001), "stat /tmp", StatRequest(), fds);
  ASSERT_TRUE(answer.ok()) << answer.error().message;
  struct stat st {};
  ASSERT_EQ(::stat("/tmp", &st), 0);
  EXPECT_EQ(answer->reply->error, 0);
  EXPECT_EQ(answer->reply->st.st_ino, st.st_ino);
  EXPECT_EQ(pool.stats().calls, 1u);
}

TEST(FsWorkers, ACallThatNeverReturnsIsGivenUpAndItsMountIsNotAskedAgain) {
  FsWorkers pool(Fast());
  Pipe pipe;  // nobody writes: the worker's read never returns
  const Mount hung = FakeMount(7, 1002);
  const int wait_fds[] = {pipe.r};
  auto t0 = Clock::now();
  auto answer = pool.Call(hung, "read /fake/7/jit-1.dump", WaitRequest(), wait_fds);
  const double waited = MsSince(t0);
  ASSERT_FALSE(answer.ok());
  EXPECT_GE(waited, 190);
  EXPECT_LT(waited, 1000);  // the timeout, not the call
  EXPECT_NE(answer.error().message.find("read /fake/7/jit-1.dump: fuse.test at /fake/7 "
                                        "(user_id 1002) did not answer within 0.2 s"),
            std::string::npos)
      << answer.error().message;
  // The same mount: refused at once, whatever is asked.
  UniqueFd tmp(::open("/tmp", O_PATH | O_CLOEXEC));
  const int stat_fds[] = {tmp.get()};
  t0 = Clock::now();
  auto again = pool.Call(hung, "stat /fake/7", StatRequest(), stat_fds);
  EXPECT_LT(MsSince(t0), 50);
  ASSERT_FALSE(again.ok());
  EXPECT_NE(again.error().message.find("did not answer before"), std::string::npos)
      << again.error().message;
  // Another user's mount is asked as before.
  auto other = pool.Call(FakeMount(8, 1001), "stat /tmp", StatRequest(), stat_fds);
  EXPECT_TRUE(other.ok()) << other.error().message;
  const FsWorkers::Stats s = pool.stats();
  EXPECT_EQ(s.unanswered, 1u);
  EXPECT_EQ(s.refused, 1u);
}

TEST(FsWorkers, StuckWorkersAreBoundedPerOwnerAndCountedUntilTheyEnd) {
  FsWorkers::Options o = Fast();
  o.kill_stuck = false;  // as a worker stuck in a FUSE request: SIGKILL would not end it
  FsWorkers pool(o);
  Pipe pipe;
  const int wait_fds[] = {pipe.r};
  ASSERT_FALSE(pool.Call(FakeMount(10, 1002), "first", WaitRequest(), wait_fds).ok());
  EXPECT_EQ(pool.stats().stuck, 1u);
  // Another mount of the same owner: not asked while one of his is stuck (one file at a
  // time would otherwise pin a worker each).
  UniqueFd tmp(::open("/tmp", O_PATH | O_CLOEXEC));
  const int stat_fds[] = {tmp.get()};
  auto t0 = Clock::now();
  auto refused = pool.Call(FakeMount(11, 1002), "stat /fake/11", StatRequest(), stat_fds);
  EXPECT_LT(MsSince(t0), 50);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("still unanswered"), std::string::npos)
      << refused.error().message;
  EXPECT_TRUE(pool.Call(FakeMount(12, 1003), "stat /tmp", StatRequest(), stat_fds).ok());
  // Its request ends (the server answered at last): the worker exits, the owner is asked again.
  ASSERT_EQ(::write(pipe.w, "x", 1), 1);
  for (int i = 0; i < 200 && pool.stats().stuck != 0; ++i) {
    std::this_thread::sleep_for(milliseconds(10));
  }
  EXPECT_EQ(pool.stats().stuck, 0u);
  EXPECT_TRUE(pool.Call(FakeMount(11, 1002), "stat /tmp", StatRequest(), stat_fds).ok());
}

TEST(FsWorkers, OneCallPerOwnerIsWaitedForAtATime) {
  // The threads that call are shared (ingest, queries): while one waits on a user's mount,
  // another thread's call on any mount of his is refused at once rather than wait too.
  FsWorkers pool(Fast());
  Pipe pipe;
  const int wait_fds[] = {pipe.r};
  std::thread waiting(
      [&] { EXPECT_FALSE(pool.Call(FakeMount(50, 1002), "slow", WaitRequest(), wait_fds).ok()); });
  UniqueFd tmp(::open("/tmp", O_PATH | O_CLOEXEC));
  const int stat_fds[] = {tmp.get()};
  std::this_thread::sleep_for(milliseconds(50));
  auto t0 = Clock::now();
  auto refused = pool.Call(FakeMount(51, 1002), "stat /fake/51", StatRequest(), stat_fds);
  EXPECT_LT(MsSince(t0), 50);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("is being waited for"), std::string::npos)
      << refused.error().message;
  EXPECT_TRUE(pool.Call(FakeMount(52, 1003), "stat /tmp", StatRequest(), stat_fds).ok());
  waiting.join();
}

TEST(FsWorkers, AtMostMaxStuckInAll) {
  FsWorkers::Options o = Fast();
  o.kill_stuck = false;
  o.max_stuck = 2;
  FsWorkers pool(o);
  Pipe pipe;
  const int wait_fds[] = {pipe.r};
  ASSERT_FALSE(pool.Call(FakeMount(20, 1), "a", WaitRequest(), wait_fds).ok());
  ASSERT_FALSE(pool.Call(FakeMount(21, 2), "b", WaitRequest(), wait_fds).ok());
  UniqueFd tmp(::open("/tmp", O_PATH | O_CLOEXEC));
  const int stat_fds[] = {tmp.get()};
  auto t0 = Clock::now();
  EXPECT_FALSE(pool.Call(FakeMount(22, 3), "c", StatRequest(), stat_fds).ok());
  EXPECT_LT(MsSince(t0), 50);
  ASSERT_EQ(::write(pipe.w, "xy", 2), 2);
}

TEST(FsWorkers, AMountIsAskedAgainAfterItsPause) {
  FsWorkers::Options o = Fast();
  o.backoff = milliseconds(300);
  FsWorkers pool(o);
  Pipe pipe;
  const Mount m = FakeMount(30, 1002);
  const int wait_fds[] = {pipe.r};
  ASSERT_FALSE(pool.Call(m, "hang", WaitRequest(), wait_fds).ok());  // killed: it ends
  UniqueFd tmp(::open("/tmp", O_PATH | O_CLOEXEC));
  const int stat_fds[] = {tmp.get()};
  EXPECT_FALSE(pool.Call(m, "too soon", StatRequest(), stat_fds).ok());
  std::this_thread::sleep_for(milliseconds(400));
  auto answer = pool.Call(m, "later", StatRequest(), stat_fds);
  EXPECT_TRUE(answer.ok()) << answer.error().message;
}

TEST(FsWorkers, DestroyingThePoolDoesNotWaitForStuckWorkers) {
  Pipe pipe;
  auto t0 = Clock::now();
  {
    FsWorkers::Options o = Fast();
    o.kill_stuck = false;
    FsWorkers pool(o);
    const int wait_fds[] = {pipe.r};
    ASSERT_FALSE(pool.Call(FakeMount(40, 1), "hang", WaitRequest(), wait_fds).ok());
  }
  EXPECT_LT(MsSince(t0), 1000);
  ASSERT_EQ(::write(pipe.w, "x", 1), 1);  // lets the worker go
}

// A scratch directory on /dev/shm, a tmpfs guarded for these tests: what lies there is asked
// of workers (which answer), as for a FUSE mount.
class GuardedTmpfs : public ::testing::Test {
 protected:
  void SetUp() override {
    auto shm = OwnMounts() ? OwnMounts()->Containing("/dev/shm") : nullptr;
    if (!shm || shm->mount_point != "/dev/shm") GTEST_SKIP() << "/dev/shm is not a mount here";
    char templ[] = "/dev/shm/jitsym-guarded-XXXXXX";
    ASSERT_NE(::mkdtemp(templ), nullptr);
    dir_ = templ;
    GuardMountPointForTesting("/dev/shm");
  }
  void TearDown() override {
    if (!dir_.empty()) std::system(("rm -rf '" + dir_ + "'").c_str());
  }
  void Write(const std::string& name, const std::string& bytes) {
    std::ofstream(dir_ + "/" + name, std::ios::binary) << bytes;
  }
  void AWalkIntoItIsAskedOfAWorker();
  std::string dir_;
};

TEST_F(GuardedTmpfs, AWalkIntoItIsAskedOfAWorker) {
  for (bool openat2 : {true, false}) {
    UseOpenat2ForTesting(openat2);
    SCOPED_TRACE(openat2 ? "openat2" : "without openat2");
    AWalkIntoItIsAskedOfAWorker();
  }
  UseOpenat2ForTesting(true);
}

void GuardedTmpfs::AWalkIntoItIsAskedOfAWorker() {
  Write("a.map", "hello");
  const uint64_t before = FsWorkers::Shared().stats().calls;
  auto e = StatPath(dir_ + "/a.map", /*no_follow_last=*/true);
  ASSERT_TRUE(e.ok()) << e.error().message;
  ASSERT_EQ(e->error, 0);
  EXPECT_TRUE(e->fd.guarded());
  EXPECT_EQ(e->fd.mount()->guard_reason, "guarded for a test");
  struct stat st {};
  ASSERT_EQ(::stat((dir_ + "/a.map").c_str(), &st), 0);
  EXPECT_EQ(e->st.st_ino, st.st_ino);
  EXPECT_EQ(e->st.st_size, 5);
  EXPECT_GE(FsWorkers::Shared().stats().calls, before + 2);  // the mount root, the directory...
  auto missing = StatPath(dir_ + "/absent", true);
  ASSERT_TRUE(missing.ok());
  EXPECT_EQ(missing->error, ENOENT);
}

TEST_F(GuardedTmpfs, ItsFilesAreMirroredNeverOpened) {
  Write("jit-1.dump", "0123456789abcdef");
  auto opened = OpenForReading(dir_ + "/jit-1.dump", O_RDONLY | O_NOFOLLOW | O_NONBLOCK);
  ASSERT_TRUE(opened.ok()) << opened.error().message;
  ASSERT_EQ(opened->error, 0);
  ASSERT_NE(opened->mirror, nullptr);
  EXPECT_FALSE(opened->fd.valid());
  Mirror& m = *opened->mirror;
  ASSERT_TRUE(m.Copy(4, 10, 3).ok());
  char buf[16] = {};
  EXPECT_EQ(::pread(m.fd(), buf, 16, 0), 13);  // its size: where the copy ended
  EXPECT_EQ(std::string(buf, 4), "0123");
  EXPECT_EQ(std::string(buf + 10, 3), "abc");
  EXPECT_TRUE(m.more());
  // Grown, then shrunk below what was copied: the mirror shows it.
  Write("jit-1.dump", "0123");
  ASSERT_TRUE(m.Copy(4, 13, 100).ok());
  struct stat st {};
  ASSERT_EQ(::fstat(m.fd(), &st), 0);
  EXPECT_EQ(st.st_size, 4);
  EXPECT_FALSE(m.more());
  // Replaced by another file: not this one any more.
  ASSERT_EQ(::unlink((dir_ + "/jit-1.dump").c_str()), 0);
  Write("other", "x");
  ASSERT_EQ(::rename((dir_ + "/other").c_str(), (dir_ + "/jit-1.dump").c_str()), 0);
  auto again = OpenForReading(dir_ + "/jit-1.dump", O_RDONLY | O_NOFOLLOW | O_NONBLOCK);
  ASSERT_TRUE(again.ok());
  EXPECT_NE(again->st.st_ino, m.st().st_ino);
}

TEST_F(GuardedTmpfs, SmallFilesAndListsComeFromWorkers) {
  Write("perfinfo-1.map", "line one\nline two\n");
  Write("b.r2rmap", "");
  auto small = ReadSmallFile(dir_ + "/perfinfo-1.map", {});
  ASSERT_TRUE(small.has_value());
  EXPECT_EQ(small->bytes, "line one\nline two\n");
  SmallFileOptions tiny;
  tiny.max_bytes = 4;
  SmallFileError error;
  EXPECT_FALSE(ReadSmallFile(dir_ + "/perfinfo-1.map", tiny, &error).has_value());
  EXPECT_EQ(error.kind, SmallFileError::kTooLarge);
  auto d = Walk(dir_);
  ASSERT_TRUE(d.ok());
  auto names = ListGuardedDir(d->fd, 100);
  ASSERT_TRUE(names.ok()) << names.error().message;
  std::sort(names->begin(), names->end());
  EXPECT_EQ(*names, (std::vector<std::string>{"b.r2rmap", "perfinfo-1.map"}));
}

void OrdinaryPathsResolveAsTheKernelResolvesThem() {
  char templ[] = "/tmp/jitsym-walk-XXXXXX";
  ASSERT_NE(::mkdtemp(templ), nullptr);
  const std::string dir = templ;
  ASSERT_EQ(::mkdir((dir + "/sub").c_str(), 0755), 0);
  std::ofstream(dir + "/sub/f") << "x";
  ASSERT_EQ(::symlink("sub/f", (dir + "/rel").c_str()), 0);
  ASSERT_EQ(::symlink((dir + "/sub").c_str(), (dir + "/abs").c_str()), 0);
  ASSERT_EQ(::symlink("loop", (dir + "/loop").c_str()), 0);
  struct stat want {};
  ASSERT_EQ(::stat((dir + "/sub/f").c_str(), &want), 0);
  for (const std::string& p : {dir + "/sub/f", dir + "/rel", dir + "/abs/f",
                               dir + "/sub/../sub/./f", "/proc/self/root" + dir + "/sub/f"}) {
    auto e = Walk(p);
    ASSERT_TRUE(e.ok()) << p;
    ASSERT_EQ(e->error, 0) << p;
    EXPECT_EQ(e->st.st_ino, want.st_ino) << p;
    EXPECT_FALSE(e->fd.guarded()) << p;
  }
  WalkOptions no_follow;
  no_follow.no_follow_last = true;
  EXPECT_TRUE(S_ISLNK(Walk(dir + "/rel", no_follow)->st.st_mode));
  WalkOptions no_links;
  no_links.no_symlinks = true;
  EXPECT_EQ(Walk(dir + "/abs/f", no_links)->error, ELOOP);
  EXPECT_EQ(Walk(dir + "/loop")->error, ELOOP);
  EXPECT_EQ(Walk(dir + "/absent/f")->error, ENOENT);
  EXPECT_EQ(Walk(dir + "/sub/f/g")->error, ENOTDIR);
  auto opened = OpenForReading(dir + "/rel", O_RDONLY | O_NOFOLLOW);
  ASSERT_TRUE(opened.ok());
  EXPECT_EQ(opened->error, ELOOP);
  opened = OpenForReading(dir + "/abs/f", O_RDONLY | O_NOFOLLOW);
  ASSERT_TRUE(opened.ok());
  ASSERT_TRUE(opened->fd.valid());
  EXPECT_EQ(opened->mirror, nullptr);
  EXPECT_EQ(opened->st.st_ino, want.st_ino);
  // A file of a directory, in the one call of the common case, and through a symlink.
  auto d = Walk(dir);
  ASSERT_TRUE(d.ok());
  auto here = OpenForReadingAt(d->fd, "rel", O_RDONLY);
  ASSERT_TRUE(here.ok());
  ASSERT_TRUE(here->fd.valid());
  EXPECT_EQ(here->st.st_ino, want.st_ino);
  here = OpenForReadingAt(d->fd, "rel", O_RDONLY | O_NOFOLLOW);
  ASSERT_TRUE(here.ok());
  EXPECT_EQ(here->error, ELOOP);
  // A mount point on the way (/dev/shm under /dev) is entered and classified.
  auto shm = Walk("/dev/shm");
  ASSERT_TRUE(shm.ok());
  ASSERT_EQ(shm->error, 0);
  ASSERT_NE(shm->fd.mount(), nullptr);
  EXPECT_EQ(shm->fd.mount()->mount_point, "/dev/shm");
  std::system(("rm -rf '" + dir + "'").c_str());
}

TEST(GuardedFs, OrdinaryPathsResolveAsTheKernelResolvesThem) {
  UseOpenat2ForTesting(true);
  OrdinaryPathsResolveAsTheKernelResolvesThem();
}

// Under systemd's RestrictSUIDSGID= (jitsymd.service), openat2 answers ENOSYS: the same
// answers from openat, the kernel's mount ids and /proc/self/fd.
TEST(GuardedFs, OrdinaryPathsResolveAlikeWithoutOpenat2) {
  UseOpenat2ForTesting(false);
  OrdinaryPathsResolveAsTheKernelResolvesThem();
  UseOpenat2ForTesting(true);
}

TEST(GuardedFs, ProcLinksLeadToWhatTheyNameWithoutAskingIt) {
  char templ[] = "/tmp/jitsym-link-XXXXXX";
  const int fd = ::mkstemp(templ);
  ASSERT_GE(fd, 0);
  struct stat st {};
  ASSERT_EQ(::fstat(fd, &st), 0);
  const std::string link = "/proc/self/fd/" + std::to_string(fd);
  EXPECT_TRUE(LinkLeadsTo(link, st.st_dev, st.st_ino));
  EXPECT_FALSE(LinkLeadsTo(link, st.st_dev, st.st_ino + 1));
  ::close(fd);
  ::unlink(templ);
}

}  // namespace
}  // namespace jitsym::os
