// Buffered stdout: commands append text to buffer() and the buffer is written in large chunks,
// never line by line (a million output lines must not mean a million write calls).
#ifndef JITSYM_CLIENT_OUTPUT_H_
#define JITSYM_CLIENT_OUTPUT_H_

#include <cstdio>
#include <string>

namespace jitsym::client {

class Output {
 public:
  static constexpr size_t kFlushBytes = 1 << 20;

  explicit Output(std::FILE* file = stdout);
  ~Output();
  Output(const Output&) = delete;
  Output& operator=(const Output&) = delete;

  std::string& buffer() { return buffer_; }
  void MaybeFlush() {
    if (buffer_.size() >= kFlushBytes) Flush();
  }
  // Writes everything buffered; false if the write failed (e.g. a closed pipe).
  bool Flush();

 private:
  std::FILE* file_;
  std::string buffer_;
};

}  // namespace jitsym::client

#endif  // JITSYM_CLIENT_OUTPUT_H_
