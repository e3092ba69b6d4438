// Reads lines from a file descriptor (stdin) in large chunks, with bounded memory, and can be
// woken up from another thread while it waits for input.
#ifndef JITSYM_CLIENT_LINE_READER_H_
#define JITSYM_CLIENT_LINE_READER_H_

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace jitsym::client {

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
  // True if Next() would return without waiting for more input (a line is buffered, or the fd
  // is readable). Lets the caller send a partial batch when the input is interactive.
  bool Ready();
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
