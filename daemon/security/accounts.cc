// Persons from /etc/subuid (see accounts.h).
#include "daemon/security/accounts.h"

#include <pwd.h>
#include <sys/stat.h>

#include <algorithm>
#include <charconv>
#include <map>

#include "daemon/os/small_file.h"
#include "daemon/util/clock.h"
#include "daemon/util/log.h"

namespace jitsym::security {
namespace {

// /etc/subuid of a host with a user per line: far below this.
constexpr size_t kMaxSubuidBytes = 16u << 20;
constexpr size_t kMaxProblemsKept = 8;

std::optional<uint64_t> ParseNumber(std::string_view s) {
  uint64_t value = 0;
  if (s.empty() || s.size() > 19) return std::nullopt;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return value;
}

std::optional<uint32_t> ResolveByPasswd(std::string_view name) {
  const std::string n(name);
  std::vector<char> buf(4096);
  passwd pw{};
  passwd* result = nullptr;
  if (::getpwnam_r(n.c_str(), &pw, buf.data(), buf.size(), &result) != 0 || result == nullptr) {
    return std::nullopt;
  }
  return static_cast<uint32_t>(result->pw_uid);
}

}  // namespace

SubordinateIds ParseSubordinateIds(
    std::string_view text,
    const std::function<std::optional<uint32_t>(std::string_view)>& resolve) {
  SubordinateIds out;
  size_t line_no = 0;
  auto problem = [&](std::string what) {
    if (out.problems.size() < kMaxProblemsKept) {
      out.problems.push_back("line " + std::to_string(line_no) + ": " + std::move(what));
    }
  };
  while (!text.empty()) {
    ++line_no;
    const size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.remove_suffix(1);
    if (line.empty() || line.front() == '#') continue;
    const size_t c1 = line.find(':');
    const size_t c2 = c1 == std::string_view::npos ? c1 : line.find(':', c1 + 1);
    if (c2 == std::string_view::npos || line.find(':', c2 + 1) != std::string_view::npos) {
      problem("not NAME:FIRST:COUNT");
      continue;
    }
    const std::string_view who = line.substr(0, c1);
    const std::optional<uint64_t> first = ParseNumber(line.substr(c1 + 1, c2 - c1 - 1));
    const std::optional<uint64_t> count = ParseNumber(line.substr(c2 + 1));
    if (who.empty() || !first || !count || *first > UINT32_MAX || *count == 0 ||
        *count > (uint64_t{1} << 32) - *first) {
      problem("not NAME:FIRST:COUNT with a range of 32-bit uids");
      continue;
    }
    std::optional<uint32_t> owner;
    if (const std::optional<uint64_t> numeric = ParseNumber(who)) {
      if (*numeric <= UINT32_MAX) owner = static_cast<uint32_t>(*numeric);
    } else {
      owner = resolve(who);
    }
    if (!owner) {
      problem("no user '" + std::string(who) + "'");
      continue;
    }
    out.ranges.push_back({static_cast<uint32_t>(*first), *count, *owner});
  }
  return out;
}

PersonMap::PersonMap(const std::vector<SubordinateRange>& ranges) {
  // Disjoint pieces, earlier lines first: a piece is added only where no earlier range lies.
  std::map<uint64_t, std::pair<uint64_t, uint32_t>> pieces;  // start -> (end, owner)
  for (const SubordinateRange& r : ranges) {
    const uint64_t end = uint64_t{r.first} + r.count;
    // Root is a person of its own, and so is a login; root's own ranges are not merged into
    // it (root has no per-user share: its containers' uids would have none either).
    if (r.first == 0 || r.owner == 0 || (r.first <= r.owner && r.owner < end)) continue;
    uint64_t at = r.first;
    auto it = pieces.upper_bound(at);
    if (it != pieces.begin()) {
      auto prev = std::prev(it);
      if (prev->second.first > at) at = prev->second.first;
    }
    while (at < end) {
      const uint64_t next = it == pieces.end() ? end : std::min(end, it->first);
      if (at < next) pieces.emplace(at, std::make_pair(next, r.owner));
      if (it == pieces.end() || it->first >= end) break;
      at = std::max(at, it->second.first);
      ++it;
    }
  }
  for (const auto& [start, piece] : pieces) {
    starts_.push_back(start);
    ends_.push_back(piece.first);
    owners_.push_back(piece.second);
  }
}

uint32_t PersonMap::PersonOf(uint32_t uid) const {
  auto it = std::upper_bound(starts_.begin(), starts_.end(), uint64_t{uid});
  if (it == starts_.begin()) return uid;
  const size_t i = static_cast<size_t>(it - starts_.begin()) - 1;
  return uid < ends_[i] ? owners_[i] : uid;
}

Accounts::Accounts(Options options)
    : options_(std::move(options)), map_(std::make_shared<const PersonMap>()) {
  if (!options_.resolve) options_.resolve = &ResolveByPasswd;
}

uint32_t Accounts::PersonOf(uint32_t uid) {
  if (uid == 0) return 0;
  return Current()->PersonOf(uid);
}

std::shared_ptr<const PersonMap> Accounts::Current() {
  std::lock_guard lock(mu_);
  const uint64_t now = MonotonicNowNs();
  if (!checked_ || now - checked_ns_ >= options_.recheck_ms * 1000000ull) {
    checked_ = true;
    checked_ns_ = now;
    Refresh();
  }
  return map_;
}

void Accounts::Refresh() {
  struct stat st {};
  const bool present = ::stat(options_.subuid_path.c_str(), &st) == 0;
  const int64_t size = present ? static_cast<int64_t>(st.st_size) : -2;
  const int64_t mtime = present ? st.st_mtim.tv_sec * 1000000000ll + st.st_mtim.tv_nsec : -2;
  const int64_t ctime = present ? st.st_ctim.tv_sec * 1000000000ll + st.st_ctim.tv_nsec : -2;
  if (present == (size_ != -2) && st.st_dev == dev_ && st.st_ino == ino_ && size == size_ &&
      mtime == mtime_ns_ && ctime == ctime_ns_) {
    return;
  }
  dev_ = st.st_dev;
  ino_ = st.st_ino;
  size_ = size;
  mtime_ns_ = mtime;
  ctime_ns_ = ctime;
  if (!present) {
    map_ = std::make_shared<const PersonMap>();
    return;
  }
  SmallFileOptions read_options;
  read_options.max_bytes = kMaxSubuidBytes;
  // Only root may say whose uids these are.
  read_options.accept = [](const struct stat& s) { return s.st_uid == 0; };
  SmallFileError error;
  auto file = os::ReadSmallFile(options_.subuid_path, read_options, &error);
  if (!file) {
    JITSYM_LOG(kWarning, options_.subuid_path,
               error.kind == SmallFileError::kRefused ? ": not owned by root" : ": cannot be read",
               "; quotas count every uid on its own");
    map_ = std::make_shared<const PersonMap>();
    return;
  }
  SubordinateIds ids = ParseSubordinateIds(file->bytes, options_.resolve);
  for (const std::string& p : ids.problems) {
    JITSYM_LOG(kWarning, options_.subuid_path, ": ", p, "; skipped");
  }
  auto map = std::make_shared<const PersonMap>(ids.ranges);
  JITSYM_LOG(kInfo, options_.subuid_path, ": ", map->ranges(),
             " ranges of subordinate uids count against their owners' quotas");
  map_ = std::move(map);
}

}  // namespace jitsym::security
