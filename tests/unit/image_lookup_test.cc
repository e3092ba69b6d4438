#include "daemon/query/image_lookup.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "daemon/ingest/r2rmap_source.h"
#include "daemon/security/limits.h"

namespace jitsym::query {
namespace {

TEST(ImageLookup, NamesAndSignatures) {
  EXPECT_EQ(ImageNameFromPath("/usr/lib/dotnet/System.Private.CoreLib.dll"),
            "System.Private.CoreLib");
  EXPECT_EQ(ImageNameFromPath("Foo.DLL"), "Foo");
  EXPECT_EQ(ImageNameFromPath("Foo"), "Foo");
  EXPECT_EQ(ImageNameFromPath("dir/Foo.exe"), "Foo.exe");
  EXPECT_EQ(NormalizeSignature("0123456789ABCDEF0123456789abcdef"),
            "0123456789abcdef0123456789abcdef");
  EXPECT_EQ(NormalizeSignature("{01234567-89AB-CDEF-0123-456789ABCDEF}"),
            "0123456789abcdef0123456789abcdef");
  EXPECT_EQ(NormalizeSignature("01234567-89AB-CDEF-0123-456789ABCDEF"),
            "0123456789abcdef0123456789abcdef");
  EXPECT_EQ(NormalizeSignature("0123456789ABCDEF0123456789abcde"), "");
  EXPECT_EQ(NormalizeSignature("System.Private.CoreLib"), "");
}

// What a client with this uid (and a group of its own) may do.
security::PeerAccess AccessOf(uint32_t uid) {
  security::PeerCredentials peer;
  peer.uid = uid;
  peer.gid = uid;
  return security::PeerAccess(peer, {});
}

std::vector<proto::AddressQuery> Queries(std::initializer_list<uint64_t> addrs) {
  std::vector<proto::AddressQuery> out;
  for (uint64_t a : addrs) out.emplace_back().addr = a;
  return out;
}

// The map is written to a real file: whether a map is believed depends on its owner (here the
// test's own user, which is the daemon's user).
std::shared_ptr<index::IndexView> ViewWithImage(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + "/jitsym-image-test-" +
                           std::to_string(::getpid()) + "-" + name + ".ni.r2rmap";
  if (FILE* f = std::fopen(path.c_str(), "w")) {
    std::fputs(text.c_str(), f);
    std::fclose(f);
  }
  ingest::R2rmapSource src(path);
  src.Feed({reinterpret_cast<const uint8_t*>(text.data()), text.size()});
  auto v = std::make_shared<index::SourceView>();
  v->origin = Origin::kR2rmap;
  v->path = src.path();
  v->image = name;
  v->image_signature = src.image_signature();
  v->code = src.code().Publish();
  auto view = std::make_shared<index::IndexView>();
  view->images[name].push_back(v);
  return view;
}

TEST(ImageLookup, ByNamePathAndSignature) {
  auto view = ViewWithImage("Foo",
                            "FFFFFFFF 00 0123456789ABCDEF0123456789ABCDEF\nFFFFFFFE 00 1\n"
                            "00001000 20 Foo::Bar()\n00002000 10 Foo::Bar()\n");
  ProcessSnapshots processes;
  ImageLookup lookup(ImageLookup::Options{}, processes);
  for (const char* key :
       {"Foo", "Foo.dll", "/some/dir/Foo.dll", "0123456789abcdef0123456789abcdef"}) {
    proto::LookupRequest req;
    req.image = key;
    req.addrs = Queries({0x1010, 0x2008, 0x3000, 0x100000000ull});
    proto::LookupResponse out;
    const security::PeerAccess access = AccessOf(::getuid());
    LookupBatch batch(req, *view, access, &out);
    ASSERT_TRUE(lookup.LookupImage(batch, ::getuid())) << key;
    ASSERT_EQ(out.results.size(), 4u);
    EXPECT_TRUE(out.results[0].found);
    EXPECT_EQ(out.results[0].name, "Foo::Bar()");
    EXPECT_EQ(out.results[0].offset, 0x10u);
    EXPECT_EQ(out.results[0].start, 0x1000u);
    EXPECT_EQ(out.results[0].image, "Foo");
    EXPECT_EQ(out.results[0].origin, proto::Origin::kR2rmap);
    EXPECT_TRUE(out.results[1].found);  // the cold part of a split method
    EXPECT_EQ(out.results[1].start, 0x2000u);
    EXPECT_FALSE(out.results[2].found);
    EXPECT_FALSE(out.results[3].found);
  }
  proto::LookupRequest req;
  req.image = "Bar";
  req.addrs = Queries({0x1010});
  const security::PeerAccess access = AccessOf(::getuid());
  proto::LookupResponse out;
  {
    LookupBatch batch(req, *view, access, &out);
    EXPECT_FALSE(lookup.LookupImage(batch, ::getuid()));
  }
  req.image = "Foo";
  req.origin = "jitdump";
  LookupBatch batch(req, *view, access, &out);
  ASSERT_TRUE(lookup.LookupImage(batch, ::getuid()));
  EXPECT_FALSE(out.results[0].found);
}

// This process maps a file named Foo.dll; its addresses resolve through /proc/self/maps.
TEST(ImageLookup, InProcessThroughProcMapsOnlyForTheOwner) {
  char dir[] = "/tmp/jitsym-image-test-XXXXXX";
  ASSERT_TRUE(::mkdtemp(dir));
  const std::string path = std::string(dir) + "/Foo.dll";
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC, 0600);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::ftruncate(fd, 0x10000), 0);
  void* base = ::mmap(nullptr, 0x10000, PROT_READ, MAP_PRIVATE, fd, 0);
  ASSERT_NE(base, MAP_FAILED);
  const uint64_t b = reinterpret_cast<uint64_t>(base);
  const std::string map_text =
      "FFFFFFFF 00 0123456789ABCDEF0123456789ABCDEF\nFFFFFFFE 00 1\n00001000 20 Foo::Bar()\n";
  auto view = ViewWithImage("Foo", map_text);
  // The map must exist (its owner is checked): put it where the source says it is.
  auto source = std::make_shared<index::SourceView>(*view->images["Foo"][0]);
  source->path = std::string(dir) + "/Foo.ni.r2rmap";
  {
    FILE* f = std::fopen(source->path.c_str(), "w");
    ASSERT_TRUE(f);
    std::fputs(map_text.c_str(), f);
    std::fclose(f);
  }
  view->images["Foo"][0] = source;
  ProcessSnapshots processes;
  ImageLookup lookup(ImageLookup::Options{}, processes);
  proto::LookupRequest req;
  req.pid = ::getpid();
  req.addrs = Queries({b + 0x1010, b + 0x3000, b + 0x10000 + 0x1010});
  for (uint32_t peer : {static_cast<uint32_t>(::getuid()), 0u, ::getuid() + 4242u}) {
    proto::LookupResponse out;
    const security::PeerAccess access = AccessOf(peer);
    LookupBatch batch(req, *view, access, &out);
    lookup.Resolve(batch);
    const bool allowed = peer == 0 || peer == ::getuid();
    EXPECT_EQ(out.results[0].found, allowed) << peer;
    if (allowed) {
      EXPECT_EQ(out.results[0].name, "Foo::Bar()");
      EXPECT_EQ(out.results[0].start, b + 0x1000);
      EXPECT_EQ(out.results[0].offset, 0x10u);
      EXPECT_EQ(out.results[0].image, "Foo");
    }
    EXPECT_FALSE(out.results[1].found);
    EXPECT_FALSE(out.results[2].found);  // past the end of the mapping
  }
  if (::geteuid() == 0) {
    // A map some other user put in a shared directory does not describe this process.
    ASSERT_EQ(::chown(source->path.c_str(), 4242, 4242), 0);
    const security::PeerAccess root = AccessOf(0);
    proto::LookupResponse out;
    LookupBatch batch(req, *view, root, &out);
    lookup.Resolve(batch);
    EXPECT_FALSE(out.results[0].found);
    // By image, only for its owner: for anyone else (root included) it may be planted.
    proto::LookupRequest by_image;
    by_image.image = "Foo";
    by_image.addrs = Queries({0x1010});
    proto::LookupResponse out2;
    LookupBatch batch2(by_image, *view, root, &out2);
    ASSERT_TRUE(lookup.LookupImage(batch2, 4242));
    EXPECT_TRUE(out2.results[0].found);
    proto::LookupResponse out3;
    LookupBatch batch3(by_image, *view, root, &out3);
    EXPECT_FALSE(lookup.LookupImage(batch3, 0));
  }
  // An answer a JIT source already gave is left alone; so is a restricted origin.
  const security::PeerAccess root = AccessOf(0);
  proto::LookupResponse out;
  req.addrs = Queries({b + 0x1010});
  LookupBatch batch(req, *view, root, &out);
  Answer jitted;
  jitted.name = "jitted";
  batch.Answer(0, jitted);
  batch.Advance();
  lookup.Resolve(batch);
  EXPECT_EQ(out.results[0].name, "jitted");
  req.origin = "jitdump";
  proto::LookupResponse out2;
  LookupBatch batch2(req, *view, root, &out2);
  lookup.Resolve(batch2);
  EXPECT_FALSE(out2.results[0].found);
  ::munmap(base, 0x10000);
  ::close(fd);
  ::unlink(path.c_str());
  ::unlink(source->path.c_str());
  ::rmdir(dir);
}

// A map of an --r2rmap-dir is read in steps, each charged to its owner: past the quota, the
// records read before answer and the rest do not (nor does the map take more memory).
TEST(ImageLookup, OperatorMapsAreChargedToTheirOwnerAndBounded) {
  char dir[] = "/tmp/jitsym-image-quota-XXXXXX";
  ASSERT_TRUE(::mkdtemp(dir));
  std::string text = "FFFFFFFF 00 0123456789ABCDEF0123456789ABCDEF\nFFFFFFFE 00 1\n";
  char line[64];
  for (int i = 0; i < 200000; ++i) {  // about 5 MiB
    std::snprintf(line, sizeof(line), "%08X 10 Quota::M%d()\n", 0x1000 + i * 16, i);
    text += line;
  }
  const std::string path = std::string(dir) + "/Quota.ni.r2rmap";
  FILE* f = std::fopen(path.c_str(), "w");
  ASSERT_TRUE(f);
  std::fputs(text.c_str(), f);
  std::fclose(f);
  security::Limits limits;
  limits.user_bytes = 2 << 20;
  auto ledger = std::make_shared<security::LimitLedger>(limits);
  ProcessSnapshots processes;
  ImageLookup lookup(ImageLookup::Options{{dir}, ledger}, processes);
  proto::LookupRequest req;
  req.image = "Quota";
  req.addrs = Queries({0x1000, 0x1000 + 199999 * 16});
  proto::LookupResponse out;
  const security::PeerAccess access = AccessOf(::getuid());
  index::IndexView view;
  LookupBatch batch(req, view, access, &out);
  ASSERT_TRUE(lookup.LookupImage(batch, ::getuid()));
  EXPECT_TRUE(out.results[0].found);
  EXPECT_EQ(out.results[0].name, "Quota::M0()");
  EXPECT_FALSE(out.results[1].found);  // past the 2 MiB read
  std::string which;
  EXPECT_EQ(ledger->ByteAllowance(::getuid(), 0, &which), 0u);
  std::remove(path.c_str());
  ::rmdir(dir);
}

}  // namespace
}  // namespace jitsym::query
