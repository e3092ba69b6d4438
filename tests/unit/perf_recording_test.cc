// `perf evlist -v` output (perf 6.1, copied from real recordings) and perf inject's clock rule.
#include "client/perf_recording.h"

#include <gtest/gtest.h>

namespace jitsym::client {
namespace {

constexpr char kMono[] =
    "cpu-clock: type: 1, size: 128, { sample_period, sample_freq }: 4000, sample_type: "
    "IP|TID|TIME|PERIOD, read_format: ID|LOST, disabled: 1, inherit: 1, mmap: 1, comm: 1, freq: "
    "1, enable_on_exec: 1, task: 1, sample_id_all: 1, exclude_guest: 1, mmap2: 1, comm_exec: 1, "
    "use_clockid: 1, ksymbol: 1, bpf_event: 1, clockid: 1\n";
constexpr char kDefaultClockWithCallchain[] =
    "cpu-clock: type: 1, size: 128, { sample_period, sample_freq }: 2000, sample_type: "
    "IP|TID|TIME|CALLCHAIN|PERIOD, read_format: ID|LOST, disabled: 1, inherit: 1, mmap: 1, "
    "comm: 1, freq: 1, enable_on_exec: 1, task: 1, sample_id_all: 1, exclude_guest: 1, mmap2: "
    "1, comm_exec: 1, ksymbol: 1, bpf_event: 1\n";
// -k realtime: clockid 0 is not printed.
constexpr char kRealtime[] =
    "cpu-clock: type: 1, size: 128, { sample_period, sample_freq }: 4000, sample_type: "
    "IP|TID|TIME|PERIOD, read_format: ID|LOST, disabled: 1, inherit: 1, mmap: 1, comm: 1, freq: "
    "1, enable_on_exec: 1, task: 1, sample_id_all: 1, exclude_guest: 1, mmap2: 1, comm_exec: 1, "
    "use_clockid: 1, ksymbol: 1, bpf_event: 1\n";

TEST(PerfRecording, MonotonicRecordingPasses) {
  const auto events = ParsePerfEvlist(kMono);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].name, "cpu-clock");
  EXPECT_TRUE(events[0].use_clockid);
  EXPECT_EQ(events[0].clockid, 1);
  EXPECT_TRUE(events[0].time);
  EXPECT_FALSE(events[0].callchain);
  EXPECT_FALSE(InjectClockProblem(events));
}

TEST(PerfRecording, DefaultClockIsRefused) {
  const auto events = ParsePerfEvlist(kDefaultClockWithCallchain);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_FALSE(events[0].use_clockid);
  EXPECT_TRUE(events[0].callchain);
  EXPECT_EQ(InjectClockProblem(events).value_or(""),
            "event cpu-clock was recorded with perf's default clock, not CLOCK_MONOTONIC");
}

TEST(PerfRecording, OtherClockIsRefused) {
  EXPECT_EQ(InjectClockProblem(ParsePerfEvlist(kRealtime)).value_or(""),
            "event cpu-clock was recorded with CLOCK_REALTIME, not CLOCK_MONOTONIC");
}

TEST(PerfRecording, EveryEventCountsAndNamesMayHoldColons) {
  const std::string text = std::string(kMono) +
                           "# Tip: use 'perf evlist --trace-fields' to show fields\n"
                           "sched:sched_switch: type: 2, size: 128, config: 0x13c, sample_type: "
                           "IP|TID|TIME|CPU|PERIOD|RAW, use_clockid: 1, clockid: 4\n";
  const auto events = ParsePerfEvlist(text);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[1].name, "sched:sched_switch");
  EXPECT_EQ(InjectClockProblem(events).value_or(""),
            "event sched:sched_switch was recorded with CLOCK_MONOTONIC_RAW, not CLOCK_MONOTONIC");
}

TEST(PerfRecording, NothingToJudge) {
  EXPECT_TRUE(ParsePerfEvlist("").empty());
  EXPECT_TRUE(ParsePerfEvlist("garbage\n: type: \n").size() <= 1);
  EXPECT_FALSE(InjectClockProblem({}));
}

}  // namespace
}  // namespace jitsym::client

namespace jitsym::client {
namespace {

// `perf script --header` / `perf report --header-only` (perf 6.1).
TEST(PerfRecording, HeaderEventLines) {
  const auto mono = ParsePerfHeaderEvent(
      "# event : name = cpu-clock, , id = { 5118, 5119 }, type = 1, size = 128, { "
      "sample_period, sample_freq } = 4000, sample_type = IP|TID|TIME|PERIOD, read_format = "
      "ID|LOST, disabled = 1, inherit = 1, mmap = 1, comm = 1, freq = 1, enable_on_exec = 1, "
      "task = 1, sample_id_all = 1, exclude_guest = 1, mmap2 = 1, comm_exec = 1, use_clockid = "
      "1, ksymbol = 1, bpf_event = 1, clockid = 1");
  ASSERT_TRUE(mono);
  EXPECT_EQ(mono->name, "cpu-clock");
  EXPECT_TRUE(mono->time);
  EXPECT_FALSE(InjectClockProblem({*mono}));
  const auto plain = ParsePerfHeaderEvent(
      "# event : name = cpu-clock, , id = { 33, 34 }, type = 1, size = 128, { sample_period, "
      "sample_freq } = 2000, sample_type = IP|TID|TIME|CALLCHAIN|PERIOD, read_format = ID|LOST, "
      "disabled = 1, inherit = 1, mmap = 1, comm = 1, freq = 1, enable_on_exec = 1, task = 1, "
      "sample_id_all = 1, exclude_guest = 1, mmap2 = 1, comm_exec = 1, ksymbol = 1, bpf_event = "
      "1");
  ASSERT_TRUE(plain);
  EXPECT_TRUE(plain->callchain);
  EXPECT_EQ(InjectClockProblem({*plain}).value_or(""),
            "event cpu-clock was recorded with perf's default clock, not CLOCK_MONOTONIC");
  EXPECT_FALSE(ParsePerfHeaderEvent("# cmdline : /usr/bin/perf record -k mono"));
  EXPECT_FALSE(ParsePerfHeaderEvent("node 24170  7396.716453:     250000 cpu-clock: "));
}

}  // namespace
}  // namespace jitsym::client
