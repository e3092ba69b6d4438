// Buffered stdout: commands append text to buffer() and the buffer is written in large chunks,
// never line by line (a million output lines must not mean a million write calls).
#ifndef JITSYM_CLIENT_OUTPUT_H_
#define JITSYM_CLIENT_OUTPUT_H_

#include <cstdio>
#include <string>
#include <string_view>

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

// Appends text with control characters (tab, newline, ...) replaced by spaces: names and paths
// come from JIT runtimes and files anyone may write, and must not break a line-based output.
void AppendClean(std::string_view text, std::string* out);

}  // namespace jitsym::client

#endif  // JITSYM_CLIENT_OUTPUT_H_
