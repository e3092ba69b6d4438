// The perf script line parser, on lines copied from perf 6.1 output (default fields, -F
// selections, with and without callchains) and on hostile input.
#include "client/perf_script_parser.h"

#include <gtest/gtest.h>

#include <random>
#include <string>

namespace jitsym::client {
namespace {

PerfScriptLine Parse(std::string_view line, PerfScriptSample* s, PerfScriptFrame* f) {
  return ParsePerfScriptLine(line, s, f);
}

TEST(PerfScriptParser, DefaultSampleLineWithCallchain) {
  PerfScriptSample s;
  PerfScriptFrame f;
  ASSERT_EQ(Parse("node 24170  7396.716453:     250000 cpu-clock: ", &s, &f),
            PerfScriptLine::kSample);
  EXPECT_EQ(s.comm, "node");
  EXPECT_EQ(s.pid, 24170);
  EXPECT_EQ(s.tid, -1);
  ASSERT_TRUE(s.time_ns);
  EXPECT_EQ(*s.time_ns, 7396716453999ull);  // microseconds, rounded up to the end of the unit
  EXPECT_FALSE(s.frame);
}

TEST(PerfScriptParser, SampleLineWithIpSymDso) {
  PerfScriptSample s;
  PerfScriptFrame f;
  const std::string line =
      "            node 24170  7397.268282:     250000 cpu-clock:      7fdb040246ba [unknown] "
      "(/tmp/perf-24170.map)";
  ASSERT_EQ(Parse(line, &s, &f), PerfScriptLine::kSample);
  EXPECT_EQ(s.comm, "node");
  EXPECT_EQ(s.pid, 24170);
  ASSERT_TRUE(s.frame);
  EXPECT_EQ(s.frame->ip, 0x7fdb040246baull);
  EXPECT_EQ(s.frame->sym, "[unknown]");
  EXPECT_TRUE(s.frame->has_dso);
  EXPECT_EQ(s.frame->dso, "/tmp/perf-24170.map");
  EXPECT_EQ(line.substr(s.frame->sym_begin, s.frame->tail_begin - s.frame->sym_begin),
            "[unknown] (/tmp/perf-24170.map)");
  EXPECT_TRUE(NeedsJitName(*s.frame));
}

TEST(PerfScriptParser, CommWithSpacesAndDigitsPidTidCpuNs) {
  PerfScriptSample s;
  PerfScriptFrame f;
  ASSERT_EQ(Parse("  V8 Worker 2 1234/1240 [001] 12.000000001: 1 cpu-clock:u: ", &s, &f),
            PerfScriptLine::kSample);
  EXPECT_EQ(s.comm, "V8 Worker 2");
  EXPECT_EQ(s.pid, 1234);
  EXPECT_EQ(s.tid, 1240);
  EXPECT_EQ(*s.time_ns, 12000000001ull);
}

TEST(PerfScriptParser, NoTimeField) {
  PerfScriptSample s;
  PerfScriptFrame f;
  ASSERT_EQ(Parse("24170      7fdb2c7c28a0 (/usr/lib/ld.so)", &s, &f), PerfScriptLine::kSample);
  EXPECT_EQ(s.pid, 24170);
  EXPECT_FALSE(s.time_ns);
  ASSERT_TRUE(s.frame);
  EXPECT_EQ(s.frame->ip, 0x7fdb2c7c28a0ull);
  EXPECT_TRUE(s.frame->sym.empty());
  EXPECT_EQ(s.frame->dso, "/usr/lib/ld.so");
  EXPECT_FALSE(NeedsJitName(*s.frame));  // a file perf knows: native
  ASSERT_EQ(Parse("node 24170/24171 ", &s, &f), PerfScriptLine::kSample);
  EXPECT_EQ(s.pid, 24170);
  EXPECT_EQ(s.tid, 24171);
}

TEST(PerfScriptParser, BareIp) {
  PerfScriptSample s;
  PerfScriptFrame f;
  ASSERT_EQ(Parse("24170  ffffffff821c7d22", &s, &f), PerfScriptLine::kSample);
  ASSERT_TRUE(s.frame);
  EXPECT_EQ(s.frame->ip, 0xffffffff821c7d22ull);
  EXPECT_TRUE(NeedsJitName(*s.frame));
}

TEST(PerfScriptParser, FrameLines) {
  PerfScriptSample s;
  PerfScriptFrame f;
  ASSERT_EQ(Parse("\t    7fdb040034dc [unknown] (/tmp/perf-24170.map)", &s, &f),
            PerfScriptLine::kFrame);
  EXPECT_EQ(f.ip, 0x7fdb040034dcull);
  EXPECT_EQ(f.sym, "[unknown]");
  EXPECT_EQ(f.dso, "/tmp/perf-24170.map");
  EXPECT_TRUE(NeedsJitName(f));

  ASSERT_EQ(Parse("\t         17d3929 ossl_lib_ctx_get_data+0x59 (/usr/bin/node)", &s, &f),
            PerfScriptLine::kFrame);
  EXPECT_EQ(f.sym, "ossl_lib_ctx_get_data+0x59");
  EXPECT_EQ(StripSymbolOffset(f.sym), "ossl_lib_ctx_get_data");
  EXPECT_FALSE(NeedsJitName(f));

  // Names with spaces and parentheses; the dso is the last parenthesized group.
  ASSERT_EQ(Parse("\t 55d0 foo(int, char) const (/usr/lib/libx.so)", &s, &f),
            PerfScriptLine::kFrame);
  EXPECT_EQ(f.sym, "foo(int, char) const");
  EXPECT_EQ(f.dso, "/usr/lib/libx.so");
  ASSERT_EQ(Parse("\t 7f00 [unknown] (/memfd:doublemapper (deleted))", &s, &f),
            PerfScriptLine::kFrame);
  EXPECT_EQ(f.dso, "/memfd:doublemapper (deleted)");
  EXPECT_TRUE(NeedsJitName(f));
  ASSERT_EQ(Parse("\t 7f00 JS:*hot /tmp/w.js:1:14 (//anon)", &s, &f), PerfScriptLine::kFrame);
  EXPECT_EQ(f.sym, "JS:*hot /tmp/w.js:1:14");
  EXPECT_TRUE(NeedsJitName(f));

  // -F ip,sym: no dso; -F ip: nothing but the ip.
  ASSERT_EQ(Parse("\tffffffff821c7d22 mas_walk", &s, &f), PerfScriptLine::kFrame);
  EXPECT_FALSE(f.has_dso);
  EXPECT_EQ(f.sym, "mas_walk");
  EXPECT_FALSE(NeedsJitName(f));
  ASSERT_EQ(Parse("\t    7fdb040034dc", &s, &f), PerfScriptLine::kFrame);
  EXPECT_TRUE(f.sym.empty());
  EXPECT_EQ(f.sym_begin, f.tail_begin);
  EXPECT_TRUE(NeedsJitName(f));
}

TEST(PerfScriptParser, JitDsos) {
  for (const char* dso : {"[unknown]", "//anon", "[anon:v8]", "/memfd:doublemapper (deleted)",
                          "/tmp/perf-1.map", "perf-77.map", "/w/jit-123.dump", "[JIT] tid 9"}) {
    EXPECT_TRUE(IsJitDso(dso)) << dso;
  }
  for (const char* dso : {"/usr/bin/node", "[kernel.kallsyms]", "/tmp/perf-.map",
                          "/tmp/perf-12x.map", "jitted-1-2.so", "/tmp/jit-.dump"}) {
    EXPECT_FALSE(IsJitDso(dso)) << dso;
  }
}

// perf 6.1's default fields for a JVM recorded with -g: the header shows the thread id (9568,
// a thread of process 9566), the frames in anonymous executable memory name the process.
TEST(PerfScriptParser, DefaultFieldsShowTheThreadIdAndTheDsoTheProcess) {
  PerfScriptSample s;
  PerfScriptFrame f;
  ASSERT_EQ(Parse("java  9568 11117.767898:    1001001 cpu-clock: ", &s, &f),
            PerfScriptLine::kSample);
  EXPECT_EQ(s.comm, "java");
  EXPECT_EQ(s.pid, 9568);  // the lone number: here a thread id
  EXPECT_EQ(s.tid, -1);
  ASSERT_EQ(Parse("\t    7fef3c93872f VM_Version stub+0x3af (/tmp/perf-9566.map)", &s, &f),
            PerfScriptLine::kFrame);
  EXPECT_EQ(f.sym, "VM_Version stub+0x3af");
  EXPECT_EQ(f.dso, "/tmp/perf-9566.map");
  EXPECT_EQ(PidOfJitDso(f.dso), 9566);
  EXPECT_TRUE(NeedsJitName(f));
  ASSERT_EQ(Parse("\t    7fef3c938cc9 StubRoutines (1)+0xc9 (/tmp/perf-9566.map)", &s, &f),
            PerfScriptLine::kFrame);
  EXPECT_EQ(f.sym, "StubRoutines (1)+0xc9");
  EXPECT_EQ(PidOfJitDso(f.dso), 9566);
  ASSERT_EQ(Parse("\t          8282d2 JavaCalls::call_helper+0x302 "
                  "(/usr/lib/jvm/java-17-openjdk-amd64/lib/server/libjvm.so)",
                  &s, &f),
            PerfScriptLine::kFrame);
  EXPECT_FALSE(PidOfJitDso(f.dso));
  // A comm with a space.
  ASSERT_EQ(Parse("C2 CompilerThre  6668 11388.207797:    1001001 cpu-clock: ", &s, &f),
            PerfScriptLine::kSample);
  EXPECT_EQ(s.comm, "C2 CompilerThre");
  EXPECT_EQ(s.pid, 6668);
  // A worker thread (3513) of node 3476 (worker_threads, --perf-prof).
  ASSERT_EQ(Parse("node  3513 11359.025301:    1001001 cpu-clock: ", &s, &f),
            PerfScriptLine::kSample);
  EXPECT_EQ(s.pid, 3513);
  ASSERT_EQ(Parse("\t    7fade800382e [unknown] (/tmp/perf-3476.map)", &s, &f),
            PerfScriptLine::kFrame);
  EXPECT_EQ(f.sym, "[unknown]");
  EXPECT_EQ(PidOfJitDso(f.dso), 3476);
}

TEST(PerfScriptParser, OnlyPerfMapDsosNameTheProcess) {
  EXPECT_EQ(PidOfJitDso("perf-77.map"), 77);
  // The number a runtime wrote itself: its pid in its own namespace, maybe not the host's.
  for (const char* dso : {"/w/jit-123.dump", "/root/.debug/jit/x/jitted-123-4.so", "[unknown]",
                          "//anon", "/tmp/perf-.map", "/tmp/perf-0.map", "/tmp/perf-12x.map",
                          "/tmp/perf-99999999999.map", "/tmp/perfinfo-5.map"}) {
    EXPECT_FALSE(PidOfJitDso(dso)) << dso;
  }
}

TEST(PerfScriptParser, BlankAndOtherLines) {
  PerfScriptSample s;
  PerfScriptFrame f;
  EXPECT_EQ(Parse("", &s, &f), PerfScriptLine::kBlank);
  EXPECT_EQ(Parse("  \t ", &s, &f), PerfScriptLine::kBlank);
  EXPECT_EQ(Parse("# ========", &s, &f), PerfScriptLine::kOther);
  EXPECT_EQ(Parse("  w.js:12", &s, &f), PerfScriptLine::kOther);               // srcline
  EXPECT_EQ(Parse("\tnot-hex (x)", &s, &f), PerfScriptLine::kOther);           // not a frame
  EXPECT_EQ(Parse("\t 12345678901234567 x", &s, &f), PerfScriptLine::kOther);  // > 64 bits
}

TEST(PerfScriptParser, OffsetStripping) {
  EXPECT_EQ(StripSymbolOffset("f+0x1c"), "f");
  EXPECT_EQ(StripSymbolOffset("f+0x"), "f+0x");
  EXPECT_EQ(StripSymbolOffset("a+b"), "a+b");
  EXPECT_EQ(StripSymbolOffset("+0x1"), "+0x1");
  EXPECT_EQ(StripSymbolOffset("operator+0xg"), "operator+0xg");
}

// Random bytes and mutations of real lines: never crash, offsets stay inside the line.
TEST(PerfScriptParser, HostileInputKeepsOffsetsInBounds) {
  const std::string seeds[] = {
      "node 24170  7396.716453:     250000 cpu-clock: ",
      "\t    7fdb040034dc [unknown] (/tmp/perf-24170.map)",
      "            node 24170  7397.268282:     250000 cpu-clock:      7fdb040246ba x (y)",
  };
  std::mt19937 rng(42);
  const std::string alphabet = " \t0123456789abcdef:./()[]-+x\r";
  for (int i = 0; i < 20000; ++i) {
    std::string line = seeds[i % 3];
    const int edits = 1 + static_cast<int>(rng() % 6);
    for (int e = 0; e < edits && !line.empty(); ++e) {
      const size_t at = rng() % line.size();
      switch (rng() % 3) {
        case 0:
          line[at] = alphabet[rng() % alphabet.size()];
          break;
        case 1:
          line.erase(at, 1 + rng() % 4);
          break;
        default:
          line.insert(at, 1, static_cast<char>(rng() % 256));
          break;
      }
    }
    PerfScriptSample s;
    PerfScriptFrame f;
    const PerfScriptLine kind = Parse(line, &s, &f);
    const PerfScriptFrame* frame = kind == PerfScriptLine::kFrame                 ? &f
                                   : (kind == PerfScriptLine::kSample && s.frame) ? &*s.frame
                                                                                  : nullptr;
    if (frame != nullptr) {
      ASSERT_LE(frame->ip_end, line.size());
      ASSERT_LE(frame->sym_begin, frame->tail_begin);
      ASSERT_LE(frame->tail_begin, line.size());
      ASSERT_GE(frame->sym_begin, frame->ip_end);
    }
  }
}

}  // namespace
}  // namespace jitsym::client

namespace jitsym::client {
namespace {

// perf 6.1 lines of `perf script -F ...` without a pid or tid field, from a node recording made
// with -g: a sample line that has a time is still a sample line (pid -1, so that the frames
// under it are known to have nobody to ask), one without is not.
TEST(PerfScriptParser, SampleLinesWithoutPidOrTid) {
  PerfScriptSample s;
  PerfScriptFrame f;
  ASSERT_EQ(Parse("node 13021.598887: ", &s, &f), PerfScriptLine::kSample);  // -F comm,time,ip
  EXPECT_EQ(s.pid, -1);
  EXPECT_EQ(s.comm, "node");
  ASSERT_TRUE(s.time_ns);
  EXPECT_EQ(*s.time_ns, 13021598887999ull);
  EXPECT_FALSE(s.frame);
  ASSERT_EQ(Parse("13021.598887:      7fdb040246ba [unknown] (/tmp/perf-24170.map)", &s, &f),
            PerfScriptLine::kSample);  // -F time,ip,sym,dso
  EXPECT_EQ(s.pid, -1);
  EXPECT_TRUE(s.comm.empty());
  ASSERT_TRUE(s.frame);
  EXPECT_EQ(s.frame->ip, 0x7fdb040246baull);
  EXPECT_EQ(Parse("node ", &s, &f), PerfScriptLine::kOther);  // -F comm,ip,sym,dso
  EXPECT_EQ(Parse("", &s, &f), PerfScriptLine::kBlank);       // -F ip,sym: an empty line
}

// `perf script --header` output starts with perf's header, comment lines.
TEST(PerfScriptParser, HeaderLinesAreNotSamples) {
  PerfScriptSample s;
  PerfScriptFrame f;
  EXPECT_EQ(Parse("# event : name = cpu-clock, , id = { 5794, 5795 }, type = 1, size = 128, "
                  "mmap2 = 1, comm_exec = 1, ksymbol = 1, bpf_event = 1",
                  &s, &f),
            PerfScriptLine::kOther);
  EXPECT_EQ(Parse("# ========", &s, &f), PerfScriptLine::kOther);
  EXPECT_EQ(Parse("# nrcpus online : 2", &s, &f), PerfScriptLine::kOther);
}

// -F comm,pid,tid,time,ip,sym,dso, what `jitsym annotate -i` asks perf script for.
TEST(PerfScriptParser, FieldsAnnotateAsksFor) {
  PerfScriptSample s;
  PerfScriptFrame f;
  ASSERT_EQ(Parse("node   699/699   13021.598887: ", &s, &f), PerfScriptLine::kSample);
  EXPECT_EQ(s.pid, 699);
  EXPECT_EQ(s.tid, 699);
  EXPECT_EQ(*s.time_ns, 13021598887999ull);
  ASSERT_EQ(Parse("            true 14168/14168 12960.398776:      7fdd7aff7645 handle_amd "
                  "(/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2)",
                  &s, &f),
            PerfScriptLine::kSample);
  EXPECT_EQ(s.comm, "true");
  EXPECT_EQ(s.pid, 14168);
  ASSERT_TRUE(s.frame);
  EXPECT_EQ(s.frame->sym, "handle_amd");
  // -F tid,time,ip: a lone tid.
  ASSERT_EQ(Parse("  699 13021.598887: ", &s, &f), PerfScriptLine::kSample);
  EXPECT_EQ(s.pid, 699);
}

}  // namespace
}  // namespace jitsym::client
