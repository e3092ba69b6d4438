#include "daemon/query/native_strings.h"

#include <algorithm>

namespace jitsym::query {

std::shared_ptr<NativeStrings::Store> NativeStrings::Intern(
    const struct stat& st, const std::vector<std::string>& strings,
    std::vector<std::string_view>* views) {
  const std::string key = std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino) + ":" +
                          std::to_string(st.st_size) + ":" +
                          std::to_string(st.st_mtim.tv_sec * 1000000000ull + st.st_mtim.tv_nsec);
  std::shared_ptr<Store> store;
  {
    std::lock_guard lock(mu_);
    std::shared_ptr<Store>& slot = stores_[key];
    if (!slot || slot->bytes > kMaxStoreBytes) {
      if (slot) bytes_ -= std::min(bytes_, slot->bytes);
      slot = std::make_shared<Store>();
    }
    store = slot;
    order_.remove(key);
    order_.push_back(key);
  }
  size_t before, after;
  {
    std::lock_guard lock(store->mu);
    before = store->bytes;
    views->clear();
    views->reserve(strings.size());
    for (const std::string& s : strings) {
      auto [it, inserted] = store->strings.insert(s);
      if (inserted) store->bytes += s.size() + 48;  // the node and its hash slot, about
      views->push_back(*it);
    }
    after = store->bytes;
  }
  std::lock_guard lock(mu_);
  bytes_ += after - before;
  while (bytes_ > kMaxBytes && order_.size() > 1) {
    auto it = stores_.find(order_.front());
    if (it != stores_.end()) {
      bytes_ -= std::min(bytes_, it->second->bytes);
      stores_.erase(it);
    }
    order_.pop_front();
  }
  return store;
}

size_t NativeStrings::Bytes() {
  std::lock_guard lock(mu_);
  return bytes_;
}

}  // namespace jitsym::query
