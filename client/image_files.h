// Files that image lookups name, opened by the client with its user's rights: each request
// carries its file's descriptor (SCM_RIGHTS), so the daemon reads the very file this user opened
// and opens no path it was given (docs/protocol.md, *ELF images*).
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
  // image_fd and image_descriptor, valid for as long as this object lives. A file this user
  // cannot open, or one past kMaxOpen files, is left named by path (the daemon then checks what
  // this user may read and says why a file is not read).
  void Attach(proto::LookupRequest* request);
  // The descriptor of the file at `path` (a path with a '/'), opened once; -1 when it cannot be.
  int Open(const std::string& path);

 private:
  static constexpr size_t kMaxOpen = 256;
  std::map<std::string, int> open_;  // path -> descriptor (-1: could not be opened)
};

}  // namespace jitsym::client

#endif  // JITSYM_CLIENT_IMAGE_FILES_H_
