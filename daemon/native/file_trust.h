// Whether a file may be opened by libdw itself, which trusts it not to change: it maps what it
// opens outside any MappingGuard (a mapped file that shrinks raises SIGBUS on the next read past
// its end) and blocks on a FIFO. The rule has one owner, here: only a file no user but root can
// truncate or replace, on a file system that is not a user's FUSE server. Caller: split_units (an
// absolute DW_AT_dwo_name, which libdw opens as it is). Files the daemon opens itself are mapped
// under a MappingGuard instead (elf_file.h).
#ifndef JITSYM_DAEMON_NATIVE_FILE_TRUST_H_
#define JITSYM_DAEMON_NATIVE_FILE_TRUST_H_

#include <cstdint>
#include <string>

namespace jitsym::native {

// What the rule looks at, for one file or directory.
struct FileFacts {
  uint32_t uid = 0;
  uint32_t mode = 0;    // st_mode
  int64_t fs_type = 0;  // statfs f_type
};

// The rule: owned by root, not writable by group or others (a symbolic link's own mode bits are
// not used by the system), not on FUSE. Pure. *why (when not
// null) says what fails it.
bool OwnerCannotChange(const FileFacts& f, std::string* why = nullptr);

// The rule for the file open as `fd`.
bool FdOwnerCannotChange(int fd);

// The rule for `path` (absolute) and every directory and link on the way to it, as given and as
// resolved (a directory a user can write to lets him replace the file). False and *why
// ("PATH: owned by uid 1000") otherwise, or when it cannot be resolved.
bool PathOwnerCannotChange(const std::string& path, std::string* why);

}  // namespace jitsym::native

#endif  // JITSYM_DAEMON_NATIVE_FILE_TRUST_H_
