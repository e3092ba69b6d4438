// The SIGBUS handler and its table of guarded mappings (mapping_guard.h). The handler reads only
// lock-free atomics and calls only mmap, write and sigaction: everything it prints is formatted
// when the mapping is registered.
#include "daemon/native/mapping_guard.h"

#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <string>

#include "daemon/util/log.h"

namespace jitsym::native {
namespace {

constexpr size_t kHeadBytes = 400;

struct Slot {
  std::atomic<bool> taken{false};
  std::atomic<uintptr_t> begin{0};  // 0: not guarding
  std::atomic<uintptr_t> end{0};
  std::atomic<unsigned> faults{0};
  // The log line up to the offset: "jitsymd: warning: native: FILE: shrank while mapped: ".
  char head[kHeadBytes] = {};
  size_t head_len = 0;
};

Slot g_slots[MappingGuard::kSlots];
std::atomic<int> g_used{0};  // slots [0, g_used) may be guarding
uintptr_t g_page = 4096;
struct sigaction g_previous {};

constexpr char kTail[] =
    " on, it reads as zeros; answers from it may be wrong until it is opened again\n";

// One line, one write(2): "<head>OFFSET<tail>".
void Report(const Slot& s, uintptr_t offset) {
  char line[kHeadBytes + 24 + sizeof(kTail)];
  std::memcpy(line, s.head, s.head_len);
  size_t n = s.head_len;
  char digits[24];
  size_t d = 0;
  do {
    digits[d++] = static_cast<char>('0' + offset % 10);
    offset /= 10;
  } while (offset != 0);
  while (d > 0) line[n++] = digits[--d];
  std::memcpy(line + n, kTail, sizeof(kTail) - 1);
  n += sizeof(kTail) - 1;
  [[maybe_unused]] ssize_t written = ::write(STDERR_FILENO, line, n);
}

// Not a guarded page: what SIGBUS did before the guard was installed.
void Forward(int sig, siginfo_t* info, void* context) {
  if ((g_previous.sa_flags & SA_SIGINFO) != 0 && g_previous.sa_sigaction != nullptr) {
    g_previous.sa_sigaction(sig, info, context);
    return;
  }
  if ((g_previous.sa_flags & SA_SIGINFO) == 0 && g_previous.sa_handler != SIG_DFL &&
      g_previous.sa_handler != SIG_IGN) {
    g_previous.sa_handler(sig);
    return;
  }
  // The default action: restored, the faulting access runs again and ends the process.
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  ::sigaction(SIGBUS, &dfl, nullptr);
}

void OnBus(int sig, siginfo_t* info, void* context) {
  const int saved_errno = errno;
  const auto addr = reinterpret_cast<uintptr_t>(info->si_addr);
  const int used = info->si_code == BUS_ADRERR ? g_used.load(std::memory_order_acquire) : 0;
  for (int i = 0; i < used; ++i) {
    Slot& s = g_slots[i];
    const uintptr_t begin = s.begin.load(std::memory_order_acquire);
    if (begin == 0 || addr < begin || addr >= s.end.load(std::memory_order_relaxed)) continue;
    const uintptr_t page = addr & ~(g_page - 1);
    if (::mmap(reinterpret_cast<void*>(page), g_page, PROT_READ,
               MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == MAP_FAILED) {
      break;
    }
    if (s.faults.fetch_add(1, std::memory_order_relaxed) == 0) Report(s, page - begin);
    errno = saved_errno;
    return;
  }
  Forward(sig, info, context);
  errno = saved_errno;
}

void Install() {
  g_page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  struct sigaction action {};
  action.sa_sigaction = OnBus;
  action.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&action.sa_mask);
  ::sigaction(SIGBUS, &action, &g_previous);
}

}  // namespace

MappingGuard& MappingGuard::operator=(MappingGuard&& other) noexcept {
  if (this != &other) {
    Release();
    slot_ = other.slot_;
    other.slot_ = -1;
  }
  return *this;
}

MappingGuard MappingGuard::Register(const void* start, size_t size, std::string_view file) {
  static std::once_flag installed;
  std::call_once(installed, Install);
  MappingGuard guard;
  if (start == nullptr || size == 0) return guard;
  for (int i = 0; i < kSlots; ++i) {
    Slot& s = g_slots[i];
    bool expected = false;
    if (!s.taken.compare_exchange_strong(expected, true, std::memory_order_acquire)) continue;
    const std::string head = log::Format(
        log::Level::kWarning,
        log::Cat("native: ", file.substr(0, 256), ": shrank while mapped: from offset "));
    s.head_len = std::min(head.size(), kHeadBytes);
    std::memcpy(s.head, head.data(), s.head_len);
    s.faults.store(0, std::memory_order_relaxed);
    s.end.store(reinterpret_cast<uintptr_t>(start) + size, std::memory_order_relaxed);
    s.begin.store(reinterpret_cast<uintptr_t>(start), std::memory_order_release);
    for (int used = g_used.load(); used < i + 1 && !g_used.compare_exchange_weak(used, i + 1);) {
    }
    guard.slot_ = i;
    return guard;
  }
  return guard;
}

unsigned MappingGuard::faults() const {
  return slot_ >= 0 ? g_slots[slot_].faults.load(std::memory_order_relaxed) : 0;
}

void MappingGuard::Release() {
  if (slot_ < 0) return;
  Slot& s = g_slots[slot_];
  s.begin.store(0, std::memory_order_release);
  s.end.store(0, std::memory_order_relaxed);
  s.taken.store(false, std::memory_order_release);
  slot_ = -1;
}

}  // namespace jitsym::native
