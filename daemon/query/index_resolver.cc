// The JIT index resolver: see index_resolver.h.
#include "daemon/query/index_resolver.h"

#include <vector>

namespace jitsym::query {

std::optional<proto::ErrorResponse> IndexResolver::Resolve(LookupBatch& batch) {
  const std::vector<size_t>& pending = batch.pending();
  std::vector<uint64_t> addrs;
  std::vector<size_t> where;
  std::vector<std::optional<index::Symbol>> found;
  // Consecutive addresses with the same time (a batch time, one sample's frames) go to the
  // index together, so the memory accesses of their lookups overlap.
  for (size_t p = 0; p < pending.size();) {
    const std::optional<uint64_t> time = batch.time(pending[p]);
    addrs.clear();
    where.clear();
    for (; p < pending.size() && batch.time(pending[p]) == time; ++p) {
      addrs.push_back(batch.addr(pending[p]));
      where.push_back(pending[p]);
    }
    const index::ProcessView* process = batch.processes().Find(time);  // the pid may be a thread id
    if (process == nullptr) continue;
    if (!batch.access().MaySeeProcess(process->uid)) {
      for (size_t i : where) batch.Hide(i);
      continue;
    }
    found.assign(addrs.size(), std::nullopt);
    // In precedence order: the first source that knows an address answers it.
    for (const auto& source : process->sources) {
      const proto::Origin origin = source->origin;
      if (!batch.AllowsOrigin(origin)) continue;
      source->code->FindBatch(addrs.data(), addrs.size(), time, found.data());
      for (size_t k = 0; k < addrs.size(); ++k) {
        if (!found[k] || !batch.is_pending(where[k])) continue;
        const index::Symbol& sym = *found[k];
        Answer a;
        a.name = sym.name;
        a.start = sym.start;
        a.size = sym.size;
        a.origin = origin;
        a.source = source->path;
        a.loaded_at = sym.loaded_at;
        a.incarnation = process->incarnation;
        if (!sym.file.empty() || sym.line != 0) {
          a.file = sym.file;
          a.line = sym.line;
          a.column = sym.column;
        }
        batch.Answer(where[k], a);
      }
    }
  }
  return std::nullopt;
}

}  // namespace jitsym::query
