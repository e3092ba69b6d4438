// Who a uid is for the daemon's quotas: a person. On a host with user namespaces one login
// owns many uids: `newuidmap` lets a user map the subordinate uids /etc/subuid gives him
// (Debian's useradd gives each user 65,536) into a namespace of his own, and every file his
// containers write and every connection they make carries one of those uids. Counting
// quotas per uid would give him tens of thousands of shares; counted per person, the uids of
// his range are his.
//
// A uid of a user namespace is always seen as its uid in the initial namespace (the kernel
// translates SO_PEERCRED and st_uid for the daemon), so the ranges of /etc/subuid settle it.
//
//   /etc/subuid := line*
//   line        := (NAME | UID) ":" FIRST ":" COUNT "\n"    ('#' comments and blank lines skipped)
//
// Access rules do not use persons: a subordinate uid is not its owner for what it may read
// (its owner may already act as it, not the other way round).
#ifndef JITSYM_DAEMON_SECURITY_ACCOUNTS_H_
#define JITSYM_DAEMON_SECURITY_ACCOUNTS_H_

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace jitsym::security {

// [first, first + count) belongs to `owner`.
struct SubordinateRange {
  uint32_t first = 0;
  uint64_t count = 0;
  uint32_t owner = 0;
};

struct SubordinateIds {
  std::vector<SubordinateRange> ranges;  // in file order
  // Lines that were not understood or name no user: "line 3: ...", for one log line.
  std::vector<std::string> problems;
};

// Pure: the ranges of /etc/subuid text. `resolve` turns a user name into its uid (nullopt: no
// such user, the line is a problem); a numeric first field is a uid as it stands.
SubordinateIds ParseSubordinateIds(
    std::string_view text, const std::function<std::optional<uint32_t>(std::string_view)>& resolve);

// An immutable uid -> person table built from the ranges.
class PersonMap {
 public:
  PersonMap() = default;
  // A uid in several ranges (a misconfigured file) belongs to the range listed first. Ranges
  // owned by root, or holding uid 0 or their owner's own uid, are dropped: root and a login are
  // persons of their own, and root's containers get no exemption from root's.
  explicit PersonMap(const std::vector<SubordinateRange>& ranges);

  // The owner of the range that holds uid, else uid itself.
  uint32_t PersonOf(uint32_t uid) const;
  size_t ranges() const { return starts_.size(); }

 private:
  // Disjoint pieces sorted by start: [starts_[i], ends_[i]) belongs to owners_[i].
  std::vector<uint64_t> starts_, ends_;
  std::vector<uint32_t> owners_;
};

// The host's table, read from /etc/subuid and read again (at most every recheck_ms, and only
// when the file changed) as users are added. Thread-safe; a lookup takes a mutex for a pointer
// copy and does a binary search.
class Accounts {
 public:
  struct Options {
    std::string subuid_path = "/etc/subuid";
    uint64_t recheck_ms = 5000;
    // User names to uids (getpwnam_r); tests replace it.
    std::function<std::optional<uint32_t>(std::string_view)> resolve;
  };
  Accounts() : Accounts(Options{}) {}
  explicit Accounts(Options options);

  uint32_t PersonOf(uint32_t uid);
  std::shared_ptr<const PersonMap> Current();

 private:
  void Refresh();  // with mu_ held

  Options options_;
  std::mutex mu_;
  std::shared_ptr<const PersonMap> map_;  // guarded by mu_
  uint64_t checked_ns_ = 0;               // guarded by mu_
  bool checked_ = false;                  // guarded by mu_
  // The file as last read (or its absence): read again only when this changes.
  dev_t dev_ = 0;
  ino_t ino_ = 0;
  int64_t size_ = -1;
  int64_t mtime_ns_ = -1;
  int64_t ctime_ns_ = -1;
};

}  // namespace jitsym::security

#endif  // JITSYM_DAEMON_SECURITY_ACCOUNTS_H_
