// The process catalog and the discovery scanner on real processes: children in new pid and mount
// namespaces, a pid reused by another process, children that map jitdump markers. Namespaces
// need root (the tests run as root); without it those cases are skipped.
#include "daemon/os/process_catalog.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "daemon/ingest/process_scanner.h"
#include "daemon/os/namespaces.h"
#include "daemon/util/clock.h"

namespace jitsym {
namespace {

using os::ProcessCatalog;

// A forked child running `body` (which may only make system calls). It reports through a pipe:
// Report(value) in the child, Read() in the parent. Killed and reaped when destroyed.
class Child {
 public:
  explicit Child(const std::function<void(Child&)>& body) {
    if (::pipe(up_) != 0 || ::pipe(down_) != 0) std::abort();
    pid_ = ::fork();
    if (pid_ == 0) {
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      body(*this);
      for (;;) ::pause();
    }
  }
  ~Child() { Kill(); }
  pid_t pid() const { return pid_; }
  void Kill() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }
  // In the child.
  void Report(uint32_t value) {
    if (::write(up_[1], &value, sizeof(value)) != sizeof(value)) _exit(1);
  }
  void Await() {
    char c;
    if (::read(down_[0], &c, 1) != 1) _exit(1);
  }
  // In the parent.
  uint32_t Read() {
    uint32_t value = 0;
    if (::read(up_[0], &value, sizeof(value)) != sizeof(value)) return 0;
    return value;
  }
  void Signal() {
    if (::write(down_[1], "g", 1) != 1) std::abort();
  }

 private:
  pid_t pid_ = -1;
  int up_[2] = {-1, -1};
  int down_[2] = {-1, -1};
};

uint64_t NsInode(uint32_t pid, const char* which) {
  struct stat st {};
  const std::string path = "/proc/" + std::to_string(pid) + "/ns/" + which;
  return ::stat(path.c_str(), &st) == 0 ? st.st_ino : 0;
}

// A catalog refreshed at increasing fake times, each past the rate limit.
struct Clock {
  uint64_t now = MonotonicNowNs();
  uint64_t Next() { return now += 1'000'000'000; }
};

TEST(ProcessCatalog, KnowsItselfAndAChildUntilItExits) {
  ProcessCatalog catalog;
  Clock clock;
  Child child([](Child& c) { c.Report(1); });
  ASSERT_EQ(child.Read(), 1u);
  ASSERT_TRUE(catalog.Refresh(clock.Next()));
  const auto* self = catalog.Find(::getpid());
  ASSERT_NE(self, nullptr);
  EXPECT_EQ(self->nspid, static_cast<uint32_t>(::getpid()));
  EXPECT_EQ(self->pid_ns, catalog.self_pid_ns());
  EXPECT_EQ(self->mnt_ns, catalog.self_mnt_ns());
  const auto* e = catalog.Find(child.pid());
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->uid, ::getuid());
  EXPECT_EQ(e->nspid, static_cast<uint32_t>(child.pid()));
  EXPECT_EQ(e->pid_ns, NsInode(child.pid(), "pid"));
  EXPECT_EQ(e->mnt_ns, NsInode(child.pid(), "mnt"));
  EXPECT_EQ(e->cgroup, os::ReadNamespaceFacts(child.pid())->cgroup);
  // Processes of the daemon's own pid namespace are nobody's namesakes.
  for (const auto* n : catalog.Namesakes(child.pid())) EXPECT_NE(n->host_pid, child.pid());
  EXPECT_EQ(catalog.InPidNamespace(catalog.self_pid_ns(), child.pid()), e);

  const uint32_t pid = child.pid();
  child.Kill();
  ASSERT_TRUE(catalog.Refresh(clock.Next()));
  EXPECT_EQ(catalog.Find(pid), nullptr);
  EXPECT_EQ(catalog.InPidNamespace(catalog.self_pid_ns(), pid), nullptr);
}

TEST(ProcessCatalog, RefreshesAtMostOncePer20Ms) {
  ProcessCatalog catalog;
  const uint64_t t = MonotonicNowNs();
  EXPECT_TRUE(catalog.Refresh(t));
  EXPECT_FALSE(catalog.Refresh(t + 1'000'000));
  EXPECT_FALSE(catalog.Refresh(t + 19'000'000));
  EXPECT_TRUE(catalog.Refresh(t + 21'000'000));
  EXPECT_EQ(catalog.stats().refreshes, 2u);
  EXPECT_EQ(catalog.stats().refreshes_skipped, 2u);
}

TEST(ProcessCatalog, UnchangedProcessesCostNoRead) {
  ProcessCatalog catalog;
  Clock clock;
  ASSERT_TRUE(catalog.Refresh(clock.Next()));
  ASSERT_GT(catalog.size(), 1u);
  const uint64_t facts = catalog.stats().facts_reads;
  const uint64_t stats = catalog.stats().stat_reads;
  ASSERT_TRUE(catalog.Refresh(clock.Next()));
  // Only what started meanwhile (other processes of the host) and the 1/64 verification.
  EXPECT_LT(catalog.stats().facts_reads - facts, catalog.size() / 4 + 8);
  EXPECT_LT(catalog.stats().stat_reads - stats, catalog.size() / 4 + 24);
}

TEST(ProcessCatalog, ABurstOfNewProcessesIsReadOverSeveralRefreshes) {
  ProcessCatalog::Options options;
  options.max_new_per_refresh = 10;
  ProcessCatalog catalog(options);
  Clock clock;
  ASSERT_TRUE(catalog.Refresh(clock.Next()));
  EXPECT_LE(catalog.size(), 10u);
  EXPECT_GT(catalog.stats().deferred, 0u);
  const size_t listed = catalog.stats().listed;
  for (size_t i = 0; i < listed / 10 + 5; ++i) catalog.Refresh(clock.Next());
  EXPECT_GE(catalog.size() + 10, listed);
  EXPECT_EQ(catalog.Find(::getpid()) != nullptr, true);
}

TEST(ProcessCatalog, HoldsNoMoreThanItsCap) {
  ProcessCatalog::Options options;
  options.max_entries = 5;
  ProcessCatalog catalog(options);
  Clock clock;
  ASSERT_TRUE(catalog.Refresh(clock.Next()));
  ASSERT_TRUE(catalog.Refresh(clock.Next()));
  EXPECT_EQ(catalog.size(), 5u);
  EXPECT_GT(catalog.stats().over_cap, 0u);
}

// A child in a new pid namespace (pid 1 there) with a child of its own (pid 2 there).
struct PidNamespace {
  Child outer{[](Child& c) {
    if (::unshare(CLONE_NEWPID) != 0) {
      c.Report(0);
      return;
    }
    const pid_t init = ::fork();  // pid 1 of the new namespace
    if (init == 0) {
      if (::fork() == 0) {  // pid 2
        for (;;) ::pause();
      }
      for (;;) ::pause();
    }
    c.Report(static_cast<uint32_t>(init));  // its host pid
  }};
  uint32_t init = outer.Read();
  ~PidNamespace() {
    if (init > 0) ::kill(static_cast<pid_t>(init), SIGKILL);  // takes pid 2 with it
  }
};

TEST(ProcessCatalog, NamesakesInAnotherPidNamespace) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root for a pid namespace";
  PidNamespace ns;
  ASSERT_GT(ns.init, 0u);
  const uint64_t pid_ns = NsInode(ns.init, "pid_for_children");
  ASSERT_NE(pid_ns, 0u);
  ProcessCatalog catalog;
  Clock clock;
  // pid 2 appears a moment after its parent.
  const ProcessCatalog::Entry* two = nullptr;
  for (int i = 0; i < 100 && two == nullptr; ++i) {
    ASSERT_TRUE(catalog.Refresh(clock.Next()));
    two = catalog.InPidNamespace(pid_ns, 2);
    if (two == nullptr) ::usleep(10000);
  }
  ASSERT_NE(two, nullptr);
  EXPECT_NE(two->host_pid, 2u);
  EXPECT_EQ(two->nspid, 2u);
  EXPECT_EQ(two->pid_ns, pid_ns);

  const auto* one = catalog.InPidNamespace(pid_ns, 1);
  ASSERT_NE(one, nullptr);
  EXPECT_EQ(one->host_pid, ns.init);
  EXPECT_EQ(one->nspid, 1u);
  EXPECT_NE(one->pid_ns, catalog.self_pid_ns());

  // Namesakes of 1: the container's init, never the host's init (of the daemon's namespace).
  bool found = false;
  for (const auto* e : catalog.Namesakes(1)) {
    EXPECT_NE(e->pid_ns, catalog.self_pid_ns());
    EXPECT_EQ(e->nspid, 1u);
    found |= e->host_pid == ns.init;
  }
  EXPECT_TRUE(found);
  bool found_two = false;
  for (const auto* e : catalog.Namesakes(2)) found_two |= e == two;
  EXPECT_TRUE(found_two);
  // The host's own pid 1 is in the daemon's namespace (when its namespace can be read at all:
  // some sandboxes hide it, and an unknown namespace counts as foreign).
  if (NsInode(1, "pid") != 0) {
    EXPECT_EQ(catalog.InPidNamespace(catalog.self_pid_ns(), 1), catalog.Find(1));
  }
}

TEST(ProcessCatalog, ReusedPidIsANewEntry) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to choose the next pid";
  ProcessCatalog catalog;
  Clock clock;
  std::vector<std::pair<bool, uint32_t>> events;  // (added, pid)
  ProcessCatalog::Listener listener;
  listener.added = [&](const ProcessCatalog::Entry& e) { events.push_back({true, e.host_pid}); };
  listener.removed = [&](const ProcessCatalog::Entry& e) { events.push_back({false, e.host_pid}); };
  catalog.AddListener(listener);
  // Other processes of the host may take the pid first: try again then.
  for (int attempt = 0; attempt < 50; ++attempt) {
    auto first = std::make_unique<Child>([](Child& c) { c.Report(1); });
    ASSERT_EQ(first->Read(), 1u);
    const uint32_t pid = first->pid();
    ASSERT_TRUE(catalog.Refresh(clock.Next()));
    const auto* before = catalog.Find(pid);
    ASSERT_NE(before, nullptr);
    const uint64_t ticks = before->start_ticks;
    first->Kill();
    ::usleep(30000);  // another clock tick
    {
      std::ofstream last("/proc/sys/kernel/ns_last_pid");
      last << pid - 1;
    }
    Child second([](Child& c) { c.Report(1); });
    ASSERT_EQ(second.Read(), 1u);
    if (static_cast<uint32_t>(second.pid()) != pid) continue;
    events.clear();
    ASSERT_TRUE(catalog.Refresh(clock.Next()));
    const auto* after = catalog.Find(pid);
    ASSERT_NE(after, nullptr);
    EXPECT_NE(after->start_ticks, ticks);
    const std::vector<std::pair<bool, uint32_t>> expected = {{false, pid}, {true, pid}};
    std::vector<std::pair<bool, uint32_t>> mine;
    for (const auto& ev : events) {
      if (ev.second == pid) mine.push_back(ev);
    }
    EXPECT_EQ(mine, expected);
    return;
  }
  GTEST_SKIP() << "the host took every pid we freed";
}

TEST(ProcessCatalog, MountNamespaceChangeIsSeenOnUpdate) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root for a mount namespace";
  Child child([](Child& c) {
    c.Report(1);
    c.Await();
    c.Report(::unshare(CLONE_NEWNS) == 0 ? 2 : 0);
  });
  ASSERT_EQ(child.Read(), 1u);
  ProcessCatalog catalog;
  Clock clock;
  ASSERT_TRUE(catalog.Refresh(clock.Next()));
  ASSERT_EQ(catalog.Find(child.pid())->mnt_ns, catalog.self_mnt_ns());
  child.Signal();
  ASSERT_EQ(child.Read(), 2u);
  const uint64_t mnt = NsInode(child.pid(), "mnt");
  ASSERT_NE(mnt, catalog.self_mnt_ns());
  const auto* e = catalog.Update(child.pid());
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->mnt_ns, mnt);
  auto in = catalog.InMountNamespace(mnt);
  ASSERT_EQ(in.size(), 1u);
  EXPECT_EQ(in[0]->host_pid, static_cast<uint32_t>(child.pid()));
  for (const auto* o : catalog.InMountNamespace(catalog.self_mnt_ns())) {
    EXPECT_NE(o->host_pid, static_cast<uint32_t>(child.pid()));
  }
}

// --- the scanner ---------------------------------------------------------------------------

struct Reports {
  struct Marker {
    uint32_t pid;
    std::string path;
    uint64_t dev, ino;
  };
  struct Dir {
    uint32_t pid;
    uint64_t pid_ns, mnt_ns;
    std::string dir;
  };
  std::vector<Marker> markers;
  std::vector<Dir> dirs;
  std::vector<std::string> dirs_gone;
  std::vector<uint32_t> gone;

  ingest::ProcessScanner::Handlers Handlers() {
    ingest::ProcessScanner::Handlers h;
    h.on_marker = [this](uint32_t pid, const std::string& path, uint64_t dev, uint64_t ino) {
      markers.push_back({pid, path, dev, ino});
    };
    h.on_foreign_dir = [this](uint32_t pid, uint64_t pid_ns, uint64_t mnt_ns,
                              const std::string& dir) {
      dirs.push_back({pid, pid_ns, mnt_ns, dir});
    };
    h.on_foreign_dir_gone = [this](const std::string& dir) { dirs_gone.push_back(dir); };
    h.on_gone = [this](uint32_t pid) { gone.push_back(pid); };
    return h;
  }
  std::vector<Marker> MarkersOf(uint32_t pid) const {
    std::vector<Marker> out;
    for (const auto& m : markers) {
      if (m.pid == pid) out.push_back(m);
    }
    return out;
  }
};

ingest::ProcessScanner::Options Unbounded() {
  ingest::ProcessScanner::Options o;
  o.maps_reads_per_tick = 1 << 20;  // the host's processes must not delay the test's
  o.tick_budget_ns = 60'000'000'000;
  return o;
}

class Scratch {
 public:
  Scratch() {
    char tmpl[] = "/tmp/jitsym-scan-XXXXXX";
    dir_ = ::mkdtemp(tmpl);
  }
  ~Scratch() { std::filesystem::remove_all(dir_); }
  const std::string& dir() const { return dir_; }
  std::string File(const std::string& name) const {
    const std::string path = dir_ + "/" + name;
    std::ofstream(path) << std::string(4096, 'j');
    return path;
  }

 private:
  std::string dir_;
};

// In a child: maps `path` as a jitdump writer does (its marker for perf).
void MapMarker(const char* path) {
  const int fd = ::open(path, O_RDONLY);
  if (fd < 0 || ::mmap(nullptr, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0) == MAP_FAILED) {
    _exit(1);
  }
}

TEST(ProcessScanner, ReportsAMarkerOnceAtTheFirstTick) {
  Scratch scratch;
  const std::string path = scratch.File("jit-4242.dump");
  Child child([&](Child& c) {
    MapMarker(path.c_str());
    c.Report(1);
  });
  ASSERT_EQ(child.Read(), 1u);
  boost::asio::io_context io;
  ProcessCatalog catalog;
  Reports reports;
  ingest::ProcessScanner scanner(io, catalog, Unbounded(), reports.Handlers());
  Clock clock;
  scanner.Tick(clock.Next());
  auto mine = reports.MarkersOf(child.pid());
  ASSERT_EQ(mine.size(), 1u);
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(mine[0].dev, st.st_dev);
  EXPECT_EQ(mine[0].ino, st.st_ino);
  EXPECT_EQ(mine[0].path, "/proc/" + std::to_string(child.pid()) + "/root" + path);
  struct stat opened {};
  ASSERT_EQ(::stat(mine[0].path.c_str(), &opened), 0);
  EXPECT_EQ(opened.st_ino, st.st_ino);
  // Re-checks as it ages find it again, and say nothing.
  for (uint64_t s : {2, 5, 9, 17, 40, 70, 200, 400}) scanner.Tick(clock.now + s * 1'000'000'000);
  EXPECT_EQ(reports.MarkersOf(child.pid()).size(), 1u);
  EXPECT_GE(scanner.stats().maps_reads, 2u);
}

TEST(ProcessScanner, ReportsAMarkerMappedLaterAtTheNextDueCheck) {
  Scratch scratch;
  const std::string path = scratch.File("jit-77.dump");
  Child child([&](Child& c) {
    c.Report(1);
    c.Await();
    MapMarker(path.c_str());
    c.Report(2);
  });
  ASSERT_EQ(child.Read(), 1u);
  boost::asio::io_context io;
  ProcessCatalog catalog;
  Reports reports;
  ingest::ProcessScanner scanner(io, catalog, Unbounded(), reports.Handlers());
  const uint64_t t0 = MonotonicNowNs();
  scanner.Tick(t0);
  EXPECT_TRUE(reports.MarkersOf(child.pid()).empty());
  child.Signal();
  ASSERT_EQ(child.Read(), 2u);
  // The child is young: checked again once it is 1 s old, i.e. at the next tick of a 1 s timer.
  scanner.Tick(t0 + 1'100'000'000);
  EXPECT_EQ(reports.MarkersOf(child.pid()).size(), 1u);
  scanner.Tick(t0 + 2'200'000'000);
  scanner.Tick(t0 + 4'300'000'000);
  EXPECT_EQ(reports.MarkersOf(child.pid()).size(), 1u);
}

TEST(ProcessScanner, DeletedMarkerIsReportedThroughItsMapping) {
  if (::geteuid() != 0) GTEST_SKIP() << "map_files needs CAP_SYS_ADMIN";
  Scratch scratch;
  const std::string path = scratch.File("jit-99.dump");
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  Child child([&](Child& c) {
    MapMarker(path.c_str());
    ::unlink(path.c_str());
    c.Report(1);
  });
  ASSERT_EQ(child.Read(), 1u);
  boost::asio::io_context io;
  ProcessCatalog catalog;
  Reports reports;
  ingest::ProcessScanner scanner(io, catalog, Unbounded(), reports.Handlers());
  scanner.Tick(MonotonicNowNs());
  auto mine = reports.MarkersOf(child.pid());
  ASSERT_EQ(mine.size(), 1u);
  EXPECT_NE(mine[0].path.find("/map_files/"), std::string::npos) << mine[0].path;
  struct stat opened {};
  ASSERT_EQ(::stat(mine[0].path.c_str(), &opened), 0);
  EXPECT_EQ(opened.st_ino, st.st_ino);
}

TEST(ProcessScanner, AProcessMappingHundredsOfMarkersGetsOnlyItsShare) {
  Scratch scratch;
  std::vector<std::string> paths;
  for (int i = 0; i < 300; ++i) paths.push_back(scratch.File("jit-" + std::to_string(i) + ".dump"));
  Child child([&](Child& c) {
    for (const auto& p : paths) MapMarker(p.c_str());
    c.Report(1);
  });
  ASSERT_EQ(child.Read(), 1u);
  boost::asio::io_context io;
  ProcessCatalog catalog;
  Reports reports;
  auto options = Unbounded();
  options.max_markers_per_process = 8;
  ingest::ProcessScanner scanner(io, catalog, options, reports.Handlers());
  Clock clock;
  for (int i = 0; i < 5; ++i) scanner.Tick(clock.Next());
  EXPECT_EQ(reports.MarkersOf(child.pid()).size(), 8u);
}

TEST(ProcessScanner, MapsReadsPerTickAreBoundedAndCarriedOver) {
  std::vector<std::unique_ptr<Child>> children;
  for (int i = 0; i < 40; ++i) {
    children.push_back(std::make_unique<Child>([](Child& c) { c.Report(1); }));
    ASSERT_EQ(children.back()->Read(), 1u);
  }
  boost::asio::io_context io;
  ProcessCatalog catalog;
  Reports reports;
  ingest::ProcessScanner::Options options;
  options.maps_reads_per_tick = 10;
  ingest::ProcessScanner scanner(io, catalog, options, reports.Handlers());
  Clock clock;
  scanner.Tick(clock.Next());
  EXPECT_EQ(scanner.stats().last_tick_maps_reads, 10u);
  EXPECT_GE(scanner.stats().backlog, 30u);
  // Everything is read within ceil(n / 10) ticks.
  const size_t ticks = catalog.size() / 10 + 2;
  for (size_t i = 0; i < ticks; ++i) scanner.Tick(clock.now + 100'000'000 * (i + 1));
  EXPECT_GE(scanner.stats().maps_reads + scanner.stats().maps_skipped, catalog.size());
}

// A child with its own mount namespace and a tmpfs on its /tmp, and a grandchild in it.
struct Container {
  Child outer{[](Child& c) {
    if (::unshare(CLONE_NEWNS) != 0 ||
        ::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0 ||
        ::mount("tmpfs", "/tmp", "tmpfs", 0, "size=1m") != 0) {
      c.Report(0);
      return;
    }
    ::signal(SIGCHLD, SIG_IGN);  // no zombie when the grandchild is killed
    const pid_t inner = ::fork();
    if (inner == 0) {
      for (;;) ::pause();
    }
    c.Report(static_cast<uint32_t>(inner));
  }};
  uint32_t inner = outer.Read();
  ~Container() {
    if (inner > 0) ::kill(static_cast<pid_t>(inner), SIGKILL);
  }
};

TEST(ProcessScanner, ForeignTmpIsReportedOnceAndAgainThroughASurvivor) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root for a mount namespace";
  Container container;
  ASSERT_GT(container.inner, 0u);
  const uint32_t outer = container.outer.pid();
  boost::asio::io_context io;
  ProcessCatalog catalog;
  Reports reports;
  ingest::ProcessScanner scanner(io, catalog, Unbounded(), reports.Handlers());
  Clock clock;
  scanner.Tick(clock.Next());
  scanner.Tick(clock.Next());
  const uint64_t mnt = NsInode(outer, "mnt");
  std::vector<Reports::Dir> mine;
  for (const auto& d : reports.dirs) {
    if (d.mnt_ns == mnt) mine.push_back(d);
  }
  ASSERT_EQ(mine.size(), 1u);
  EXPECT_TRUE(mine[0].pid == outer || mine[0].pid == container.inner);
  EXPECT_EQ(mine[0].dir, "/proc/" + std::to_string(mine[0].pid) + "/root/tmp");
  EXPECT_EQ(mine[0].pid_ns, catalog.self_pid_ns());

  // The reporter exits: the same directory again, through the other process.
  const uint32_t reporter = mine[0].pid;
  const uint32_t survivor = reporter == outer ? container.inner : outer;
  if (reporter == outer) {
    container.outer.Kill();
  } else {
    ::kill(static_cast<pid_t>(container.inner), SIGKILL);
    ::usleep(50000);  // reaped by its parent
  }
  reports.dirs.clear();
  scanner.Tick(clock.Next());
  // Only this container's: other tests running at the same time make mount namespaces too.
  std::erase_if(reports.dirs, [&](const Reports::Dir& d) { return d.mnt_ns != mnt; });
  ASSERT_EQ(reports.dirs.size(), 1u);
  EXPECT_EQ(reports.dirs[0].pid, survivor);
  EXPECT_EQ(reports.dirs[0].dir, "/proc/" + std::to_string(survivor) + "/root/tmp");

  // The last one exits: gone.
  if (survivor == outer) {
    container.outer.Kill();
  } else {
    ::kill(static_cast<pid_t>(container.inner), SIGKILL);
  }
  // Named as last reported: through the survivor, or through the first reporter when both
  // exits fell between two ticks (the kernel reaps in its own time). Other tests' containers
  // may come and go meanwhile: only these two names count.
  const std::string via_survivor = reports.dirs[0].dir;
  const std::string via_reporter = "/proc/" + std::to_string(reporter) + "/root/tmp";
  auto ours = [&] {
    return std::count_if(
        reports.dirs_gone.begin(), reports.dirs_gone.end(),
        [&](const std::string& d) { return d == via_survivor || d == via_reporter; });
  };
  for (int i = 0; i < 50 && ours() == 0; ++i) {
    ::usleep(20000);
    scanner.Tick(clock.Next());
  }
  EXPECT_EQ(ours(), 1);
}

TEST(ProcessScanner, AMarkerInAContainersPrivateTmpIsOpenedThroughItsRoot) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root for a mount namespace";
  Child child([](Child& c) {
    if (::unshare(CLONE_NEWNS) != 0 ||
        ::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0 ||
        ::mount("tmpfs", "/tmp", "tmpfs", 0, "size=1m") != 0) {
      c.Report(0);
      return;
    }
    const int fd = ::open("/tmp/jit-1.dump", O_RDWR | O_CREAT | O_EXCL, 0600);
    if (fd < 0 || ::ftruncate(fd, 4096) != 0) {
      c.Report(0);
      return;
    }
    MapMarker("/tmp/jit-1.dump");
    c.Report(1);
  });
  ASSERT_EQ(child.Read(), 1u);
  boost::asio::io_context io;
  ProcessCatalog catalog;
  Reports reports;
  ingest::ProcessScanner scanner(io, catalog, Unbounded(), reports.Handlers());
  scanner.Tick(MonotonicNowNs());
  auto mine = reports.MarkersOf(child.pid());
  ASSERT_EQ(mine.size(), 1u);
  const std::string root = "/proc/" + std::to_string(child.pid()) + "/root";
  EXPECT_EQ(mine[0].path, root + "/tmp/jit-1.dump");
  struct stat st {};
  ASSERT_EQ(::stat(mine[0].path.c_str(), &st), 0);
  EXPECT_EQ(st.st_ino, mine[0].ino);
  EXPECT_EQ(st.st_dev, mine[0].dev);
  // Not the daemon's /tmp: nothing of that name there, or another file.
  struct stat host {};
  if (::stat("/tmp/jit-1.dump", &host) == 0) {
    EXPECT_FALSE(host.st_dev == st.st_dev && host.st_ino == st.st_ino);
  }
  // And its /tmp is a foreign directory.
  bool dir = false;
  for (const auto& d : reports.dirs) dir |= d.pid == static_cast<uint32_t>(child.pid());
  EXPECT_TRUE(dir);
}

TEST(ProcessScanner, ASymlinkedTmpIsNotFollowed) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root for a mount namespace and chroot";
  Scratch scratch;
  std::filesystem::create_symlink("/etc", scratch.dir() + "/tmp");
  const std::string root = scratch.dir();
  Child child([&](Child& c) {
    c.Report(::unshare(CLONE_NEWNS) == 0 && ::chroot(root.c_str()) == 0 ? 1 : 0);
  });
  ASSERT_EQ(child.Read(), 1u);
  boost::asio::io_context io;
  ProcessCatalog catalog;
  Reports reports;
  ingest::ProcessScanner scanner(io, catalog, Unbounded(), reports.Handlers());
  scanner.Tick(MonotonicNowNs());
  for (const auto& d : reports.dirs) EXPECT_NE(d.pid, static_cast<uint32_t>(child.pid())) << d.dir;
}

TEST(ProcessScanner, RunsOnItsTimer) {
  Scratch scratch;
  const std::string path = scratch.File("jit-5.dump");
  Child child([&](Child& c) {
    MapMarker(path.c_str());
    c.Report(1);
  });
  ASSERT_EQ(child.Read(), 1u);
  boost::asio::io_context io;
  ProcessCatalog catalog;
  Reports reports;
  auto options = Unbounded();
  options.period_ns = 50'000'000;
  ingest::ProcessScanner scanner(io, catalog, options, reports.Handlers());
  scanner.Start();
  io.run_for(std::chrono::milliseconds(300));
  scanner.Stop();
  EXPECT_EQ(reports.MarkersOf(child.pid()).size(), 1u);
  EXPECT_GE(scanner.stats().ticks, 3u);
  EXPECT_GT(scanner.stats().cpu_ns, 0u);
}

}  // namespace
}  // namespace jitsym
