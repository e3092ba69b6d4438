// The lookup chain's common parts: see resolver.h.
#include "daemon/query/resolver.h"

#include <algorithm>

namespace jitsym::query {

void ToWire(const Answer& a, uint64_t addr, uint32_t fields, proto::LookupResult* r) {
  static constexpr std::string_view kUnknown = "??";
  r->found = true;
  r->name = a.name;
  r->start = a.start;
  r->offset = addr - a.start;
  r->size = a.size;
  r->origin = a.origin;
  r->source = a.source;
  r->image = (fields & proto::kFieldImage) ? a.image : std::string_view();
  r->build_id = (fields & proto::kFieldBuildId) ? a.build_id : std::string_view();
  r->clone = (fields & proto::kFieldClone) ? a.clone : std::string_view();
  r->file = a.file;
  r->line = a.line;
  r->column = a.column;
  r->loaded_at = a.loaded_at;
  r->incarnation = a.incarnation;
  r->reason = a.reason;
  r->detail.assign(a.detail);
  r->frames.clear();
  if (fields & proto::kFieldFrames) {
    r->frames.resize(a.frames.size());
    for (size_t k = 0; k < a.frames.size(); ++k) {
      const native::NativeFrame& f = a.frames[k];
      proto::Frame& out = r->frames[k];
      out.name = f.name.empty() ? kUnknown : f.name;
      out.file = f.file;
      out.line = f.line;
      out.column = f.column;
    }
  }
}

LookupBatch::LookupBatch(const proto::LookupRequest& request, const index::IndexView& view,
                         const security::PeerAccess& access, proto::LookupResponse* out)
    : request_(request),
      view_(view),
      access_(access),
      finder_(view, static_cast<uint32_t>(request.pid.value_or(0))),
      out_(out) {
  if (request.origin) origin_ = proto::OriginFromName(*request.origin);
  const size_t n = request.addrs.size();
  // Results may come from an earlier slice (QueryEngine::Recycle): default again, storage kept.
  for (size_t i = 0; i < std::min(n, out->results.size()); ++i) {
    proto::ResetLookupResult(&out->results[i]);
  }
  out->results.resize(n);
  state_.resize(n);
  pending_.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    const proto::AddressQuery& q = request.addrs[i];
    proto::LookupResult& r = out->results[i];
    r.addr = q.addr;
    if (!q.error.empty()) {
      r.error = q.error;
      state_[i] = State::kInputError;
    } else {
      state_[i] = State::kPending;
      pending_.push_back(i);
    }
  }
}

void LookupBatch::Answer(size_t i, const query::Answer& answer) {
  ToWire(answer, request_.addrs[i].addr, request_.fields, &out_->results[i]);
  state_[i] = State::kDone;
  answered_any_.store(true, std::memory_order_relaxed);
}

void LookupBatch::Deny(size_t i) {
  proto::LookupResult& r = out_->results[i];
  const uint64_t addr = r.addr;
  r = proto::LookupResult{};
  r.addr = addr;
  r.error = kDeniedError;
  r.reason = proto::Reason::kPermissionDenied;
  state_[i] = State::kDone;
}

void LookupBatch::Miss(size_t i, proto::Reason reason, std::string detail) {
  proto::LookupResult& r = out_->results[i];
  r.reason = reason;
  r.detail = std::move(detail);
  state_[i] = State::kDone;
  missed_.push_back(i);
}

void LookupBatch::NoteMiss(size_t i, proto::Reason reason, std::string where) {
  if (hints_.empty()) hints_.resize(state_.size());
  hints_[i] = {reason, std::move(where)};
}

void LookupBatch::Hide(size_t i) {
  state_[i] = State::kHidden;
  hidden_.push_back(i);
}

void LookupBatch::DenyHidden() {
  for (size_t i : hidden_) Deny(i);
  hidden_.clear();
}

void LookupBatch::DenyPending() {
  for (size_t i : pending_) {
    if (state_[i] == State::kPending) Deny(i);
  }
}

void LookupBatch::RestoreHidden() {
  if (hidden_.empty()) return;
  for (size_t i : hidden_) state_[i] = State::kPending;
  pending_.insert(pending_.end(), hidden_.begin(), hidden_.end());
  std::sort(pending_.begin(), pending_.end());
  hidden_.clear();
}

void LookupBatch::Advance() {
  std::erase_if(pending_, [&](size_t i) { return state_[i] != State::kPending; });
}

std::shared_ptr<const void> LookupBatch::TakeKeepalive(std::shared_ptr<const void> base) {
  if (keep_.empty()) return base;
  keep_.push_back(std::move(base));
  return std::make_shared<const std::vector<std::shared_ptr<const void>>>(std::move(keep_));
}

std::optional<proto::ErrorResponse> RunChain(std::span<Resolver* const> chain, LookupBatch& batch) {
  for (Resolver* resolver : chain) {
    if (batch.pending().empty() && !batch.has_hidden()) break;
    if (auto error = resolver->Resolve(batch)) return error;
    batch.Advance();
  }
  return std::nullopt;
}

}  // namespace jitsym::query
