// Files that image lookups name, opened by the client with its user's rights and held open while
// their requests are answered: each request names its file's descriptor ("image_fd"), and the
// daemon reads that very file through /proc/<client>/fd/N, opening no path it was given
// (docs/protocol.md, *ELF images*). No descriptor is passed: one of a FUSE file would stall the
// daemon when it closed it.
#ifndef JITSYM_CLIENT_IMAGE_FILES_H_
#define JITSYM_CLIENT_IMAGE_FILES_H_

#include <map>
#include <string>

#include "proto/protocol.h"

namespace jitsym::client {

class ImageFiles {
 public:
  ImageFiles() = default;
  ~ImageFiles();
  ImageFiles(const ImageFiles&) = delete;
  ImageFiles& operator=(const ImageFiles&) = delete;

  // Gives `request` (an image lookup by path) the descriptor of its file, opened once: sets
  // image_fd, valid for as long as this object lives. A file this user cannot open, one on a
  // FUSE mount or under /proc, or one past kMaxOpen files, is left named by path (the daemon
  // then checks what this user may read and says why a file is not read).
  template <typename Request>
  void Attach(Request* request) {
    if (!request->image) return;
    const int fd = Open(*request->image);
    if (fd >= 0) request->image_fd = fd;
  }
  // The descriptor of the file at `path` (a path with a '/'), opened once; -1 when it cannot be
  // (also decided once per path).
  int Open(const std::string& path);

 private:
  static constexpr size_t kMaxOpen = 256;
  std::map<std::string, int> open_;  // path -> descriptor (-1: could not be opened)
};

}  // namespace jitsym::client

#endif  // JITSYM_CLIENT_IMAGE_FILES_H_
