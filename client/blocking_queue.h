// A minimal multi-producer multi-consumer queue with Close(), for the lookup pipeline.
#ifndef JITSYM_CLIENT_BLOCKING_QUEUE_H_
#define JITSYM_CLIENT_BLOCKING_QUEUE_H_

#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>

namespace jitsym::client {

template <typename T>
class BlockingQueue {
 public:
  void Push(T value) {
    {
      std::lock_guard lock(mutex_);
      items_.push_back(std::move(value));
    }
    cv_.notify_one();
  }

  // Blocks until an item is there; nullopt once the queue is closed and drained.
  std::optional<T> Pop() {
    std::unique_lock lock(mutex_);
    cv_.wait(lock, [&] { return !items_.empty() || closed_; });
    if (items_.empty()) return std::nullopt;
    T value = std::move(items_.front());
    items_.pop_front();
    return value;
  }

  bool Empty() {
    std::lock_guard lock(mutex_);
    return items_.empty();
  }

  void Close() {
    {
      std::lock_guard lock(mutex_);
      closed_ = true;
    }
    cv_.notify_all();
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<T> items_;
  bool closed_ = false;
};

}  // namespace jitsym::client

#endif  // JITSYM_CLIENT_BLOCKING_QUEUE_H_
