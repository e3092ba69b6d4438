// Native (ELF/DWARF) answers: "image" lookups in an ELF file (by path or build-id), and the
// addresses of a process that fall in a file-backed executable mapping and that no JIT source
// or ReadyToRun image answered. See docs/formats.md, "Native (ELF/DWARF)".
//
// Called concurrently by server threads. A process's executable mappings come from the per-pid
// snapshots (ProcessSnapshots) it shares with ImageLookup, re-read on a miss while the process
// lives (at most every 100 ms). This class opens the files (as the one mapped, or the one the
// access check examined) and hands them to a parse_worker::Parser: in the daemon, sandboxed
// worker processes of each file's owner (parse_worker/worker_pool.h), whose failures answer
// native_failed; in tests, this process.
#ifndef JITSYM_DAEMON_QUERY_NATIVE_LOOKUP_H_
#define JITSYM_DAEMON_QUERY_NATIVE_LOOKUP_H_

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "daemon/parse_worker/parser.h"
#include "daemon/parse_worker/worker_pool.h"
#include "daemon/query/native_strings.h"
#include "daemon/query/process_snapshots.h"
#include "daemon/query/resolver.h"
#include "daemon/security/peer_access.h"
#include "proto/protocol.h"

namespace jitsym::query {

struct NativeOptions {
  std::vector<std::string> debug_dirs = {"/usr/lib/debug"};  // jitsymd --debug-dir
  size_t cache_bytes = size_t{1} << 30;                      // jitsymd --debug-cache-mb
  // Read native files in sandboxed worker processes (`pool`), as the daemon does; false: in
  // this process (tests and tools).
  bool workers = false;
  parse_worker::PoolOptions pool;
};
// As a Resolver: the last step of a pid lookup, after the JIT index and the images.
class NativeLookup : public Resolver {
 public:
  // `processes`: what the processes map (shared with ImageLookup; outlives this).
  NativeLookup(NativeOptions options, ProcessSnapshots& processes);

  // Whether an "image" request is for an ELF file: it names a build-id, or its image is a path
  // (already walked and allowed: `walked`) to a regular file that starts with the ELF magic.
  // *unanswered: why that could not be told (its filesystem did not answer), else unchanged.
  static bool IsNativeImageRequest(const proto::LookupRequest& request,
                                   const security::WalkedPath* walked, std::string* unanswered);
  // An image request; nullopt on success, else the error to send. `walked`: the image path the
  // caller checked with access.CheckRead (only that file is opened); null for a build id, whose
  // candidate files are used only if the peer may read them.
  std::optional<proto::ErrorResponse> LookupImage(LookupBatch& batch,
                                                  const security::WalkedPath* walked);
  // A pid request: answers the pending addresses that fall in an executable mapping of a file,
  // for a peer that may see the process.
  std::optional<proto::ErrorResponse> Resolve(LookupBatch& batch) override;

  parse_worker::ParserStats ParserStats() { return parser_->Stats(); }

  struct Read;  // a file's answers, as the parser gave them

 private:
  using ExecMapping = ProcessSnapshot::ExecMapping;
  // The answers for `addrs` (virtual addresses, or file offsets) in the file at `path`, opened
  // here; with `expect`, only if it is still that file; with every inlined frame, or
  // (`all_frames` false: no one asked for frames) only the innermost, the source position. An
  // error for a file not read (its message names `path`; `*failed` when its reader failed
  // rather than the file). `name`, when not empty, is what the file is called instead of `path`
  // (a client's descriptor, /proc/PID/fd/N, is named by the client's path: its messages, and the
  // directory its debug link is looked for in).
  Result<std::shared_ptr<const Read>> ReadFile(const std::string& path,
                                               std::optional<native::FileId> expect,
                                               const std::vector<uint64_t>& addrs,
                                               bool file_offsets, bool all_frames, bool* failed,
                                               const std::string& name = {});

  std::unique_ptr<parse_worker::Parser> parser_;
  NativeStrings strings_;
  ProcessSnapshots& processes_;
  std::mutex build_ids_mu_;
  // (build-id, owner uid) -> a path of a file with that id, owned by that user.
  std::map<std::pair<std::string, uint32_t>, std::string> build_id_paths_;
  std::vector<std::string> debug_dirs_;
};

}  // namespace jitsym::query

#endif  // JITSYM_DAEMON_QUERY_NATIVE_LOOKUP_H_
