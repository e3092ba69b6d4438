// The one per-pid snapshot of /proc shared by ImageLookup and NativeLookup: one read of a
// process's maps serves both lookups, and both see the same process behind a pid.
#include "daemon/query/process_snapshots.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "daemon/ingest/r2rmap_source.h"
#include "daemon/query/image_lookup.h"
#include "daemon/query/native_lookup.h"
#include "daemon/util/clock.h"

namespace jitsym::query {
namespace {

// An address the ELF lookup can name: a function of this very binary.
__attribute__((noinline)) int SnapshotTestFunction(int x) { return x * 3 + 1; }

security::PeerAccess Self() {
  security::PeerCredentials peer;
  peer.uid = ::getuid();
  peer.gid = ::getgid();
  return security::PeerAccess(peer, {});
}

std::vector<proto::AddressQuery> Queries(std::initializer_list<uint64_t> addrs) {
  std::vector<proto::AddressQuery> out;
  for (uint64_t a : addrs) out.emplace_back().addr = a;
  return out;
}

// The real /proc readers of this process, counting the reads of its maps.
struct CountingReaders {
  std::atomic<int> maps_reads{0};
  ProcessSnapshots::Options Options() {
    ProcessSnapshots::Options o;
    o.read_maps = [this](uint32_t pid) {
      ++maps_reads;
      return os::ReadProcessMaps(pid);
    };
    return o;
  }
};

// This process maps Foo.dll (a ReadyToRun image with a map in the view) and its own executable:
// one lookup of each kind, in the order of the pid chain, reads /proc/<pid>/maps once.
TEST(ProcessSnapshots, OneReadServesImageAndNativeLookups) {
  char dir[] = "/tmp/jitsym-snapshot-test-XXXXXX";
  ASSERT_TRUE(::mkdtemp(dir));
  const std::string dll = std::string(dir) + "/Foo.dll";
  const int fd = ::open(dll.c_str(), O_RDWR | O_CREAT | O_TRUNC, 0600);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::ftruncate(fd, 0x10000), 0);
  void* base = ::mmap(nullptr, 0x10000, PROT_READ, MAP_PRIVATE, fd, 0);
  ASSERT_NE(base, MAP_FAILED);
  const uint64_t b = reinterpret_cast<uint64_t>(base);
  const std::string map_text =
      "FFFFFFFF 00 0123456789ABCDEF0123456789ABCDEF\nFFFFFFFE 00 1\n00001000 20 Foo::Bar()\n";
  const std::string map_path = std::string(dir) + "/Foo.ni.r2rmap";
  {
    FILE* f = std::fopen(map_path.c_str(), "w");
    ASSERT_TRUE(f);
    std::fputs(map_text.c_str(), f);
    std::fclose(f);
  }
  ingest::R2rmapSource src(map_path);
  src.Feed({reinterpret_cast<const uint8_t*>(map_text.data()), map_text.size()});
  auto source = std::make_shared<index::SourceView>();
  source->origin = Origin::kR2rmap;
  source->path = map_path;
  source->image = "Foo";
  source->code = src.code().Publish();
  index::IndexView view;
  view.images["Foo"].push_back(source);

  CountingReaders readers;
  ProcessSnapshots processes(readers.Options());
  ImageLookup images({}, processes);
  NativeLookup native({}, processes);
  const uint64_t fn = reinterpret_cast<uint64_t>(&SnapshotTestFunction);
  proto::LookupRequest req;
  req.pid = ::getpid();
  req.addrs = Queries({b + 0x1010, fn});
  const security::PeerAccess access = Self();
  proto::LookupResponse out;
  LookupBatch batch(req, view, access, &out);
  const uint64_t t0 = MonotonicNowNs();
  images.Resolve(batch);
  native.Resolve(batch);
  const uint64_t took = MonotonicNowNs() - t0;
  ASSERT_TRUE(out.results[0].found);
  EXPECT_EQ(out.results[0].name, "Foo::Bar()");
  EXPECT_EQ(out.results[0].origin, proto::Origin::kR2rmap);
  ASSERT_TRUE(out.results[1].found);
  EXPECT_EQ(out.results[1].origin, proto::Origin::kElf);
  EXPECT_NE(out.results[1].name.find("SnapshotTestFunction"), std::string_view::npos)
      << out.results[1].name;
  // One read, unless the machine was so slow that the snapshot aged past the re-read interval
  // between the two resolvers (then the image resolver's miss re-reads it, as it should).
  if (took < ProcessSnapshots::kMinRereadNs) {
    EXPECT_EQ(readers.maps_reads.load(), 1);
  } else {
    EXPECT_LE(readers.maps_reads.load(), 2);
  }
  EXPECT_EQ(SnapshotTestFunction(1), 4);

  ::munmap(base, 0x10000);
  ::close(fd);
  std::remove(dll.c_str());
  std::remove(map_path.c_str());
  ::rmdir(dir);
}

// Both lookups see one identity for a pid: once a lookup has read it, the other uses that
// snapshot (same owner, same start) even if /proc would now say otherwise, until the snapshot is
// old enough to be checked; then a reused pid is read again.
TEST(ProcessSnapshots, OneIdentityPerPidUntilReused) {
  std::atomic<uint64_t> start{100};
  std::atomic<int> maps_reads{0};
  ProcessSnapshots::Options o;
  o.read_identity = [&](uint32_t) {
    return std::optional<os::ProcessIdentity>(os::ProcessIdentity{start.load(), 4242});
  };
  o.read_maps = [&](uint32_t) {
    ++maps_reads;
    std::vector<os::Mapping> maps(1);
    maps[0].start = 0x1000;
    maps[0].end = 0x2000;
    maps[0].perms = "r-xp";
    maps[0].path = "/opt/app/Foo.dll";
    return std::optional<std::vector<os::Mapping>>(std::move(maps));
  };
  ProcessSnapshots processes(o);
  bool fresh = false;
  auto first = processes.Current(7, &fresh);
  ASSERT_TRUE(first);
  EXPECT_TRUE(fresh);
  EXPECT_EQ(first->identity.uid, 4242u);
  // Derived once, at read time, for each lookup.
  ASSERT_EQ(first->exec.size(), 1u);
  EXPECT_EQ(first->exec[0].path, "/opt/app/Foo.dll");
  ASSERT_EQ(first->images.size(), 1u);
  EXPECT_EQ(first->images[0].name, "Foo");

  start = 200;  // another process has pid 7 now
  auto second = processes.Current(7, &fresh);
  EXPECT_FALSE(fresh);
  EXPECT_EQ(second, first);  // too recent to be checked: the same snapshot
  EXPECT_EQ(processes.Refreshed(7, &fresh), first);
  EXPECT_EQ(maps_reads.load(), 1);

  std::this_thread::sleep_for(std::chrono::nanoseconds(ProcessSnapshots::kMinRereadNs + 10000000));
  auto third = processes.Current(7, &fresh);
  EXPECT_TRUE(fresh);
  EXPECT_EQ(third->identity.start_ticks, 200u);
  EXPECT_EQ(maps_reads.load(), 2);
  EXPECT_EQ(processes.Current(7, &fresh), third);  // and both lookups now see that one
}

// ReadLive reads now (never the cached snapshot of an exited process) and gives nothing if the
// pid changed hands while it was read.
TEST(ProcessSnapshots, ReadLiveIsNeverTheCacheAndChecksTheIdentityAfter) {
  int identity_reads = 0;
  std::optional<os::ProcessIdentity> alive = os::ProcessIdentity{100, 4242};
  ProcessSnapshots::Options o;
  o.read_identity = [&](uint32_t) {
    ++identity_reads;
    auto id = alive;
    if (id && identity_reads == 4) id->start_ticks = 300;  // reused between maps and re-check
    return id;
  };
  o.read_maps = [&](uint32_t) { return std::optional<std::vector<os::Mapping>>(std::in_place); };
  ProcessSnapshots processes(o);
  bool fresh = false;
  ASSERT_TRUE(processes.Current(9, &fresh));  // identity read 1
  EXPECT_TRUE(processes.ReadLive(9));         // reads 2, 3
  EXPECT_FALSE(processes.ReadLive(9));        // reads 4 (changed), 5
  alive.reset();                              // the process exits
  EXPECT_FALSE(processes.ReadLive(9));        // the cache still has it, ReadLive does not
  EXPECT_TRUE(processes.Current(9, &fresh));
}

}  // namespace
}  // namespace jitsym::query
