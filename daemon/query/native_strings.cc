#include "daemon/query/native_strings.h"

#include <algorithm>

#include "daemon/native/module_cache.h"

namespace jitsym::query {

void NativeStrings::TouchLocked(const std::string& key) {
  order_.remove(key);
  order_.push_back(key);
}

NativeStrings::Known NativeStrings::KnownOf(const struct stat& st) {
  std::lock_guard lock(mu_);
  auto it = files_.find(native::FileVersionKey(st));
  if (it == files_.end() || it->second.tables.empty()) return {};
  const Table& t = *it->second.tables.back();
  return {t.token, static_cast<uint32_t>(t.ids.size())};
}

Result<std::shared_ptr<const NativeStrings::Table>> NativeStrings::Merge(
    const struct stat& st, uint64_t token, uint32_t base, std::vector<std::string>&& strings,
    const std::string& build_id, std::vector<std::string_view>* ids) {
  const std::string key = native::FileVersionKey(st);
  std::lock_guard lock(mu_);
  File& file = files_[key];
  TouchLocked(key);
  auto it = std::find_if(file.tables.begin(), file.tables.end(),
                         [&](const auto& t) { return t->token == token; });
  std::shared_ptr<Table> table;
  if (it != file.tables.end()) {
    table = *it;
    file.tables.erase(it);
  }
  if (base == 1 && (!table || table->bytes > kMaxTableBytes)) {
    if (table) file.bytes -= std::min(file.bytes, table->bytes);
    table = std::make_shared<Table>();  // a worker's module anew (answers keep the old one)
    table->token = token;
    table->build_id = build_id;
  }
  if (!table || base == 0 || base > table->ids.size()) {
    if (table) file.tables.push_back(table);
    return MakeError(ErrorKind::kMalformed, "its reader sent strings from id " +
                                                std::to_string(base) + " of a table of " +
                                                std::to_string(table ? table->ids.size() : 0));
  }
  file.tables.push_back(table);
  if (file.tables.size() > 4) {
    file.bytes -= std::min(file.bytes, file.tables.front()->bytes);
    file.tables.erase(file.tables.begin());
  }
  // A reply to a request made before another's reply added some of them: those are skipped
  // (a worker gives the same id the same string for as long as its token holds).
  size_t added = 0;
  for (size_t k = table->ids.size() - base; k < strings.size(); ++k) {
    added += strings[k].size() + 48;  // the string, its node and its view, about
    table->ids.push_back(table->storage.emplace_back(std::move(strings[k])));
  }
  table->bytes += added;
  file.bytes += added;
  bytes_ += added;
  *ids = table->ids;
  while (bytes_ > kMaxBytes && order_.size() > 1) {
    auto victim = files_.find(order_.front());
    if (victim != files_.end()) {
      bytes_ -= std::min(bytes_, victim->second.bytes);
      files_.erase(victim);
    }
    order_.pop_front();
  }
  return std::shared_ptr<const Table>(table);
}

size_t NativeStrings::Bytes() {
  std::lock_guard lock(mu_);
  return bytes_;
}

}  // namespace jitsym::query
