// The profile.proto codec against independent readers and writers: `go tool pprof` (Debian's
// golang-go) and the Go runtime. A profile we encode and gzip must show, in `-raw`, `-top` and
// `-traces`, the names, counts, labels, mappings (with build id) and inlined lines we put in; the
// profile pprof writes back from it (`-proto`, google/pprof's encoder: unpacked short repeated
// fields, its own string order) must decode to the same samples; and the heap and CPU profiles a
// Go program writes (runtime/pprof's own encoder) must decode, and re-encoded by us, read in
// `go tool pprof -raw` exactly as the originals. Skipped only when `go` is not on PATH.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "client/profile_proto.h"
#include "tests/unit/testing/pprof_profile.h"

namespace jitsym::client::pprof {
namespace {

bool GoOnPath() {
  const char* path = std::getenv("PATH");
  if (path == nullptr) return false;
  std::stringstream dirs(path);
  for (std::string dir; std::getline(dirs, dir, ':');) {
    if (!dir.empty() && ::access((dir + "/go").c_str(), X_OK) == 0) return true;
  }
  return false;
}

class GoPprofTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!GoOnPath()) {
      GTEST_SKIP() << "`go` is not on PATH (Debian package golang-go): the go tool pprof oracle "
                      "of the profile.proto codec did not run";
    }
    std::string tmpl = ::testing::TempDir() + "/jitsym-pprof-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    if (!dir_.empty()) (void)std::system(("rm -rf '" + dir_ + "'").c_str());
  }

  std::string Write(const std::string& name, const std::string& bytes) {
    const std::string path = dir_ + "/" + name;
    std::ofstream(path, std::ios::binary) << bytes;
    return path;
  }
  std::string Read(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }

  // `go tool pprof ARGS` with HOME in the temporary directory (pprof keeps state under it);
  // stdout, with stderr to a file shown on failure.
  std::string Pprof(const std::string& args) {
    const std::string cmd = "cd '" + dir_ + "' && HOME='" + dir_ + "' PPROF_TMPDIR='" + dir_ +
                            "' go tool pprof " + args + " 2>'" + dir_ + "/stderr'";
    FILE* f = ::popen(cmd.c_str(), "r");
    if (f == nullptr) return {};
    std::string out;
    char buf[4096];
    for (size_t n; (n = std::fread(buf, 1, sizeof(buf), f)) > 0;) out.append(buf, n);
    const int status = ::pclose(f);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << cmd << "\n"
                                                               << Read(dir_ + "/stderr");
    return out;
  }

  std::string dir_;
};

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// Where `want` appears in `lines` as consecutive lines, or -1.
int FindLines(const std::vector<std::string>& lines, const std::vector<std::string>& want) {
  for (size_t i = 0; i + want.size() <= lines.size(); ++i) {
    if (std::equal(want.begin(), want.end(), lines.begin() + static_cast<long>(i))) {
      return static_cast<int>(i);
    }
  }
  return -1;
}

// Flat and cumulative sample counts (value 0) per function name, computed from the profile:
// what pprof's -top must show. A location without lines counts as "<unknown>".
std::map<std::string, std::pair<int64_t, int64_t>> FlatAndCum(const Profile& p) {
  const ProfileIndex index(p);
  std::map<std::string, std::pair<int64_t, int64_t>> out;
  for (const Sample& s : p.sample) {
    std::vector<std::string> seen;
    for (size_t i = 0; i < s.location_id.size(); ++i) {
      const Location* l = index.location(s.location_id[i]);
      std::vector<std::string> names;
      for (const Line& line : l->line)
        names.emplace_back(p.str(index.function(line.function_id)->name));
      if (names.empty()) names.emplace_back("<unknown>");
      for (size_t k = 0; k < names.size(); ++k) {
        if (i == 0 && k == 0) out[names[k]].first += s.value[0];
        if (std::find(seen.begin(), seen.end(), names[k]) == seen.end()) {
          out[names[k]].second += s.value[0];
          seen.push_back(names[k]);
        }
      }
    }
  }
  return out;
}

// A profile's samples as text a person can compare, independent of ids and string order:
// values, labels, and each frame's mapping, address, functions and lines. Columns are left
// out: the pprof that Go 1.19 vendors predates Line.column and drops it.
std::vector<std::string> Canonical(const Profile& p) {
  const ProfileIndex index(p);
  std::vector<std::string> out;
  for (const Sample& s : p.sample) {
    std::ostringstream o;
    for (int64_t v : s.value) o << v << " ";
    std::vector<std::string> labels;
    for (const Label& l : s.label) {
      labels.push_back(std::string(p.str(l.key)) + "=" +
                       (l.str != 0 ? std::string(p.str(l.str))
                                   : std::to_string(l.num) + std::string(p.str(l.num_unit))));
    }
    std::sort(labels.begin(), labels.end());
    for (const std::string& l : labels) o << l << " ";
    for (uint64_t id : s.location_id) {
      const Location* l = index.location(id);
      o << "\n  " << std::hex << l->address << std::dec;
      if (const Mapping* m = index.mapping(l->mapping_id)) {
        o << " in " << p.str(m->filename) << " [" << p.str(m->build_id) << "] " << std::hex
          << m->memory_start << "-" << m->memory_limit << "@" << m->file_offset << std::dec
          << (m->has_functions ? " FN" : "") << (m->has_filenames ? " FL" : "")
          << (m->has_line_numbers ? " LN" : "") << (m->has_inline_frames ? " IN" : "");
      }
      for (const Line& line : l->line) {
        const Function* f = index.function(line.function_id);
        o << " | " << p.str(f->name) << " (" << p.str(f->system_name) << ") " << p.str(f->filename)
          << ":" << line.line << " s=" << f->start_line;
      }
    }
    out.push_back(o.str());
  }
  std::sort(out.begin(), out.end());
  return out;
}

TEST_F(GoPprofTest, RawShowsWhatWeWrote) {
  const std::string path = Write("node.pb.gz", Gzip(Encode(jitsym::testing::NodeProfile())));
  const std::vector<std::string> raw = Lines(Pprof("-raw " + path));
  const std::vector<std::vector<std::string>> want = {
      {"Comment: jitsym annotate", "PeriodType: cpu nanoseconds", "Period: 250000"},
      {"Duration: 2s", "Samples:", "samples/count cpu/nanoseconds[dflt]"},
      // Aggregated samples, values and location ids, then their labels.
      {"          7    1750000: 1 2 3 ", "                comm:[node]",
       "                pid:[4242] tid:[4243]"},
      {"          3     750000: 1 2 3 ", "                comm:[node]",
       "                pid:[4242] tid:[4244]"},
      {"          2     500000: 4 1 2 3 "},
      {"          1     250000: 6 3 "},
      // The JIT frame with its source line; the inlined chain innermost first.
      {"     1: 0x7f3a1c0042c0 M=2 LazyCompile:*hot /app/a.js:10 /app/a.js:12 s=10"},
      {"     2: 0x4f0010 M=1 uv__run_timers /src/libuv/src/timer.c:170 s=160",
       "             uv_run /src/libuv/src/unix/core.c:389 s=380"},
      {"     4: 0x7f3a1c008000 M=2 Builtin:operator<<(std::ostream&, \"x\") && ÄÖ 💥 /app/b.js:3 "
       "s=1()"},
      {"     6: 0xdead0000 "},
      {"1: 0x400000/0x2400000/0x0 /usr/bin/node 4b2e1f0a9c8d7e6f5a4b3c2d1e0f9a8b7c6d5e4f "
       "[FN][FL][LN][IN]",
       "2: 0x7f3a1c000000/0x7f3a1c100000/0x0 /tmp/jit-4242.dump  [FN][FL][LN]",
       "3: 0xffffffff81000000/0xffffffff82000000/0x0 [kernel.kallsyms]  [FN]"},
  };
  for (const auto& lines : want) {
    EXPECT_GE(FindLines(raw, lines), 0) << "-raw lacks:\n"
                                        << lines[0] << "\nin:\n"
                                        << Pprof("-raw " + path);
  }
}

TEST_F(GoPprofTest, TopCountsMatchTheProfile) {
  const Profile p = jitsym::testing::NodeProfile(40);
  const std::string path = Write("top.pb.gz", Gzip(Encode(p)));
  const std::string top = Pprof("-top -sample_index=samples -nodecount=1000 " + path);
  auto want = FlatAndCum(p);
  int64_t total = 0;
  for (const Sample& s : p.sample) total += s.value[0];
  EXPECT_NE(top.find("Total samples = " + std::to_string(total) + " \n"), std::string::npos) << top;
  // Rows: flat flat% sum% cum cum% name.
  std::map<std::string, std::pair<int64_t, int64_t>> got;
  for (const std::string& line : Lines(top)) {
    std::istringstream in(line);
    int64_t flat, cum;
    std::string flat_pct, sum_pct, cum_pct, name;
    if (!(in >> flat >> flat_pct >> sum_pct >> cum >> cum_pct)) continue;
    std::getline(in >> std::ws, name);
    if (name.size() > 9 && name.ends_with(" (inline)")) name.resize(name.size() - 9);
    got[name] = {flat, cum};
  }
  EXPECT_EQ(got, want) << top;
  EXPECT_EQ(got["LazyCompile:*hot /app/a.js:10"], (std::pair<int64_t, int64_t>{10, 13}));
}

TEST_F(GoPprofTest, TracesCarryThreadLabels) {
  const std::string path = Write("traces.pb.gz", Gzip(Encode(jitsym::testing::NodeProfile())));
  const std::vector<std::string> traces = Lines(Pprof("-traces " + path));
  EXPECT_GE(FindLines(traces, {"      comm:  node", "       pid:  4242", "       tid:  4244",
                               "     750us   LazyCompile:*hot /app/a.js:10",
                               "             uv__run_timers (inline)", "             uv_run",
                               "             main"}),
            0);
}

// Go's encoder writes the same profile differently; our decoder reads it back to the same
// samples, mappings and functions.
TEST_F(GoPprofTest, DecodesWhatGoWrites) {
  for (size_t extra : {size_t{0}, size_t{300}}) {
    const Profile ours = jitsym::testing::NodeProfile(extra);
    const std::string encoded = Encode(ours);
    const std::string path = Write("ours.pb", encoded);  // raw protobuf: pprof reads that too
    const std::string go_path = dir_ + "/go.pb.gz";
    (void)Pprof("-proto -output='" + go_path + "' " + path);
    auto raw = MaybeGunzip(Read(go_path), 1 << 30);
    ASSERT_TRUE(raw.ok()) << raw.error().message;
    EXPECT_NE(*raw, encoded);  // really another encoder's bytes
    auto theirs = Decode(*raw);
    ASSERT_TRUE(theirs.ok()) << theirs.error().message << " at " << theirs.error().offset;
    EXPECT_EQ(Canonical(*theirs), Canonical(ours));
    EXPECT_EQ(theirs->str(theirs->period_type.type), "cpu");
    EXPECT_EQ(theirs->period, ours.period);
    EXPECT_EQ(theirs->time_nanos, ours.time_nanos);
    EXPECT_EQ(theirs->duration_nanos, ours.duration_nanos);
    EXPECT_EQ(theirs->str(theirs->default_sample_type), "cpu");
    ASSERT_EQ(theirs->sample_type.size(), 2u);
    EXPECT_EQ(theirs->str(theirs->sample_type[0].type), "samples");
    EXPECT_EQ(theirs->str(theirs->sample_type[1].unit), "nanoseconds");
    ASSERT_FALSE(theirs->comment.empty());
    EXPECT_EQ(theirs->str(theirs->comment[0]), "jitsym annotate");
    // And back through our encoder, unchanged.
    auto again = Decode(Encode(*theirs));
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(*again, *theirs);
  }
}

// A Go program that writes a heap profile (every allocation sampled) and a CPU profile.
constexpr std::string_view kGoProgram = R"(package main

import (
	"os"
	"runtime"
	"runtime/pprof"
	"time"
)

var sink [][]byte

//go:noinline
func alloc(n int) {
	for i := 0; i < n; i++ {
		sink = append(sink, make([]byte, 1024+i%4096))
	}
}

//go:noinline
func busy(d time.Duration) int {
	x := 0
	for end := time.Now().Add(d); time.Now().Before(end); {
		for i := 0; i < 100000; i++ {
			x += i * i
		}
	}
	return x
}

func main() {
	runtime.MemProfileRate = 1
	alloc(20000)
	runtime.GC()
	f, _ := os.Create(os.Args[1])
	pprof.Lookup("heap").WriteTo(f, 0)
	f.Close()
	g, _ := os.Create(os.Args[2])
	pprof.StartCPUProfile(g)
	busy(300 * time.Millisecond)
	pprof.StopCPUProfile()
	g.Close()
}
)";

TEST_F(GoPprofTest, DecodesWhatTheGoRuntimeWrites) {
  const std::string prog = Write("prog.go", std::string(kGoProgram));
  const std::string cmd =
      "cd '" + dir_ + "' && HOME='" + dir_ + "' GOCACHE='" + dir_ + "/cache' GOPATH='" + dir_ +
      "/gopath' GO111MODULE=off GOFLAGS= " + "GOPROXY=off go run prog.go heap.pb.gz cpu.pb.gz 2>'" +
      dir_ + "/stderr'";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd << "\n" << Read(dir_ + "/stderr");
  for (const char* name : {"heap", "cpu"}) {
    SCOPED_TRACE(name);
    const std::string path = dir_ + "/" + name + ".pb.gz";
    auto raw = MaybeGunzip(Read(path), 1 << 30);
    ASSERT_TRUE(raw.ok()) << raw.error().message;
    auto p = Decode(*raw);
    ASSERT_TRUE(p.ok()) << p.error().message << " at " << p.error().offset;
    if (std::string_view(name) == "heap") {
      ASSERT_EQ(p->sample_type.size(), 4u);
      EXPECT_EQ(p->str(p->sample_type[1].type), "alloc_space");
      EXPECT_EQ(p->str(p->sample_type[1].unit), "bytes");
      const auto names = FlatAndCum(*p);
      ASSERT_TRUE(names.count("main.alloc")) << "no main.alloc in the heap profile";
      EXPECT_GE(names.at("main.alloc").second, 20000);  // every allocation sampled
      bool bytes_label = false;
      for (const Sample& s : p->sample) {
        for (const Label& l : s.label) bytes_label |= p->str(l.key) == "bytes" && l.num > 0;
      }
      EXPECT_TRUE(bytes_label) << "no numeric label \"bytes\" in the heap profile";
    } else {
      EXPECT_EQ(p->str(p->period_type.type), "cpu");
      EXPECT_GT(p->period, 0);
    }
    // Our encoding of it reads in go tool pprof exactly as Go's own.
    const std::string ours = Write(std::string("ours-") + name + ".pb.gz", Gzip(Encode(*p)));
    const std::string want = Pprof("-raw -symbolize=none " + path);
    EXPECT_FALSE(want.empty());
    EXPECT_EQ(Pprof("-raw -symbolize=none " + ours), want);
  }
}

}  // namespace
}  // namespace jitsym::client::pprof
