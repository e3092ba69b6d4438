// How jitsymd shares its file descriptors: every followed file and every client connection holds
// one, so without a plan a user who opens enough of either takes the descriptors the daemon
// needs for itself (a restart that cannot create its signal pipe aborts). The budget keeps a
// fixed reserve for the daemon's own use and splits the rest between followed files and
// connections, each with a per-user share, so no single user can reach the last descriptor.
#ifndef JITSYM_DAEMON_CONFIG_DESCRIPTOR_BUDGET_H_
#define JITSYM_DAEMON_CONFIG_DESCRIPTOR_BUDGET_H_

#include <cstdint>
#include <string>
#include <vector>

namespace jitsym::config {

// Descriptors kept for the daemon itself: listening socket, epoll and signal pipes, inotify,
// the ELF/DWARF files native lookups open, /proc reads, the log, systemd notifications.
inline constexpr uint64_t kDescriptorReserve = 256;

// What the settings ask for; each is an upper bound the descriptor limit may lower.
struct DescriptorWishes {
  uint64_t connections = 1024;     // max-connections
  uint64_t user_connections = 64;  // max-user-connections
  uint64_t total_files = 8192;     // limit-total-files
  uint64_t user_files = 1024;      // limit-user-files
};

struct DescriptorBudget {
  uint64_t nofile = 0;   // the soft RLIMIT_NOFILE the budget was computed from
  uint64_t reserve = 0;  // kept for the daemon's own use
  uint64_t connections = 0;
  uint64_t user_connections = 0;
  uint64_t total_files = 0;
  uint64_t user_files = 0;
};

// Pure: the descriptors left after the reserve go a quarter to connections and three quarters
// to followed files (files are what the daemon exists for; connections are short-lived), each
// capped by its wish. A user's share of each is at most half of it, so that two users, or a
// user and root, always find room. Every number is at least 1, even under a tiny limit.
DescriptorBudget ComputeDescriptorBudget(uint64_t nofile, const DescriptorWishes& wishes);

// "nofile 524288 (reserve 256): 1024 connections (64 per user), 8192 files (1024 per user)".
std::string FormatDescriptorBudget(const DescriptorBudget& budget);

// One line per setting the limit lowered below what was asked, with both numbers and what to
// do: "limit-user-files lowered from 1024 to 96 to fit 512 descriptors (raise LimitNOFILE=)".
// Empty when every wish fits. Logged as a warning at start-up: a lowered per-user file limit
// leaves a user's further processes unindexed.
std::vector<std::string> DescribeLoweredLimits(const DescriptorWishes& wishes,
                                               const DescriptorBudget& budget);

}  // namespace jitsym::config

#endif  // JITSYM_DAEMON_CONFIG_DESCRIPTOR_BUDGET_H_
