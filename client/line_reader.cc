#include "client/line_reader.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

namespace jitsym::client {
namespace {

constexpr size_t kBufferBytes = 1 << 20;
static_assert(kBufferBytes > 2 * LineReader::kMaxLineBytes);

}  // namespace

LineReader::LineReader(int fd, std::string_view prefix) : fd_(fd), buffer_(kBufferBytes) {
  static_assert(kBufferBytes > kMaxPrefixBytes + kMaxLineBytes);
  prefix = prefix.substr(0, kMaxPrefixBytes);
  if (!prefix.empty()) std::memcpy(buffer_.data(), prefix.data(), prefix.size());
  end_ = prefix.size();
  if (::pipe2(wake_pipe_, O_CLOEXEC | O_NONBLOCK) != 0) wake_pipe_[0] = wake_pipe_[1] = -1;
}

LineReader::~LineReader() {
  if (wake_pipe_[0] >= 0) ::close(wake_pipe_[0]);
  if (wake_pipe_[1] >= 0) ::close(wake_pipe_[1]);
}

void LineReader::Wake() {
  if (wake_pipe_[1] >= 0) {
    [[maybe_unused]] ssize_t n = ::write(wake_pipe_[1], "x", 1);
  }
}

bool LineReader::Ready(BatchWindow::Clock::time_point deadline) {
  if (eof_ || std::memchr(buffer_.data() + begin_, '\n', end_ - begin_) != nullptr) return true;
  for (;;) {
    const auto left =
        std::chrono::ceil<std::chrono::milliseconds>(deadline - BatchWindow::Clock::now());
    const int timeout =
        left.count() <= 0 ? 0 : static_cast<int>(std::min<int64_t>(left.count(), 1000));
    pollfd pfds[2] = {{fd_, POLLIN, 0}, {wake_pipe_[0], POLLIN, 0}};
    const int n = ::poll(pfds, wake_pipe_[0] >= 0 ? 2 : 1, timeout);
    if (n > 0) return true;  // input, or woken (Next() then returns false at once)
    if (n < 0 && errno != EINTR) return true;  // Next() reports the error
    if (n == 0 && timeout == 0) return false;
  }
}

// Reads more input after the unconsumed bytes; false at end of input, on error or when woken.
bool LineReader::Fill() {
  if (eof_) return false;
  if (begin_ > 0) {
    std::memmove(buffer_.data(), buffer_.data() + begin_, end_ - begin_);
    end_ -= begin_;
    begin_ = 0;
  }
  for (;;) {
    pollfd pfds[2] = {{fd_, POLLIN, 0}, {wake_pipe_[0], POLLIN, 0}};
    const int nfds = wake_pipe_[0] >= 0 ? 2 : 1;
    if (::poll(pfds, nfds, -1) < 0) {
      if (errno == EINTR) continue;
      error_ = std::string("cannot wait for input: ") + std::strerror(errno);
      return false;
    }
    if (nfds == 2 && pfds[1].revents != 0) return false;  // woken: stop reading
    const ssize_t n = ::read(fd_, buffer_.data() + end_, buffer_.size() - end_);
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      error_ = std::string("cannot read input: ") + std::strerror(errno);
      return false;
    }
    if (n == 0) {
      eof_ = true;
      return false;
    }
    end_ += static_cast<size_t>(n);
    return true;
  }
}

bool LineReader::Next(std::string_view* line) {
  for (;;) {
    const char* start = buffer_.data() + begin_;
    if (const void* nl = std::memchr(start, '\n', end_ - begin_)) {
      const size_t len = static_cast<size_t>(static_cast<const char*>(nl) - start);
      begin_ += len + 1;
      if (skipping_) {
        skipping_ = false;
        continue;
      }
      *line = std::string_view(start, len);
      return true;
    }
    if (skipping_) {
      begin_ = end_;
    } else if (end_ - begin_ >= kMaxLineBytes) {
      // Hand out the cut line now and drop the rest of it as it arrives.
      *line = std::string_view(start, kMaxLineBytes);
      begin_ = end_;
      skipping_ = true;
      return true;
    }
    if (!Fill()) {
      if (!error_.empty() || !eof_ || begin_ == end_ || skipping_) return false;
      *line = std::string_view(buffer_.data() + begin_, end_ - begin_);  // no final newline
      begin_ = end_;
      return true;
    }
  }
}

}  // namespace jitsym::client
