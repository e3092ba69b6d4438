// Writes the fuzzers' seed corpora: make_seeds DIR writes DIR/<target>/seed-N, small valid (and
// slightly broken) inputs built with the unit tests' builders.
#include <sys/stat.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "tests/unit/testing/jitdump_builder.h"
#include "tests/unit/testing/mlpd_builder.h"

namespace {

using Bytes = std::vector<uint8_t>;

Bytes FromString(const std::string& s) { return Bytes(s.begin(), s.end()); }

// Seeds start with the chunking byte the fuzzers read first.
Bytes WithSeedByte(uint8_t b, const Bytes& body) {
  Bytes out{b};
  out.insert(out.end(), body.begin(), body.end());
  return out;
}

void Write(const std::string& dir, const std::string& target, const std::vector<Bytes>& seeds) {
  const std::string d = dir + "/" + target;
  ::mkdir(d.c_str(), 0755);
  for (size_t i = 0; i < seeds.size(); ++i) {
    const std::string path = d + "/seed-" + std::to_string(i);
    FILE* f = std::fopen(path.c_str(), "wb");
    if (!f) {
      std::perror(path.c_str());
      std::exit(1);
    }
    std::fwrite(seeds[i].data(), 1, seeds[i].size(), f);
    std::fclose(f);
  }
}

Bytes JitdumpSeed(bool big_endian) {
  jitsym::testing::JitdumpBuilder b(big_endian);
  b.Load(100, 0x1000, 16, "f", 1).Load(200, 0x2000, 8, "g", 2).Move(300, 0x1000, 0x3000, 16, 1);
  b.Debug(400, 0x2000, {{0x2000, 10, 0, "a.js"}, {0x2004, 11, 0, "a.js"}});
  b.Close(500);
  return b.bytes();
}

Bytes MlpdSeed() {
  jitsym::testing::MlpdBuffer buf(jitsym::testing::MlpdBuilder::kStartupNs + 10, 0x7000000);
  buf.Jit(jitsym::testing::MlpdBuilder::kStartupNs + 20, 0x5000010, 0x7000100, 0x40, "A:B ()");
  buf.Usym(jitsym::testing::MlpdBuilder::kStartupNs + 30, 0x7001000, 0x10, "native");
  buf.Helper(jitsym::testing::MlpdBuilder::kStartupNs + 40, 5, 0x7002000, 0x20, "tramp");
  jitsym::testing::MlpdBuilder b;
  b.Add(buf);
  return b.bytes();
}

}  // namespace

// A legacy gperftools CPU profile with 64-bit slots in host (little-endian) order: header
// (0, 3, 0, period, 0), two samples, the trailer (0, 1, 0), then the mapped-objects text.
Bytes CpuProfileSeed() {
  const std::vector<uint64_t> slots = {0,
                                       3,
                                       0,
                                       10000,
                                       0,  // header
                                       2,
                                       3,
                                       0x401000,
                                       0x401100,
                                       0x7f0000001000,  // sample
                                       1,
                                       1,
                                       0x7f0000002000,  // sample
                                       0,
                                       1,
                                       0};  // trailer
  Bytes out(slots.size() * 8);
  std::memcpy(out.data(), slots.data(), out.size());
  const std::string maps =
      "00400000-00402000 r-xp 00000000 08:01 42 /usr/bin/node\n"
      "7f0000000000-7f0000010000 r-xp 00000000 00:00 0 \n";
  out.insert(out.end(), maps.begin(), maps.end());
  return out;
}

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: make_seeds DIR\n");
    return 2;
  }
  const std::string dir = argv[1];
  ::mkdir(dir.c_str(), 0755);
  const Bytes le = JitdumpSeed(false), be = JitdumpSeed(true);
  Bytes cut = le;
  cut.resize(cut.size() - 7);
  Write(dir, "jitdump_fuzz", {WithSeedByte(0, le), WithSeedByte(3, be), WithSeedByte(1, cut)});
  Write(dir, "perfmap_fuzz",
        {WithSeedByte(0, FromString("7f0000001000 20 LazyCompile:~f a.js:1\n"
                                    "7f0000002000 10 g\n0x7f0000003000 0x8 h i j\r\n")),
         WithSeedByte(5, FromString("zz 10 bad\n1000 zz bad\n1000 10\n\n"))});
  Write(dir, "r2rmap_fuzz",
        {WithSeedByte(0, FromString("FFFFFFFF 00 0123456789ABCDEF0123456789abcdef\n"
                                    "FFFFFFFE 00 1\nFFFFFFFD 00 2\nFFFFFFFC 00 3\n"
                                    "FFFFFFFB 00 1\n00001000 20 [S.P.C]System.String::Concat()\n"
                                    "00002000 10 [S.P.C]System.Object::.ctor()\n")),
         WithSeedByte(0x80, FromString("00001000 20 headerless\n00002000 08 other\n"))});
  const Bytes mlpd = MlpdSeed();
  Write(dir, "mlpd_fuzz",
        {WithSeedByte(0, mlpd), WithSeedByte(2, Bytes(mlpd.begin(), mlpd.begin() + 40))});
  // The gzip target compresses even-seeded inputs itself; an odd seed byte feeds them raw.
  const Bytes gz = jitsym::testing::Gzip(mlpd);
  Write(dir, "mlpd_gzip_fuzz",
        {WithSeedByte(0, mlpd), WithSeedByte(1, Bytes(gz.begin() + 4, gz.end()))});
  Write(dir, "request_fuzz",
        {FromString(R"({"v":1,"id":1,"op":"lookup","pid":42,"addrs":["0x1000",4096,)"
                    R"({"addr":"0x2000","time":"12.5"},"bogus"],"time":123,"fields":["name"]})"),
         FromString(R"({"op":"lookup","image":"System.Private.CoreLib","addrs":["0x10"]})"),
         FromString(R"({"op":"processes","id":[1,{"a":null}]})"), FromString(R"({"op":"stats"})"),
         FromString(R"({"v":2,"op":"ping"})"), FromString(R"({"op":"version","id":"x\u00e9"})")});
  Write(dir, "response_fuzz",
        {FromString(R"({"v":1,"id":1,"ok":true,"results":[{"addr":"0x1000","found":true,)"
                    R"("name":"f","offset":"0x0","start":"0x1000","size":16,"origin":"jitdump",)"
                    R"("source":"/tmp/jit-1.dump","loaded_at":5,"incarnation":1},)"
                    R"({"addr":"bogus","found":false,"error":"invalid address"}]})"),
         FromString(R"({"v":1,"ok":true,"processes":[{"pid":1,"incarnation":2,"alive":true,)"
                    R"("ranges":3,"sources":[{"origin":"perfmap","path":"/tmp/perf-1.map",)"
                    R"("state":"following","ranges":3,"bytes_read":9}]}]})"),
         FromString(R"({"v":1,"ok":true,"strings":["f","elf","/bin/x","a\u0041.c"],)"
                    R"("results":[{"addr":"0x1000","found":true,"name":0,"offset":0,)"
                    R"("origin":1,"image":2,"file":3,"line":4,"frames":[[0,3,4,5],[0,3,9,0]]},)"
                    R"({"addr":"0x2000","found":false}]})"),
         FromString(R"({"v":1,"ok":true,"stats":{"processes":1,"denied":2}})"),
         FromString(R"({"v":1,"id":"a","ok":false,"error":{"code":"busy","message":"m"}})")});
  Write(dir, "perf_script_fuzz",
        {FromString("node 4242/4243 219.895069:     250000 cpu-clock:pppH: \n"
                    "\t    7f3a1c0042c0 [unknown] (/tmp/perf-4242.map)\n"
                    "\t    55d0a1b2c3d4 uv_run+0x1a4 (/usr/bin/node)\n\n"),
         FromString("node  4242 [001] 219.895069: 250000 cpu-clock:pppH:  7f3a1c0042c0 "
                    "LazyCompile:*f (/tmp/jit-4242.dump)\n"),
         FromString("4243 7f3a1c0042c0 [unknown] (//anon)\n")});
  Write(dir, "gperftools_profile_fuzz", {CpuProfileSeed()});
  return 0;
}
