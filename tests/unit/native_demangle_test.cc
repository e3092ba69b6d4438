// The demangler against hostile names: bounded input, bounded output, and for every real name
// the same text as LLVM's own (unbounded) demangler, which llvm-symbolizer uses.
#include <gtest/gtest.h>
#include <pthread.h>

#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "daemon/native/demangle.h"

#ifdef JITSYM_HAVE_LLVM_DEMANGLE
#include <llvm/Demangle/Demangle.h>
#endif

namespace jitsym::native {
namespace {

std::string Base36(size_t v) {
  static constexpr char kDigits[] = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ";
  std::string out;
  do {
    out.insert(out.begin(), kDigits[v % 36]);
    v /= 36;
  } while (v != 0);
  return out;
}

// f(a, b<a, a>, b<b<a, a>, b<a, a> >, ...): each parameter names the previous one twice through
// a back-reference, so `levels` parameters print about 2^levels times as many bytes.
std::string Doubling(const std::string& prefix, int levels) {
  std::string name = prefix + "1f1a1bIS_S_E";
  for (int i = 0; i < levels; ++i) {
    const std::string ref = "S" + Base36(i + 1) + "_";
    name += "S0_I" + ref + ref + "E";
  }
  return name;
}

// Runs `f` on a thread with the default stack, as the daemon's query threads do.
template <class F>
void OnThread(F f) {
  std::thread t(f);
  t.join();
}

// Runs `f` on a thread with a stack of `bytes`.
template <class F>
void OnSmallStack(size_t bytes, F f) {
  pthread_attr_t attr;
  ASSERT_EQ(pthread_attr_init(&attr), 0);
  ASSERT_EQ(pthread_attr_setstacksize(&attr, bytes), 0);
  pthread_t thread;
  ASSERT_EQ(pthread_create(
                &thread, &attr,
                [](void* p) -> void* {
                  (*static_cast<F*>(p))();
                  return nullptr;
                },
                &f),
            0);
  pthread_attr_destroy(&attr);
  pthread_join(thread, nullptr);
}

TEST(NativeDemangle, ExponentialNameStaysMangled) {
  // 2^40 times its length if printed; 234 bytes printed 27 MB before the bound.
  const std::string name = Doubling("_Z", 40);
  ASSERT_LT(name.size(), 600u);
  EXPECT_EQ(Demangle(name), name);
}

TEST(NativeDemangle, ShortDoublingNameIsDemangled) {
  const std::string name = Doubling("_Z", 6);
  const std::string out = Demangle(name);
  EXPECT_TRUE(out.starts_with("f(a, b<a, a>, b<b<a, a>, b<a, a> >, ")) << out;
  EXPECT_LE(out.size(), kMaxDemangledBytes);
}

TEST(NativeDemangle, RuntimeFallbackStopsPrintingAtTheLimit) {
  // LLVM 14 cannot read GCC's transaction clones; the C++ runtime can, and would print this
  // one's 2^40 copies as well.
  EXPECT_EQ(Demangle(Doubling("_ZGTt", 40)), Doubling("_ZGTt", 40));
  size_t printed = 0;
  EXPECT_EQ(RuntimeDemangle(Doubling("_ZGTt", 40), &printed), std::nullopt);
  EXPECT_EQ(printed, kMaxRuntimeDemangledBytes);
  // Its printer is the slow one (8 ms per MiB): it stops at 64 KiB, not at the 1 MiB LLVM's may
  // print; up to that, a name is printed whole.
  EXPECT_EQ(RuntimeDemangle(Doubling("_ZGTt", 12)), std::nullopt);
  const std::optional<std::string> long_one = RuntimeDemangle(Doubling("_ZGTt", 11), &printed);
  ASSERT_TRUE(long_one.has_value());
  EXPECT_GT(long_one->size(), 50000u);
  EXPECT_LE(long_one->size(), kMaxRuntimeDemangledBytes);
  EXPECT_EQ(printed, 53213u);
  const std::optional<std::string> few = RuntimeDemangle(Doubling("_ZGTt", 2));
  ASSERT_TRUE(few.has_value());
  EXPECT_TRUE(few->starts_with("transaction clone for f(a, b<a, a>")) << *few;
}

TEST(NativeDemangle, DeepNestingIsNotReadPastTheInputLimit) {
  // LLVM 14's parser recursed once per 'P' and overflowed an 8 MiB stack at about 100 KiB.
  const std::string deep = "_Z1fP" + std::string(200000, 'P') + "i";
  std::string out;
  OnThread([&] { out = Demangle(deep); });
  EXPECT_EQ(out, deep);
  // Up to the limit, nesting is read (on a thread's stack, under the sanitizers too).
  const std::string limit = "_Z1fP" + std::string(kMaxDemangleInput - 6, 'P') + "i";
  ASSERT_EQ(limit.size(), kMaxDemangleInput);
  OnThread([&] { out = Demangle(limit); });
  EXPECT_TRUE(out.starts_with("f(int*")) << out.substr(0, 40);
  EXPECT_EQ(out.size(), std::string("f(int").size() + kMaxDemangleInput - 5 + 1);
}

TEST(NativeDemangle, DeepNameOnASmallStackIsRead) {
  // A caller with 256 KiB of stack (less than the deepest name needs) gets the same answer.
  const std::string limit = "_Z1fP" + std::string(kMaxDemangleInput - 6, 'P') + "i";
  std::string on_small;
  std::string on_default;
  OnSmallStack(256 << 10, [&] { on_small = Demangle(limit); });
  OnThread([&] { on_default = Demangle(limit); });
  EXPECT_TRUE(on_small.starts_with("f(int*")) << on_small.substr(0, 40);
  EXPECT_EQ(on_small, on_default);
  OnSmallStack(256 << 10, [&] { on_small = Demangle("_ZN3foo3barEv"); });
  EXPECT_EQ(on_small, "foo::bar()");
}

#ifdef JITSYM_HAVE_LLVM_DEMANGLE
// Every symbol of real binaries (this test's own, the C++ runtime, libLLVMDemangle's users):
// the bounded demangler prints what LLVM's prints, so the bound never refuses a real name.
TEST(NativeDemangle, RealNamesAsLlvmPrintsThem) {
  std::vector<std::string> names;
  for (const char* file : {"/proc/self/exe", "/usr/lib/x86_64-linux-gnu/libstdc++.so.6"}) {
    const std::string command = std::string("nm -P --defined-only ") + file +
                                " 2>/dev/null; nm -D -P --defined-only " + file + " 2>/dev/null";
    FILE* pipe = ::popen(command.c_str(), "r");
    ASSERT_NE(pipe, nullptr);
    char line[65536];
    while (std::fgets(line, sizeof(line), pipe) != nullptr) {
      std::string text(line);
      const size_t space = text.find(' ');
      if (space == std::string::npos) continue;
      std::string name = text.substr(0, space);
      if (const size_t at = name.find('@'); at != std::string::npos) name.resize(at);
      if (name.starts_with("_Z")) names.push_back(name);
    }
    ::pclose(pipe);
  }
  ASSERT_GT(names.size(), 3000u);
  size_t compared = 0;
  for (const std::string& name : names) {
    std::string llvm;
    if (!llvm::nonMicrosoftDemangle(name.c_str(), llvm)) continue;
    ++compared;
    ASSERT_EQ(Demangle(name), llvm) << name;
  }
  EXPECT_GT(compared, 3000u);
}
#endif

}  // namespace
}  // namespace jitsym::native

namespace jitsym::native {
namespace {

// A module's budget: what each demangler printed is charged; past the C++ runtime's share, the
// names only it reads stay mangled while LLVM's still demangles the others; past the whole
// share, every name stays mangled.
TEST(NativeDemangle, AModulesBudgetBoundsWhatIsPrinted) {
  DemangleBudget budget;
  EXPECT_EQ(Demangle("_ZN3foo3barEv", &budget), "foo::bar()");
  EXPECT_EQ(budget.printed(), std::string("foo::bar()").size());
  EXPECT_EQ(budget.runtime_printed(), 0u);
  // Bombs only the runtime reads: each costs its 64 KiB until the runtime's share is spent.
  const std::string bomb = Doubling("_ZGTt", 40);
  size_t calls = 0;
  while (budget.AllowsRuntime() && calls < 10000) {
    EXPECT_EQ(Demangle(bomb, &budget), bomb);
    ++calls;
  }
  EXPECT_EQ(calls, DemangleBudget::kRuntimeBytes / kMaxRuntimeDemangledBytes);
  EXPECT_TRUE(budget.TakeExhaustedReport());
  EXPECT_FALSE(budget.TakeExhaustedReport());  // reported once
  // A transaction clone LLVM cannot read now stays mangled; names LLVM reads still demangle.
  const std::string clone = Doubling("_ZGTt", 2);
  EXPECT_EQ(Demangle(clone, &budget), clone);
  EXPECT_TRUE(Demangle(clone).starts_with("transaction clone for f("));
  EXPECT_EQ(Demangle("_ZN3foo3barEv", &budget), "foo::bar()");
}

}  // namespace
}  // namespace jitsym::native
