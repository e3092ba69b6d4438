#include "client/image_files.h"

#include <fcntl.h>
#include <unistd.h>

namespace jitsym::client {

ImageFiles::~ImageFiles() {
  for (const auto& [path, fd] : open_) {
    if (fd >= 0) ::close(fd);
  }
}

int ImageFiles::Open(const std::string& path) {
  if (path.find('/') == std::string::npos) return -1;  // an image name, not a file
  auto it = open_.find(path);
  if (it == open_.end()) {
    if (open_.size() >= kMaxOpen) return -1;
    // O_NONBLOCK: a FIFO under that name does not hold the client up (the daemon refuses it).
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    it = open_.emplace(path, fd).first;
  }
  return it->second;
}

void ImageFiles::Attach(proto::LookupRequest* request) {
  if (!request->image) return;
  const int fd = Open(*request->image);
  if (fd < 0) return;
  request->image_fd = true;
  request->image_descriptor = fd;
}

}  // namespace jitsym::client
