// Reads lines from a file descriptor (stdin) in large chunks, with bounded memory, and can be
// woken up from another thread while it waits for input.
#ifndef JITSYM_CLIENT_LINE_READER_H_
#define JITSYM_CLIENT_LINE_READER_H_

#include <chrono>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace jitsym::client {

// How long a batch of input lines waits for more input once it has one: requests are cut by
// size, or after this when the input pauses. An interactive user does not notice it; a
// producer writing through a pipe (perf script: some forty lines a write) fills batches instead
// of sending a request per write.
inline constexpr std::chrono::milliseconds kBatchDelay{10};

// When a batch that is not full goes out (kBatchDelay's rule), for the lookup and annotate
// pipelines alike: Open() at its first line; TakesMore() before each further line.
class BatchWindow {
 public:
  using Clock = std::chrono::steady_clock;
  void Open() { deadline_ = Clock::now() + kBatchDelay; }
  // Whether the batch, holding `lines` lines, waits for the next: input is there or comes
  // before the deadline, which has not passed (the clock read every 64 lines: a line of a file
  // costs a few nanoseconds). `Source` has LineReader's Ready(deadline).
  template <typename Source>
  bool TakesMore(Source& source, size_t lines) const {
    if (lines % 64 == 0 && Clock::now() >= deadline_) return false;
    return source.Ready(deadline_);
  }

 private:
  Clock::time_point deadline_;
};

class LineReader {
 public:
  // Lines longer than this are cut; the rest of such a line is skipped.
  static constexpr size_t kMaxLineBytes = 64 * 1024;

  // `prefix`: bytes already read from fd (to tell what the input is), read first. At most
  // kMaxPrefixBytes.
  static constexpr size_t kMaxPrefixBytes = 256 * 1024;
  explicit LineReader(int fd, std::string_view prefix = {});
  ~LineReader();
  LineReader(const LineReader&) = delete;
  LineReader& operator=(const LineReader&) = delete;

  // The next line without its newline; the view is valid until the next call. False at end of
  // input, after Wake(), or on a read error (error() is then non-empty).
  bool Next(std::string_view* line);
  // True if Next() would return without waiting for more input (a line is buffered, the fd is
  // readable, or Wake() was called), waiting for that until `deadline` at most. Lets the caller
  // send a partial batch when the input pauses, rather than whenever a pipe runs dry for a
  // moment between two writes of its producer.
  bool Ready(BatchWindow::Clock::time_point deadline);
  // Thread-safe: makes a blocked or later Next() return false.
  void Wake();

  const std::string& error() const { return error_; }

 private:
  bool Fill();

  int fd_;
  int wake_pipe_[2] = {-1, -1};
  std::vector<char> buffer_;
  size_t begin_ = 0;
  size_t end_ = 0;
  bool eof_ = false;
  bool skipping_ = false;  // dropping the tail of an over-long line
  std::string error_;
};

}  // namespace jitsym::client

#endif  // JITSYM_CLIENT_LINE_READER_H_
