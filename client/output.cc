#include "client/output.h"

namespace jitsym::client {

Output::Output(std::FILE* file) : file_(file) { buffer_.reserve(kFlushBytes + 64 * 1024); }

Output::~Output() { Flush(); }

bool Output::Flush() {
  bool ok = true;
  if (!buffer_.empty()) {
    ok = std::fwrite(buffer_.data(), 1, buffer_.size(), file_) == buffer_.size();
    buffer_.clear();
  }
  return std::fflush(file_) == 0 && ok;
}

}  // namespace jitsym::client
