// Where the names and file names of native answers live in the daemon: one store per file
// (by identity), holding each distinct string once, for as long as answers may point into it.
//
// Answers borrow their strings, and a connection's string table knows a string by where its
// bytes are (proto/string_interner.h): a file's names must stay at one address from answer to
// answer, although each answer comes from a parser's reply of its own. Bounded: above
// kMaxBytes in all, the least recently used stores are dropped (answers still using one keep
// it), and a store that alone grows past kMaxStoreBytes starts anew.
#ifndef JITSYM_DAEMON_QUERY_NATIVE_STRINGS_H_
#define JITSYM_DAEMON_QUERY_NATIVE_STRINGS_H_

#include <sys/stat.h>

#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

namespace jitsym::query {

class NativeStrings {
 public:
  static constexpr size_t kMaxBytes = size_t{256} << 20;
  static constexpr size_t kMaxStoreBytes = size_t{64} << 20;

  struct Store {
    std::mutex mu;
    std::unordered_set<std::string> strings;  // nodes do not move: views stay valid
    size_t bytes = 0;
  };

  // The store of the file `st` describes, and `strings` put into it: views[k] is strings[k].
  std::shared_ptr<Store> Intern(const struct stat& st, const std::vector<std::string>& strings,
                                std::vector<std::string_view>* views);
  size_t Bytes();

 private:
  std::mutex mu_;
  std::map<std::string, std::shared_ptr<Store>> stores_;
  std::list<std::string> order_;  // least recently used first
  size_t bytes_ = 0;              // as of the last Intern of each store
};

}  // namespace jitsym::query

#endif  // JITSYM_DAEMON_QUERY_NATIVE_STRINGS_H_
