// A lookup as a chain of resolvers. A pid lookup asks the JIT index first, then the ReadyToRun
// images the process maps, then its ELF mappings; each resolver sees only the addresses the
// ones before left unanswered (LookupBatch::pending) and answers what it can. What they have in
// common lives here once:
// - per-address input errors (an unparsable address) are applied when the batch is made, and
//   such addresses never reach a resolver;
// - answers are given as an Answer (what was found, in the caller's address space) and turned
//   into wire results in one place (ToWire);
// - what answers borrow (index views, modules, image tables) is kept with the response.
#ifndef JITSYM_DAEMON_QUERY_RESOLVER_H_
#define JITSYM_DAEMON_QUERY_RESOLVER_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/index/index_view.h"
#include "daemon/native/native_module.h"
#include "daemon/query/process_finder.h"
#include "daemon/security/peer_access.h"
#include "proto/protocol.h"

namespace jitsym::query {

// The per-address error for a process or image the client may not query.
inline constexpr std::string_view kDeniedError = "permission denied";

// What a resolver found for one address. Strings are views into what the resolver keeps alive
// with LookupBatch::Keep (or into the index view).
struct Answer {
  std::string_view name;
  uint64_t start = 0;  // in the address space asked about (offset = addr - start)
  uint64_t size = 0;
  proto::Origin origin = proto::Origin::kUnknown;
  std::string_view source;  // the file the answer was read from
  std::string_view image;   // image name or path
  std::string_view build_id;
  std::string_view file;  // source position, when known
  uint32_t line = 0;
  uint32_t column = 0;
  std::optional<uint64_t> loaded_at;
  std::optional<uint64_t> incarnation;
  std::span<const native::NativeFrame> frames;  // inlined frames, innermost first
  std::string_view clone;                       // native: the clone suffix, if any
  // A found answer that lacks what debug info would give (a split DWARF part is missing):
  // kNoDebugInfo and which file, for a person.
  proto::Reason reason = proto::Reason::kNone;
  std::string_view detail;
};

// The one place answers become wire results. Members the request's `fields` leave out are not
// built when that saves work (image, build id, frames); unnamed frames read "??".
void ToWire(const Answer& answer, uint64_t addr, uint32_t fields, proto::LookupResult* out);

// One lookup request (or one slice of it) on its way through the resolvers.
class LookupBatch {
 public:
  // Sizes out->results to the request and fills in every address and input error.
  LookupBatch(const proto::LookupRequest& request, const index::IndexView& view,
              const security::PeerAccess& access, proto::LookupResponse* out);

  const proto::LookupRequest& request() const { return request_; }
  const index::IndexView& view() const { return view_; }
  const security::PeerAccess& access() const { return access_; }
  // The pid of a pid request, as asked: it may be a thread id.
  uint32_t pid() const { return static_cast<uint32_t>(request_.pid.value_or(0)); }
  // Which incarnation the pid names at each time, and which live process (ProcessFinder): the
  // one rule every resolver follows.
  ProcessFinder& processes() { return finder_; }
  uint64_t addr(size_t i) const { return request_.addrs[i].addr; }
  // The time address i is asked about: its own, else the batch's.
  std::optional<uint64_t> time(size_t i) const {
    const std::optional<uint64_t>& t = request_.addrs[i].time;
    return t ? t : request_.time;
  }
  // Whether the request lets answers of this origin through ("origin").
  bool AllowsOrigin(proto::Origin origin) const {
    return !request_.origin || (origin_ && *origin_ == origin);
  }

  // The addresses (indexes into the request) no resolver has answered or denied yet, in
  // increasing index order. Stable while a resolver runs; Advance updates it.
  const std::vector<size_t>& pending() const { return pending_; }
  bool is_pending(size_t i) const { return state_[i] == State::kPending; }
  // Addresses set aside by Hide.
  bool has_hidden() const { return !hidden_.empty(); }

  // Several threads may answer different addresses at once (a native batch's halves).
  void Answer(size_t i, const query::Answer& answer);
  // Address i gets "permission denied".
  void Deny(size_t i);
  // Address i is not answered, for `reason` (see miss_reasons.h): it leaves pending.
  void Miss(size_t i, proto::Reason reason, std::string detail);
  // A resolver's finding about an address it could not answer, for ExplainMisses: e.g. it is
  // in a mapped image without symbols (reason) named `where`. The address stays pending.
  struct MissHint {
    proto::Reason reason = proto::Reason::kNone;
    std::string where;
  };
  void NoteMiss(size_t i, proto::Reason reason, std::string where);
  const MissHint* hint(size_t i) const {
    return i < hints_.size() && hints_[i].reason != proto::Reason::kNone ? &hints_[i] : nullptr;
  }
  bool is_input_error(size_t i) const { return state_[i] == State::kInputError; }
  size_t size() const { return state_.size(); }
  // Addresses given a reason by Miss, in order; and whether any address was answered.
  const std::vector<size_t>& missed() const { return missed_; }
  bool answered_any() const { return answered_any_.load(std::memory_order_relaxed); }
  proto::LookupResult& result(size_t i) { return out_->results[i]; }
  // Address i would be answered by an incarnation the client may not see: it is set aside
  // until the process decision (SettleProcessDenials) denies it or asks the next resolvers.
  void Hide(size_t i);
  void DenyHidden();
  void DenyPending();
  void RestoreHidden();  // hidden addresses are pending again
  // Keeps what answers borrow from alive as long as the response.
  void Keep(std::shared_ptr<const void> owner) { keep_.push_back(std::move(owner)); }

  // Drops what the last resolver answered or denied from pending().
  void Advance();
  // The response's keepalive: `base` (the index view) and everything kept.
  std::shared_ptr<const void> TakeKeepalive(std::shared_ptr<const void> base);

 private:
  enum class State : uint8_t { kInputError, kPending, kDone, kHidden };
  const proto::LookupRequest& request_;
  const index::IndexView& view_;
  const security::PeerAccess& access_;
  ProcessFinder finder_;
  proto::LookupResponse* out_;
  std::optional<proto::Origin> origin_;  // request_.origin, when it names a known origin
  std::vector<State> state_;
  std::vector<size_t> pending_;
  std::vector<size_t> hidden_;
  std::vector<MissHint> hints_;  // sized on the first NoteMiss
  std::vector<size_t> missed_;
  // Atomic: Answer may be called from several threads at once, for different addresses.
  std::atomic<bool> answered_any_ = false;
  std::vector<std::shared_ptr<const void>> keep_;
};

// One way of answering addresses.
class Resolver {
 public:
  virtual ~Resolver() = default;
  // Answers (or denies) what it can of batch.pending(). nullopt, or an error for the whole
  // request (then the response is that error).
  virtual std::optional<proto::ErrorResponse> Resolve(LookupBatch& batch) = 0;
};

// Runs the resolvers in order, each on what the ones before left; stops early once nothing is
// left. Returns the first whole-request error.
std::optional<proto::ErrorResponse> RunChain(std::span<Resolver* const> chain, LookupBatch& batch);

}  // namespace jitsym::query

#endif  // JITSYM_DAEMON_QUERY_RESOLVER_H_
