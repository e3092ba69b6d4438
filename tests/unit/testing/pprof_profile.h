// Test profiles for the profile.proto codec (unit tests, the go tool pprof oracle, fuzz seeds):
// a profile shaped like the one `jitsym annotate --pprof` writes, built with ProfileBuilder, and
// a raw protobuf writer for inputs our encoder never makes (unpacked fields, unknown fields,
// other wire types).
#ifndef JITSYM_TESTS_UNIT_TESTING_PPROF_PROFILE_H_
#define JITSYM_TESTS_UNIT_TESTING_PPROF_PROFILE_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "client/profile_proto.h"

namespace jitsym::testing {

// A CPU profile of one node process (pid 4242, threads 4243 and 4244): native frames of
// /usr/bin/node (with a build id and an inlined chain), JIT frames in an anonymous mapping
// (with source file, line and column), a kernel frame, names with characters that need escaping
// elsewhere, and `extra` more samples of distinct stacks (to make large profiles).
inline client::pprof::Profile NodeProfile(size_t extra = 0) {
  using client::pprof::Line;
  client::pprof::ProfileBuilder b;
  b.AddSampleType("samples", "count");
  b.AddSampleType("cpu", "nanoseconds");
  b.SetPeriod("cpu", "nanoseconds", 250000);
  b.SetTime(1700000000000000000, 2000000000);
  b.AddComment("jitsym annotate");
  b.SetDefaultSampleType("cpu");
  // (Spelled out: GCC's -Wextra warns on designated initializers that leave fields out.)
  client::pprof::ProfileBuilder::MappingSpec spec;
  spec.memory_start = 0x400000;
  spec.memory_limit = 0x2400000;
  spec.filename = "/usr/bin/node";
  spec.build_id = "4b2e1f0a9c8d7e6f5a4b3c2d1e0f9a8b7c6d5e4f";
  spec.has_functions = spec.has_filenames = spec.has_line_numbers = spec.has_inline_frames = true;
  const uint64_t node = b.AddMapping(spec);
  spec.memory_start = 0x7f3a1c000000;
  spec.memory_limit = 0x7f3a1c100000;
  spec.filename = "/tmp/jit-4242.dump";
  spec.build_id = "";
  spec.has_inline_frames = false;
  const uint64_t jit = b.AddMapping(spec);
  spec.memory_start = 0xffffffff81000000;
  spec.memory_limit = 0xffffffff82000000;
  spec.filename = "[kernel.kallsyms]";
  spec.has_filenames = spec.has_line_numbers = false;
  const uint64_t kernel = b.AddMapping(spec);
  const uint64_t f_main = b.AddFunction("main", "main", "/src/node/src/node_main.cc", 90);
  const uint64_t f_run = b.AddFunction("uv_run", "uv_run", "/src/libuv/src/unix/core.c", 380);
  const uint64_t f_inl =
      b.AddFunction("uv__run_timers", "uv__run_timers", "/src/libuv/src/timer.c", 160);
  const uint64_t f_hot = b.AddFunction("LazyCompile:*hot /app/a.js:10",
                                       "LazyCompile:*hot /app/a.js:10", "/app/a.js", 10);
  const uint64_t f_odd =
      b.AddFunction("Builtin:operator<<(std::ostream&, \"x\") && ÄÖ 💥", "", "/app/b.js", 1);
  const uint64_t f_sys = b.AddFunction("entry_SYSCALL_64", "", "", 0);
  const Line main_line[] = {{f_main, 97, 0}};
  const Line run_line[] = {{f_inl, 170, 0}, {f_run, 389, 0}};  // uv__run_timers inlined
  const Line hot_line[] = {{f_hot, 12, 7}};
  const Line odd_line[] = {{f_odd, 3, 14}};
  const Line sys_line[] = {{f_sys, 0, 0}};
  const uint64_t l_main = b.AddLocation(node, 0x401234, main_line);
  const uint64_t l_run = b.AddLocation(node, 0x4f0010, run_line);
  const uint64_t l_hot = b.AddLocationByKey("hot", jit, 0x7f3a1c0042c0, hot_line);
  const uint64_t l_odd = b.AddLocation(jit, 0x7f3a1c008000, odd_line);
  const uint64_t l_sys = b.AddLocation(kernel, 0xffffffff81a00010, sys_line);
  const uint64_t l_raw = b.AddLocation(0, 0xdead0000, {});  // unsymbolized, no mapping
  const client::pprof::Label t1[] = {b.NumLabel("pid", 4242), b.NumLabel("tid", 4243),
                                     b.StringLabel("comm", "node")};
  const client::pprof::Label t2[] = {b.NumLabel("pid", 4242), b.NumLabel("tid", 4244),
                                     b.StringLabel("comm", "node")};
  const int64_t one[] = {1, 250000};
  const uint64_t s1[] = {l_hot, l_run, l_main};
  const uint64_t s2[] = {l_odd, l_hot, l_run, l_main};
  const uint64_t s3[] = {l_sys, l_hot, l_run, l_main};
  const uint64_t s4[] = {l_raw, l_main};
  for (int i = 0; i < 7; ++i) b.AddSample(s1, one, t1);
  for (int i = 0; i < 3; ++i) b.AddSample(s1, one, t2);
  for (int i = 0; i < 2; ++i) b.AddSample(s2, one, t1);
  b.AddSample(s3, one, t2);
  b.AddSample(s4, one, t1);
  for (size_t i = 0; i < extra; ++i) {
    const Line l[] = {{b.AddFunction("fn" + std::to_string(i % 1000), "", "/app/gen.js",
                                     static_cast<int64_t>(i % 1000)),
                       static_cast<int64_t>(i), 1}};
    const uint64_t loc = b.AddLocation(jit, 0x7f3a1c010000 + i * 16, l);
    const uint64_t s[] = {loc, l_run, l_main};
    const int64_t v[] = {static_cast<int64_t>(i % 5 + 1), static_cast<int64_t>(i % 5 + 1) * 250000};
    b.AddSample(s, v, t1);
  }
  return b.Take();
}

// Protobuf fields written one by one.
class RawProto {
 public:
  RawProto& Varint(uint32_t field, uint64_t v) {
    Tag(field, 0);
    Uvarint(v);
    return *this;
  }
  RawProto& Len(uint32_t field, std::string_view bytes) {
    Tag(field, 2);
    Uvarint(bytes.size());
    out_.append(bytes);
    return *this;
  }
  RawProto& Fixed64(uint32_t field, uint64_t v) {
    Tag(field, 1);
    for (int i = 0; i < 8; ++i) out_.push_back(static_cast<char>(v >> (8 * i)));
    return *this;
  }
  RawProto& Fixed32(uint32_t field, uint32_t v) {
    Tag(field, 5);
    for (int i = 0; i < 4; ++i) out_.push_back(static_cast<char>(v >> (8 * i)));
    return *this;
  }
  RawProto& Tag(uint32_t field, int wire) {
    Uvarint(uint64_t{field} << 3 | static_cast<uint64_t>(wire));
    return *this;
  }
  RawProto& Uvarint(uint64_t v) {
    while (v >= 0x80) {
      out_.push_back(static_cast<char>(v | 0x80));
      v >>= 7;
    }
    out_.push_back(static_cast<char>(v));
    return *this;
  }
  RawProto& Raw(std::string_view bytes) {
    out_.append(bytes);
    return *this;
  }
  const std::string& bytes() const { return out_; }

 private:
  std::string out_;
};

}  // namespace jitsym::testing

#endif  // JITSYM_TESTS_UNIT_TESTING_PPROF_PROFILE_H_
