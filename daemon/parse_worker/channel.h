// Messages between the daemon and a parse worker (parse_worker.h): frames on a stream socket,
// each a 4-byte length, a 4-byte type and the payload, with at most kMaxFds descriptors riding
// on the frame's first byte (SCM_RIGHTS). The payload is written and read with Writer and
// Reader: fixed-width host-order integers and length-prefixed strings (both ends run the same
// executable). A frame larger than kMaxFrame is refused by the reader: the worker's replies are
// hostile input to the daemon like the files it read.
#ifndef JITSYM_DAEMON_PARSE_WORKER_CHANNEL_H_
#define JITSYM_DAEMON_PARSE_WORKER_CHANNEL_H_

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/os/unique_fd.h"
#include "daemon/util/result.h"

namespace jitsym::parse_worker {

inline constexpr size_t kMaxFds = 4;
inline constexpr uint32_t kMaxFrame = 256u << 20;

struct Frame {
  uint32_t type = 0;
  std::string payload;
  std::vector<os::UniqueFd> fds;
};

// Sends one frame; `fds` are duplicated into the receiver. False and errno on failure.
bool SendFrame(int sock, uint32_t type, std::string_view payload, const std::vector<int>& fds = {});
// Receives one frame, waiting at most until `deadline_ns` (MonotonicNowNs; 0: no deadline).
// kIo "closed" at the end of the stream, kLimit on the deadline, kMalformed for a frame
// larger than kMaxFrame. `wake_fd` (a pidfd, or -1) ends the wait when it becomes readable:
// kIo "peer exited".
Result<Frame> ReceiveFrame(int sock, uint64_t deadline_ns = 0, int wake_fd = -1);

class Writer {
 public:
  template <typename T>
  void Put(T v) {
    static_assert(std::is_trivially_copyable_v<T>);
    out_.append(reinterpret_cast<const char*>(&v), sizeof(v));
  }
  void PutString(std::string_view s) {
    Put<uint32_t>(static_cast<uint32_t>(s.size()));
    out_.append(s);
  }
  // An array of trivially copyable values, as they are in memory.
  void PutBytes(const void* data, size_t size) {
    out_.append(static_cast<const char*>(data), size);
  }
  void Reserve(size_t size) { out_.reserve(size); }
  std::string& bytes() { return out_; }

 private:
  std::string out_;
};

// Bounds-checked and sticky: a read past the end fails the reader (ok() false) and returns 0
// or an empty string.
class Reader {
 public:
  explicit Reader(std::string_view in) : in_(in) {}
  template <typename T>
  T Get() {
    static_assert(std::is_trivially_copyable_v<T>);
    T v{};
    if (!ok_ || in_.size() - pos_ < sizeof(T)) {
      ok_ = false;
      return v;
    }
    std::memcpy(&v, in_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }
  std::string_view GetString() {
    const uint32_t n = Get<uint32_t>();
    if (!ok_ || in_.size() - pos_ < n) {
      ok_ = false;
      return {};
    }
    std::string_view s = in_.substr(pos_, n);
    pos_ += n;
    return s;
  }
  // A count of items that take at least `min_item` bytes each: 0 and failed when the rest of
  // the input cannot hold that many (a count from the peer never sizes an allocation).
  uint32_t GetCount(size_t min_item) {
    const uint32_t n = Get<uint32_t>();
    if (ok_ && static_cast<uint64_t>(n) * min_item > in_.size() - pos_) ok_ = false;
    return ok_ ? n : 0;
  }
  bool ok() const { return ok_; }
  bool at_end() const { return pos_ == in_.size(); }

 private:
  std::string_view in_;
  size_t pos_ = 0;
  bool ok_ = true;
};

}  // namespace jitsym::parse_worker

#endif  // JITSYM_DAEMON_PARSE_WORKER_CHANNEL_H_
