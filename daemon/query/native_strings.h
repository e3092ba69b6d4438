// Where the names and file names of native answers live in the daemon: for each file (by
// identity) and each parse worker's module of it, the strings the worker has sent, by id.
//
// A worker numbers the strings of a module's answers once and sends each only once: a reply
// carries the strings the daemon does not have yet (the request says how many it has), and
// answers refer to strings by id. The strings stay at one address from answer to answer, as a
// connection's string table needs (proto/string_interner.h knows a string by its address).
// Bounded: above kMaxBytes in all, the least recently used files' tables are dropped (answers
// still using one keep it); a table that alone grows past kMaxTableBytes starts anew.
#ifndef JITSYM_DAEMON_QUERY_NATIVE_STRINGS_H_
#define JITSYM_DAEMON_QUERY_NATIVE_STRINGS_H_

#include <sys/stat.h>

#include <cstdint>
#include <deque>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/util/result.h"

namespace jitsym::query {

class NativeStrings {
 public:
  static constexpr size_t kMaxBytes = size_t{256} << 20;
  static constexpr size_t kMaxTableBytes = size_t{64} << 20;

  // One worker module's strings, by id (0 is ""). Strings never move once added.
  struct Table {
    uint64_t token = 0;
    std::deque<std::string> storage;
    std::vector<std::string_view> ids{std::string_view()};
    size_t bytes = 0;
    std::string build_id;  // the module's, set once
  };
  struct Known {
    uint64_t token = 0;  // 0: nothing known
    uint32_t count = 0;  // ids known, "" included
  };

  // What the daemon has of the file `st` describes, to tell its worker.
  Known KnownOf(const struct stat& st);
  // Adds a reply's strings (ids from `base` on) to the table of `token`, a new one when `base`
  // is 1. *ids receives every id's string, as of now. An error when the reply does not fit
  // what the daemon has (a worker saying what it never said).
  Result<std::shared_ptr<const Table>> Merge(const struct stat& st, uint64_t token, uint32_t base,
                                             std::vector<std::string>&& strings,
                                             const std::string& build_id,
                                             std::vector<std::string_view>* ids);
  size_t Bytes();

 private:
  struct File {
    std::vector<std::shared_ptr<Table>> tables;  // most recently used last; at most 4
    size_t bytes = 0;
  };
  void TouchLocked(const std::string& key);

  std::mutex mu_;
  std::map<std::string, File> files_;
  std::list<std::string> order_;  // least recently used first
  size_t bytes_ = 0;
};

}  // namespace jitsym::query

#endif  // JITSYM_DAEMON_QUERY_NATIVE_STRINGS_H_
