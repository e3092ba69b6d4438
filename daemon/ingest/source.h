// A followed file: the loader hands it the file's bytes in order as they appear; the source parses
// them (with a pure parser of daemon/formats/) and applies the records to its CodeMap. Adding a
// format means one Source subclass and one entry in Formats() (format_registry.cc).
#ifndef JITSYM_DAEMON_INGEST_SOURCE_H_
#define JITSYM_DAEMON_INGEST_SOURCE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/index/code_map.h"
#include "daemon/util/source_kinds.h"

namespace jitsym::ingest {

class Source {
 public:
  explicit Source(std::string path) : path_(std::move(path)) {}
  virtual ~Source() = default;

  virtual Origin origin() const = 0;
  // The next bytes of the file.
  virtual void Feed(std::span<const uint8_t> data) = 0;
  // Bytes the source does not need to see (the loader may seek over them).
  virtual uint64_t skippable() const { return 0; }
  virtual void Skip(uint64_t n) {}
  // A source that decodes what it is fed (a gzip'd file) does so in bounded steps: while it has
  // a backlog, the loader calls Continue (and feeds nothing new) until it has none.
  virtual bool backlog() const { return false; }
  virtual void Continue() {}
  // Bytes decoding has produced from the file's bytes (0 when it is read as it is): the limits
  // charge these as well as the bytes read, so that a small file that inflates to gigabytes
  // counts for what it makes the daemon parse.
  virtual uint64_t decoded_bytes() const { return 0; }
  // The file has stopped growing, for a while or for good: a last line still waiting for its
  // end is indexed as it stands, and bytes fed later that complete it replace it (never index
  // it twice). True when that changed what is indexed. Text formats only; called by the loader
  // once a file has not grown for a short while, and before Release.
  virtual bool Settle() { return false; }
  // The file is finished (closed, replaced, deleted, stopped): nothing more will be fed. Frees
  // what only reading needed; what was indexed stays.
  virtual void Release() {}

  bool failed() const { return !error_.empty(); }
  const std::string& error() const { return error_; }
  uint64_t error_offset() const { return error_offset_; }
  virtual bool closed() const { return false; }
  uint64_t records() const { return records_; }
  // The pid named inside the file, once known. A file whose name names no pid (a Mono log
  // profiler file) is attached to that process's incarnation as soon as this is known.
  virtual std::optional<uint32_t> content_pid() const { return std::nullopt; }
  // For image sources: another key the image can be looked up by (an r2rmap's signature).
  virtual std::string image_signature() const { return {}; }

  const std::string& path() const { return path_; }
  index::CodeMap& code() { return code_; }
  const index::CodeMap& code() const { return code_; }

 protected:
  void SetError(uint64_t offset, std::string message) {
    error_offset_ = offset;
    error_ = std::move(message);
  }

  std::string path_;
  index::CodeMap code_;
  uint64_t records_ = 0;

 private:
  std::string error_;
  uint64_t error_offset_ = 0;
};

// What the loader knows when it starts following a file.
struct SourceContext {
  // Start of the process the file belongs to (CLOCK_MONOTONIC ns), when it was alive when found.
  std::optional<uint64_t> process_start_ns;
  // When the file was found (CLOCK_MONOTONIC ns), and its size then: bytes below that size were
  // written before the daemon could see them.
  uint64_t discovered_ns = 0;
  uint64_t initial_size = 0;
  // The bytes of it that are stored (st_blocks * 512): what sizes memory reserved up front,
  // since a sparse file's size says nothing about what it holds. 0: unknown, use initial_size.
  uint64_t allocated_size = 0;
};

// What a file name says about its content.
struct FileMatch {
  Origin origin = Origin::kUnknown;
  std::optional<uint32_t> pid;  // files describing a process, when the name says which
  // Files describing an image (not a process): the image's name, e.g. "System.Private.CoreLib".
  std::optional<std::string> image;
  std::function<std::unique_ptr<Source>(const std::string& path, const SourceContext& context)>
      create;
};

// Recognizes the files the daemon follows; nullopt for any other name.
std::optional<FileMatch> MatchFile(std::string_view filename);

}  // namespace jitsym::ingest

#endif  // JITSYM_DAEMON_INGEST_SOURCE_H_
