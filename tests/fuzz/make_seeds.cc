// Writes the fuzzers' seed corpora: make_seeds DIR writes DIR/<target>/seed-N, small valid (and
// slightly broken) inputs built with the unit tests' builders, and in every format inputs holding
// one long name between short ones: around each name-arena block size (4, 8, 16 KiB), the 16 KiB
// name cut, 64 KiB (the perf map line limit) and 1 MiB (the r2rmap line limit).
#include <sys/stat.h>

#include <cstdio>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "client/profile_proto.h"
#include "daemon/parse_worker/channel.h"
#include "daemon/parse_worker/messages.h"
#include "proto/protocol.h"
#include "tests/unit/testing/jitdump_builder.h"
#include "tests/unit/testing/mlpd_builder.h"
#include "tests/unit/testing/pprof_profile.h"

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

// Name lengths of the long-name seeds.
constexpr size_t kLongNames[] = {4094, 4095, 4096, 4097, 8192, 8193, 16384, 16385, 65536, 1u << 20};

// A name of `len` bytes that looks like a real one: a C# signature repeated (not one byte
// repeated, so that mutations of it still differ from their neighbours).
std::string LongName(size_t len, char tag) {
  static const std::string kPart = "Ns.Outer`1+Inner[System.__Canon]::Method(int32, string)";
  std::string name(1, tag);
  while (name.size() < len) name += kPart;
  name.resize(len);
  return name;
}

Bytes JitdumpLongNameSeed(size_t len) {
  jitsym::testing::JitdumpBuilder b(false);
  b.Load(100, 0x1000, 16, "before", 1).Load(110, 0x2000, 32, LongName(len, 'J'), 2);
  b.Debug(120, 0x3000, {{0x3000, 7, 0, LongName(len, 'F')}, {0x3008, 8, 0, "b.js"}});
  b.Load(130, 0x3000, 16, "after", 3).Move(140, 0x2000, 0x4000, 32, 2);
  return b.bytes();
}

std::string PerfmapLongNameSeed(size_t len) {
  return "1000 10 before\n2000 20 " + LongName(len, 'P') + "\n3000 10 after\n";
}

std::string R2rmapLongNameSeed(size_t len) {
  return "FFFFFFFF 00 0123456789ABCDEF0123456789abcdef\nFFFFFFFE 00 1\nFFFFFFFD 00 2\n"
         "FFFFFFFC 00 3\nFFFFFFFB 00 1\n00001000 10 before\n00002000 20 " +
         LongName(len, 'R') + "\n00003000 10 after\n";
}

Bytes MlpdLongNameSeed(size_t len) {
  using jitsym::testing::MlpdBuilder;
  jitsym::testing::MlpdBuffer buf(MlpdBuilder::kStartupNs + 10, 0x7000000);
  buf.Jit(MlpdBuilder::kStartupNs + 20, 0x5000010, 0x7000100, 0x40, "before");
  buf.Jit(MlpdBuilder::kStartupNs + 21, 0x5000020, 0x7000200, 0x40, LongName(len, 'M'));
  buf.Usym(MlpdBuilder::kStartupNs + 30, 0x7001000, 0x10, LongName(len, 'U'));
  buf.Helper(MlpdBuilder::kStartupNs + 40, 5, 0x7002000, 0x20, LongName(len, 'T'));
  buf.Jit(MlpdBuilder::kStartupNs + 50, 0x5000030, 0x7000300, 0x40, "after");
  MlpdBuilder b;
  b.Add(buf);
  return b.bytes();
}

// A name_table_fuzz program interning the sizes around block boundaries between short names:
// op 0x80 | k picks length kLengths[arg] + k; op 0 a name of `arg` bytes.
Bytes NameTableSeed(int first, int step) {
  Bytes out;
  for (int i = first; i < 24; i += step) {
    out.insert(out.end(), {0x00, 5, 0, 's', 'a', 'b', 'c', 'd', 'e', 'f', 'g', 'h'});
    out.insert(out.end(), {static_cast<uint8_t>(0x80 | (i % 3)), static_cast<uint8_t>(i), 0,
                           static_cast<uint8_t>('A' + i), 'n', 'a', 'm', 'e', '0', '1', '2',
                           static_cast<uint8_t>(i)});
  }
  return out;
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

// pprof profile.proto: a profile like annotate --pprof writes, raw and gzip'd, one over 4 KiB
// (libFuzzer's default input size), one cut short, and ones in the forms only other encoders
// write (unpacked repeated fields, unknown fields, fields out of number order).
std::vector<Bytes> ProfileProtoSeeds() {
  namespace pprof = jitsym::client::pprof;
  const std::string small = pprof::Encode(jitsym::testing::NodeProfile());
  const std::string large = pprof::Encode(jitsym::testing::NodeProfile(300));
  using jitsym::testing::RawProto;
  const std::string unpacked =
      RawProto()
          .Len(1, RawProto().Varint(1, 1).Varint(2, 2).bytes())
          .Len(2, RawProto()
                      .Varint(1, 1)
                      .Varint(1, 2)
                      .Varint(2, 5)
                      .Len(3, RawProto().Varint(1, 3).Varint(3, 42).Fixed32(9, 1).bytes())
                      .bytes())
          .Len(3, RawProto().Varint(1, 1).Varint(2, 0x1000).Varint(3, 0x2000).Varint(5, 4).bytes())
          .Len(4,
               RawProto().Varint(1, 1).Varint(2, 1).Len(4, RawProto().Varint(1, 1).bytes()).bytes())
          .Len(4, RawProto().Varint(1, 2).Varint(3, 0x1010).Fixed64(99, 7).bytes())
          .Len(5, RawProto().Varint(1, 1).Varint(2, 3).Varint(5, 10).bytes())
          .Len(6, "")
          .Len(6, "samples")
          .Len(6, "count")
          .Len(6, "pid")
          .Len(6, "/bin/x")
          .Varint(13, 1)
          .Len(77, "unknown")
          .bytes();
  // Go's runtime/pprof starts with time_nanos or period_type.
  const std::string go_order = RawProto().Varint(9, 1).Len(11, "\x08\x01").bytes() + small;
  return {FromString(small),
          FromString(pprof::Gzip(small)),
          FromString(large),
          FromString(pprof::Gzip(large)),
          FromString(small.substr(0, small.size() / 2)),
          FromString(unpacked),
          FromString(go_order)};
}

// binary_answer_fuzz. First byte 0: the frames of real binary answers (strings referred to from
// later frames, tables forgotten, one name over 64 KiB, misses and per-address errors), as the
// encoder writes them. First byte 1: the bytes the fuzzer makes results of (its RoundTrip).
// parse_worker_fuzz: each message of the parse worker protocol, with its decoder's byte first;
// a reply's strings as large as names get (a 1 MiB one), and frames as a socket carries them.
std::vector<Bytes> ParseWorkerSeeds() {
  namespace pw = jitsym::parse_worker;
  pw::SymbolizeReply reply;
  reply.build_id = "93ac61ec5a8eb1396f9fbd350e3169a558528a40";
  reply.strings_token = (uint64_t{4242} << 32) | 1;
  reply.strings_base = 1;
  reply.strings = {"malloc", "./malloc/malloc.c", std::string(1 << 20, 'L'), ".cold"};
  pw::AddressAnswer found;
  found.state = pw::AddressAnswer::kFound;
  found.vaddr = 0x98930;
  found.name = 1;
  found.clone = 4;
  found.start = 0x98930;
  found.size = 0x200;
  found.first_frame = 0;
  found.frame_count = 2;
  reply.frames = {{1, 2, 3281, 1}, {3, 2, 10, 0}};
  pw::AddressAnswer miss;
  miss.state = pw::AddressAnswer::kMiss;
  miss.vaddr = 0x10;
  reply.answers = {found, miss, pw::AddressAnswer{}};
  pw::SymbolizeReply failed;
  failed.error = "/home/bob/app: not an ELF file";
  pw::SymbolizeRequest request;
  request.path = "/usr/lib/x86_64-linux-gnu/libc.so.6";
  request.file_offsets = true;
  request.addrs = {0x98930, 0x1000, ~uint64_t{0}};
  request.strings_token = reply.strings_token;
  request.strings_known = 3;
  pw::FileOpReply file;
  file.resolved = "/usr/lib/debug/.build-id/93/ac61ec5a8eb1396f9fbd350e3169a558528a40.debug";
  const auto with = [](uint8_t kind, const std::string& bytes) {
    return WithSeedByte(kind, FromString(bytes));
  };
  // Frames back to back, as the daemon reads them: a header (length, type) and a payload.
  std::string frames;
  for (const std::string& payload : {pw::Encode(failed), pw::Encode(pw::FileOpRequest{})}) {
    const uint32_t header[2] = {static_cast<uint32_t>(payload.size()), pw::kSymbolizeReply};
    frames.append(reinterpret_cast<const char*>(header), sizeof(header));
    frames += payload;
  }
  return {with(0, pw::Encode(reply)),
          with(0, pw::Encode(failed)),
          with(1, pw::Encode(pw::FileOpRequest{pw::FileOpKind::kOpen, true, "/etc/shadow"})),
          with(1, pw::Encode(pw::FileOpRequest{pw::FileOpKind::kFetch, true, reply.build_id})),
          with(2, pw::Encode(request)),
          with(3, pw::Encode(file)),
          with(4, frames)};
}

std::vector<Bytes> BinaryAnswerSeeds() {
  using jitsym::proto::LookupResult;
  const std::vector<std::string> text = {
      "main",
      "/src/app.cc",
      "std::vector<int, std::allocator<int> >::push_back(int const&)",
      "bad\xff\xfe utf-8 \x01 and\ttab \xed\xa0\x80",
      "/usr/include/c++/12/bits/stl_vector.h",
      std::string(70000, 'n'),
      "0123456789abcdef",
      ".part.0",
      "jitdump",
      ""};
  std::vector<Bytes> seeds;
  for (const size_t target : {size_t{64}, size_t{4096}, jitsym::proto::kBinaryFrameTarget}) {
    std::vector<LookupResult> results;
    for (size_t i = 0; i < 300; ++i) {
      LookupResult& r = results.emplace_back();
      r.addr = 0x400000 + 17 * i;
      if (i % 7 == 0) {
        r.reason = jitsym::proto::Reason::kNoSymbol;
        r.detail = "no symbol covers this address";
        continue;
      }
      if (i % 11 == 0) {
        r.error = "invalid address";
        r.raw = "zz" + std::to_string(i);
        continue;
      }
      r.found = true;
      r.name = i == 151 && target == 4096 ? text[5] : text[i % 4];  // a frame over 64 KiB
      r.offset = i;
      r.start = r.addr - i;
      r.size = 1000;
      r.origin = i % 3 ? jitsym::proto::Origin::kElf : jitsym::proto::Origin::kJitdump;
      r.file = text[1 + 3 * (i % 2)];
      r.line = static_cast<uint32_t>(i);
      r.column = 3;
      if (i % 3 == 0) {
        r.source = text[8];
        r.loaded_at = 1000000 + i;
        r.incarnation = 1;
      } else {
        r.image = text[1];
        r.build_id = text[6];
        r.frames.push_back({text[2], text[4], 100, 7});
        r.frames.push_back({text[i % 4], text[1], static_cast<uint32_t>(i), 0});
        if (i % 5 == 0) r.clone = text[7];
      }
    }
    std::string frames;
    jitsym::proto::BinaryAnswerEncoder encoder;
    std::span<const LookupResult> rest(results);
    for (size_t count = 1; !rest.empty(); ++count) {
      rest = rest.subspan(encoder.EncodeFrame(rest, jitsym::proto::kAllFields, target, &frames));
      if (count % 4 == 0) encoder.ForgetStrings();
    }
    jitsym::proto::EncodeBinaryLookupEnd(&frames);
    seeds.push_back(WithSeedByte(0, FromString(frames)));
  }
  // RoundTrip's bytes: frame size, form and fields, then results (kind, addr, texts, numbers).
  struct Writer {
    Bytes b;
    void Byte(uint8_t v) { b.push_back(v); }
    void Number(uint64_t v) {
      Byte(8);
      for (int i = 7; i >= 0; --i) Byte(static_cast<uint8_t>(v >> (8 * i)));
    }
    void Text(const std::string& s) {  // up to 255 bytes, or a multiple of 64 up to 16320
      const bool scaled = s.size() > 255;
      Byte(static_cast<uint8_t>(scaled ? s.size() / 64 : s.size()));
      Byte(scaled ? 0 : 1);
      b.insert(b.end(), s.begin(), s.end());
    }
  };
  for (const uint8_t form : {uint8_t{1}, uint8_t{4}, uint8_t{7}}) {
    Writer w;
    w.Byte(1);
    w.Byte(static_cast<uint8_t>(form * 3));  // frames of 8, 4096 or 2 MiB bytes
    w.Byte(form);                            // odd: every field; even: the two bytes that follow
    if (form % 2 == 0) {
      w.Byte(0x0f);
      w.Byte(0x13);
    }
    for (int i = 0; i < 40; ++i) {
      switch (i % 4) {
        case 0:  // a miss with a detail
          w.Byte(0x10);
          w.Number(0x1000 + i);
          w.Byte(static_cast<uint8_t>(i));
          w.Text("no code here \x01\xff");
          break;
        case 1:  // an input error, the input echoed
          w.Byte(0x31);
          w.Number(0);
          w.Text("invalid address");
          w.Text("0xzz\xc3");
          break;
        default: {  // found: every member, frames, a no_debug_info reason
          w.Byte(0xfe);
          w.Number(0x7f0000000000 + i);
          w.Text(form == 7 && i == 10 ? std::string(16320, 'q') : text[i % 4]);
          w.Number(static_cast<uint64_t>(i));
          w.Number(0x7f0000000000);
          w.Number(64);
          w.Byte(static_cast<uint8_t>(i));
          w.Text(text[8]);
          w.Text(text[1]);
          w.Number(5);
          w.Number(2);
          w.Number(40);
          w.Number(9);
          w.Text(text[4]);
          w.Text(text[6]);
          w.Byte(2);
          for (int f = 0; f < 2; ++f) {
            w.Text(text[2 + f]);
            w.Text(text[1]);
            w.Number(10);
            w.Number(0);
          }
          w.Byte(static_cast<uint8_t>(i % 16));
          if (i % 2) w.Text(text[7]);
          if (i & 2) w.Text("an error");
          if (i & 4) w.Byte(11);
          if (i & 8) w.Text("no /src/app.dwo nor /src/app.dwp");
        }
      }
    }
    seeds.push_back(w.b);
  }
  return seeds;
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
  std::vector<Bytes> jitdump = {WithSeedByte(0, le), WithSeedByte(3, be), WithSeedByte(1, cut)};
  std::vector<Bytes> perfmap = {
      WithSeedByte(0, FromString("7f0000001000 20 LazyCompile:~f a.js:1\n"
                                 "7f0000002000 10 g\n0x7f0000003000 0x8 h i j\r\n")),
      WithSeedByte(5, FromString("zz 10 bad\n1000 zz bad\n1000 10\n\n"))};
  std::vector<Bytes> r2rmap = {
      WithSeedByte(0, FromString("FFFFFFFF 00 0123456789ABCDEF0123456789abcdef\n"
                                 "FFFFFFFE 00 1\nFFFFFFFD 00 2\nFFFFFFFC 00 3\n"
                                 "FFFFFFFB 00 1\n00001000 20 [S.P.C]System.String::Concat()\n"
                                 "00002000 10 [S.P.C]System.Object::.ctor()\n")),
      WithSeedByte(0x80, FromString("00001000 20 headerless\n00002000 08 other\n"))};
  std::vector<Bytes> perfinfo = {
      WithSeedByte(1, FromString("RuntimeVersion;8.0.0;\n"
                                 "ImageLoad;/usr/share/dotnet/System.Runtime.dll;"
                                 "{11111111-2222-3333-4444-555555555555};0x7f1234560000;\n"
                                 "ImageLoad;/app/jit-only.dll;{m};(nil);\r\n"
                                 "ImageLoad;/app/NoPrefix.dll;{y};7F0000001000;\r\n"
                                 "ImageLoad;short\nImageLoad;/app/Cut.dll;{z};0x7f00"))};
  const Bytes mlpd = MlpdSeed();
  std::vector<Bytes> mlpds = {WithSeedByte(0, mlpd),
                              WithSeedByte(2, Bytes(mlpd.begin(), mlpd.begin() + 40))};
  // The gzip target compresses even-seeded inputs itself; an odd seed byte feeds them raw.
  const Bytes gz = jitsym::testing::Gzip(mlpd);
  std::vector<Bytes> mlpd_gzip = {WithSeedByte(0, mlpd),
                                  WithSeedByte(1, Bytes(gz.begin() + 4, gz.end()))};
  std::vector<Bytes> requests = {
      FromString(R"({"v":1,"id":1,"op":"lookup","pid":42,"addrs":["0x1000",4096,)"
                 R"({"addr":"0x2000","time":"12.5"},"bogus"],"time":123,"fields":["name"]})"),
      FromString(R"({"op":"lookup","image":"System.Private.CoreLib","addrs":["0x10"]})"),
      FromString(R"({"op":"processes","id":[1,{"a":null}]})"),
      FromString(R"({"op":"stats"})"),
      FromString(R"({"v":2,"op":"ping"})"),
      FromString(R"({"op":"version","id":"x\u00e9"})"),
      FromString(R"({"op":"explain","pid":42,"addr":"0x1000","time":"12.5","id":2})"),
      FromString(R"({"op":"explain","image":"/usr/lib/libc.so.6","addr":4096})")};
  std::vector<Bytes> responses;
  std::vector<Bytes> perf_script;
  std::vector<Bytes> profiles = {CpuProfileSeed()};
  // Long names, each length in every format. Seed bytes vary so that each is fed in different
  // chunks (odd for mlpd_gzip: the long-name file raw, even: compressed by the target).
  for (size_t len : kLongNames) {
    const auto k = static_cast<uint8_t>(len * 7 + (len >> 12));
    jitdump.push_back(WithSeedByte(k, JitdumpLongNameSeed(len)));
    perfmap.push_back(WithSeedByte(k, FromString(PerfmapLongNameSeed(len))));
    perfinfo.push_back(WithSeedByte(k, FromString("ImageLoad;/app/" + LongName(len, 'P') +
                                                  ".dll;{m};0x7f0000010000;\n"
                                                  "ImageLoad;/app/After.dll;{m};0x20000;\n")));
    r2rmap.push_back(WithSeedByte(k & 0x7f, FromString(R2rmapLongNameSeed(len))));
    r2rmap.push_back(WithSeedByte(
        k | 0x80, FromString("00001000 10 x\n00002000 20 " + LongName(len, 'L') + "\n")));
    const Bytes m = MlpdLongNameSeed(len);
    mlpds.push_back(WithSeedByte(k, m));
    mlpd_gzip.push_back(WithSeedByte(k & 0xfe, m));
    const Bytes mz = jitsym::testing::Gzip(m);
    mlpd_gzip.push_back(WithSeedByte(k | 1, Bytes(mz.begin() + 4, mz.end())));
    const std::string name = LongName(len, 'Q');
    requests.push_back(FromString(R"({"op":"lookup","image":")" + name +
                                  R"(","addrs":["0x10"],"id":")" + name + R"("})"));
    responses.push_back(FromString(R"({"v":1,"id":1,"ok":true,"results":[{"addr":"0x1000",)"
                                   R"("found":true,"name":")" +
                                   name +
                                   R"(","offset":"0x0","start":"0x1000","size":16,)"
                                   R"("origin":"jitdump","source":"/tmp/jit-1.dump"}]})"));
    perf_script.push_back(
        FromString("node 4242/4243 219.895069:     250000 cpu-clock:pppH: \n"
                   "\t    7f3a1c0042c0 " +
                   name + "+0x10 (/tmp/perf-4242.map)\n\n"));
    Bytes profile = CpuProfileSeed();
    const std::string map = "00400000-00402000 r-xp 00000000 08:01 42 /" + name + "\n";
    profile.insert(profile.end(), map.begin(), map.end());
    profiles.push_back(profile);
  }
  Write(dir, "jitdump_fuzz", jitdump);
  Write(dir, "perfmap_fuzz", perfmap);
  Write(dir, "perfinfo_fuzz", perfinfo);
  Write(dir, "r2rmap_fuzz", r2rmap);
  Write(dir, "mlpd_fuzz", mlpds);
  Write(dir, "mlpd_gzip_fuzz", mlpd_gzip);
  Write(dir, "request_fuzz", requests);
  Write(dir, "name_table_fuzz", {NameTableSeed(0, 1), NameTableSeed(1, 3), NameTableSeed(5, 7)});
  responses.insert(
      responses.begin(),
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
       FromString(
           R"({"v":1,"ok":true,"explain":{"pid":42,"addr":"0x1010","time":150,)"
           R"("incarnations":[{"incarnation":5,"alive":false,"uid":1000,"start_time":50,)"
           R"("exit_time":1000,"sources":[{"origin":"jitdump","path":"/tmp/jit-42.dump",)"
           R"("owner":1000,"trust":"process owner","state":"error","ranges":3,)"
           R"("bytes_read":400,"records":3,"error":"offset 8: bad"}]}],)"
           R"("definitions":[{"incarnation":5,"origin":"jitdump","source":"/tmp/jit-42.dump",)"
           R"("name":"f1","start":"0x1000","size":64,"from":100,"to":200,"picked":true},)"
           R"({"origin":"jitdump","source":"s","removed":true,"start":"0x1000","size":64,)"
           R"("from":200}],"definitions_omitted":2,"ignored":[{"path":"/tmp/perf-42.map",)"
           R"("reason":"unattached: x"}],"answer":{"addr":"0x1010","found":true,"name":"f1",)"
           R"("offset":16,"start":"0x1000","size":64,"origin":"jitdump"},"rule":"r"}})"),
       FromString(R"({"v":1,"id":"a","ok":false,"error":{"code":"busy","message":"m"}})")});
  Write(dir, "response_fuzz", responses);
  perf_script.insert(
      perf_script.begin(),
      {FromString("node 4242/4243 219.895069:     250000 cpu-clock:pppH: \n"
                  "\t    7f3a1c0042c0 [unknown] (/tmp/perf-4242.map)\n"
                  "\t    55d0a1b2c3d4 uv_run+0x1a4 (/usr/bin/node)\n\n"),
       FromString("node  4242 [001] 219.895069: 250000 cpu-clock:pppH:  7f3a1c0042c0 "
                  "LazyCompile:*f (/tmp/jit-4242.dump)\n"),
       FromString("4243 7f3a1c0042c0 [unknown] (//anon)\n")});
  Write(dir, "perf_script_fuzz", perf_script);
  Write(dir, "gperftools_profile_fuzz", profiles);
  Write(dir, "profile_proto_fuzz", ProfileProtoSeeds());
  // Option byte, then folded stacks: kinds by annotation, offsets, hostile names.
  Write(dir, "demangle_fuzz",
        {FromString("_ZN3foo3barEv"), FromString("_ZNSt6vectorIiSaIiEE9push_backERKi"),
         FromString("_Z1fIiEvT_.constprop.0.isra.0"), FromString("_ZGTt1fv"),
         FromString("_Z1f" + std::string(3000, 'P') + "i"), FromString("_Z1fI1AIS0_S0_EEvv"),
         FromString("_RNvC7mycrate4main"), FromString("_D3foo3barFZv")});
  Write(dir, "binary_answer_fuzz", BinaryAnswerSeeds());
  Write(dir, "parse_worker_fuzz", ParseWorkerSeeds());
  Write(dir, "flame_fuzz",
        {FromString("\x10"
                    "node;_start;main;run+0x1c 30\nnode;_start;main;gc 20\n"),
         FromString("\x03"
                    "node;do_syscall_64_[k];x_[j] 5\r\njava;LazyCompile:*f /a.js:1 7 \n"),
         FromString("\x05"
                    "a;</script>;]]>;<![CDATA[;\xff\xfe;a&&b 3\n\n#x\na;;b 1\n"),
         FromString("\x0c"
                    "a;b;c;d;e;f;g 1\na;b;c;d;e;f;h 1\na;b;x 99999999999999999999\n")});
  return 0;
}
