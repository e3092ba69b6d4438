#include "client/image_files.h"

#include <fcntl.h>
#include <unistd.h>

namespace jitsym::client {

ImageFiles::~ImageFiles() {
  for (const auto& [path, fd] : open_) {
    if (fd >= 0) ::close(fd);
  }
}

void ImageFiles::Attach(proto::LookupRequest* request) {
  if (!request->image || request->image->find('/') == std::string::npos) return;
  auto it = open_.find(*request->image);
  if (it == open_.end()) {
    if (open_.size() >= kMaxOpen) return;
    // O_NONBLOCK: a FIFO under that name does not hold the client up (the daemon refuses it).
    const int fd = ::open(request->image->c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    it = open_.emplace(*request->image, fd).first;
  }
  if (it->second < 0) return;
  request->image_fd = true;
  request->image_descriptor = it->second;
}

}  // namespace jitsym::client
