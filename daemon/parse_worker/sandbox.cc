#include "daemon/parse_worker/sandbox.h"

#include <grp.h>
#include <linux/audit.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstring>
#include <iterator>
#include <vector>

namespace jitsym::parse_worker {
namespace {

#if defined(__x86_64__)
constexpr uint32_t kArch = AUDIT_ARCH_X86_64;
#elif defined(__aarch64__)
constexpr uint32_t kArch = AUDIT_ARCH_AARCH64;
#else
#error "parse worker seccomp filter: unknown architecture"
#endif

// System calls a worker never needs: with them a worker taken over by a file could reach what
// its descriptors do not give it.
constexpr long kDenied[] = {
#ifdef SYS_open
    SYS_open,
#endif
#ifdef SYS_creat
    SYS_creat,
#endif
    SYS_openat,
    SYS_openat2,
    SYS_open_by_handle_at,
    SYS_name_to_handle_at,
    SYS_execve,
    SYS_execveat,
    SYS_socket,
    SYS_connect,
    SYS_bind,
    SYS_listen,
    SYS_accept,
    SYS_accept4,
    SYS_ptrace,
    SYS_process_vm_readv,
    SYS_process_vm_writev,
    SYS_kill,
    SYS_tkill,
    SYS_rt_sigqueueinfo,
    SYS_rt_tgsigqueueinfo,
    SYS_pidfd_open,
    SYS_pidfd_send_signal,
    SYS_pidfd_getfd,
    SYS_mount,
    SYS_umount2,
    SYS_pivot_root,
    SYS_chroot,
    SYS_unshare,
    SYS_setns,
#ifdef SYS_link
    SYS_link,
    SYS_symlink,
    SYS_unlink,
    SYS_rename,
    SYS_mkdir,
    SYS_rmdir,
    SYS_mknod,
    SYS_chmod,
    SYS_chown,
    SYS_lchown,
#endif
    SYS_linkat,
    SYS_symlinkat,
    SYS_unlinkat,
    SYS_renameat,
    SYS_renameat2,
    SYS_mkdirat,
    SYS_mknodat,
    SYS_fchmod,
    SYS_fchmodat,
    SYS_fchown,
    SYS_fchownat,
    SYS_truncate,
    SYS_ftruncate,
    SYS_fallocate,
    SYS_bpf,
    SYS_perf_event_open,
    SYS_io_uring_setup,
    SYS_userfaultfd,
    SYS_keyctl,
    SYS_add_key,
    SYS_request_key,
    SYS_setuid,
    SYS_setgid,
    SYS_setreuid,
    SYS_setregid,
    SYS_setresuid,
    SYS_setresgid,
    SYS_setgroups,
    SYS_setfsuid,
    SYS_setfsgid,
    SYS_capset,
    SYS_personality,
    SYS_init_module,
    SYS_finit_module,
    SYS_delete_module,
    SYS_kexec_load,
    SYS_reboot,
    SYS_acct,
    SYS_swapon,
    SYS_swapoff,
    SYS_quotactl,
    SYS_fanotify_init,
    SYS_memfd_create,
};

bool InstallFilter() {
  std::vector<sock_filter> prog;
  const auto stmt = [&](uint16_t code, uint32_t k) { prog.push_back(BPF_STMT(code, k)); };
  const auto jump = [&](uint16_t code, uint32_t k, uint8_t jt, uint8_t jf) {
    prog.push_back(BPF_JUMP(code, k, jt, jf));
  };
  constexpr uint32_t kErrno = SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA);
  // Another architecture's calls (the i386 entry on x86-64) kill it: their numbers differ.
  stmt(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, arch));
  jump(BPF_JMP | BPF_JEQ | BPF_K, kArch, 1, 0);
  stmt(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS);
  stmt(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr));
#if defined(__x86_64__)
  // The x32 calls (bit 30) are refused.
  jump(BPF_JMP | BPF_JGE | BPF_K, 0x40000000, 0, 1);
  stmt(BPF_RET | BPF_K, kErrno);
#endif
  // tgkill only to itself (abort(3) raises SIGABRT with it; the daemon is another process).
  jump(BPF_JMP | BPF_JEQ | BPF_K, SYS_tgkill, 0, 4);
  stmt(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, args[0]));
  jump(BPF_JMP | BPF_JEQ | BPF_K, static_cast<uint32_t>(::getpid()), 0, 1);
  stmt(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
  stmt(BPF_RET | BPF_K, kErrno);
  const size_t n = std::size(kDenied);
  for (size_t i = 0; i < n; ++i) {
    // True: past the remaining checks and the allow, to the refusal.
    jump(BPF_JMP | BPF_JEQ | BPF_K, static_cast<uint32_t>(kDenied[i]), static_cast<uint8_t>(n - i),
         0);
  }
  stmt(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
  stmt(BPF_RET | BPF_K, kErrno);
  sock_fprog fprog{static_cast<unsigned short>(prog.size()), prog.data()};
  return ::syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &fprog) == 0 ||
         ::prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &fprog) == 0;
}

std::string Errno(const char* what) { return std::string(what) + ": " + std::strerror(errno); }

}  // namespace

std::vector<std::string> EnterSandbox(const SandboxSettings& s, bool* filtered) {
  static_assert(std::size(kDenied) < 250, "jump offsets are 8 bits");
  std::vector<std::string> missing;
  if (::geteuid() == 0) {
    // Root: becomes the file owner's user (or nobody), which drops every capability.
    if (::setgroups(0, nullptr) != 0) missing.push_back(Errno("setgroups"));
    if (::setresgid(s.gid, s.gid, s.gid) != 0) missing.push_back(Errno("setresgid"));
    if (::setresuid(s.uid, s.uid, s.uid) != 0) missing.push_back(Errno("setresuid"));
  }
  ::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2] = {};
  if (::syscall(SYS_capget, &header, data) == 0 &&
      (data[0].effective | data[0].permitted | data[1].effective | data[1].permitted) != 0) {
    __user_cap_data_struct none[2] = {};
    if (::syscall(SYS_capset, &header, none) != 0) missing.push_back(Errno("capset"));
  }
  if (::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0) missing.push_back(Errno("not dumpable"));
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) missing.push_back(Errno("no_new_privs"));
  rlimit core{0, 0};
  ::setrlimit(RLIMIT_CORE, &core);
  if (s.address_space_bytes != 0) {
    rlimit as{s.address_space_bytes, s.address_space_bytes};
    if (::setrlimit(RLIMIT_AS, &as) != 0) missing.push_back(Errno("address space limit"));
  }
  *filtered = InstallFilter();
  if (!*filtered) missing.push_back(Errno("seccomp filter"));
  return missing;
}

bool LimitCpuFromNow(uint64_t seconds) {
  rusage ru{};
  rlimit cpu{};
  if (::getrusage(RUSAGE_SELF, &ru) != 0 || ::getrlimit(RLIMIT_CPU, &cpu) != 0) return false;
  // The soft limit only: an unprivileged process cannot raise a hard limit again. (A worker
  // taken over could raise it too; the daemon's own deadline does not depend on it.)
  const uint64_t used = static_cast<uint64_t>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) + 1;
  cpu.rlim_cur = used + seconds;
  if (cpu.rlim_max != RLIM_INFINITY && cpu.rlim_cur > cpu.rlim_max) cpu.rlim_cur = cpu.rlim_max;
  return ::setrlimit(RLIMIT_CPU, &cpu) == 0;
}

}  // namespace jitsym::parse_worker
