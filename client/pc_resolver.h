// Naming a profile's pcs through jitsymd, for `jitsym pprof` (gperftools and profile.proto
// inputs): batched lookups by pid (JIT code) or by ELF image and file offset (native code), on
// one connection, with every answer counted for the summary.
#ifndef JITSYM_CLIENT_PC_RESOLVER_H_
#define JITSYM_CLIENT_PC_RESOLVER_H_

#include <algorithm>
#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "client/frame_summary.h"
#include "client/image_files.h"
#include "proto/client_connection.h"
#include "proto/protocol.h"

namespace jitsym::client {

// One function at a pc: the function itself or one inlined into it.
struct NamedFrame {
  std::string name;
  std::string file;  // source position, when jitsymd knows it
  uint32_t line = 0;
  uint32_t column = 0;
};

// What jitsymd said about a pc, copied out of its answer.
struct NamedPc {
  std::vector<NamedFrame> frames;  // innermost first: the inlined ones, then their caller
  proto::Origin origin = proto::Origin::kUnknown;
  std::string build_id;  // of the ELF image, for native code
};

NamedPc NamePc(const proto::LookupResult& r);

// Whether a mapping's file holds native code jitsymd reads as an ELF image (not anonymous or
// JIT memory: memfd, /dev, [pseudo] files, or nothing).
bool IsNativeFile(std::string_view path);

// Resolves pcs with batched requests on one connection; per-request errors leave pcs unnamed
// (an ELF image the daemon cannot read must not stop the JIT names).
class PcResolver {
 public:
  explicit PcResolver(proto::ClientConnection& connection) : connection_(connection) {}

  // Asks `prototype` (pid or image) about `addrs`; for each found answer calls
  // done(index, result). Every answer, found or not, is counted in *summary. False (after
  // saying why on stderr) when the connection fails.
  template <typename Done>
  bool Ask(const proto::LookupRequest& prototype, const std::vector<uint64_t>& addrs, Done done,
           FrameSummary* summary) {
    for (size_t i = 0; i < addrs.size(); i += kBatch) {
      const size_t n = std::min(kBatch, addrs.size() - i);
      const proto::LookupResponse* results = Call(prototype, addrs, i, n, summary);
      if (results == nullptr) {
        if (failed_) return false;
        continue;  // refused as a whole: counted
      }
      for (size_t k = 0; k < n; ++k) {
        const proto::LookupResult& r = results->results[k];
        if (r.found) {
          done(i + k, r);
          summary->Named(r);
        } else {
          Missed(prototype, r, summary);
        }
      }
    }
    return true;
  }

  // unknown_process or permission_denied when the pid asked about is one of those.
  proto::Reason process_problem() const { return process_problem_; }
  // The exit status for that (lookup's: 3 unknown process, 4 denied), else 0.
  int ExitStatus() const;

 private:
  static constexpr size_t kBatch = 8192;

  // One request for addrs[i, i + n): the answers, or null when the request was refused (the
  // pcs are counted unknown) or the connection failed (failed_ is set).
  const proto::LookupResponse* Call(const proto::LookupRequest& prototype,
                                    const std::vector<uint64_t>& addrs, size_t i, size_t n,
                                    FrameSummary* summary);
  void Missed(const proto::LookupRequest& prototype, const proto::LookupResult& r,
              FrameSummary* summary);

  proto::ClientConnection& connection_;
  ImageFiles images_;  // the files image lookups name, opened here
  proto::Response response_;
  std::set<std::string> reported_;
  proto::Reason process_problem_ = proto::Reason::kNone;
  bool failed_ = false;
};

}  // namespace jitsym::client

#endif  // JITSYM_CLIENT_PC_RESOLVER_H_
