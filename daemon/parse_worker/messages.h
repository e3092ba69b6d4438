// What the daemon and a parse worker say to each other (channel.h carries it).
//
//   daemon -> worker  kSymbolize      a file (its descriptor rides along) and addresses
//   worker -> daemon  kFileOp         open, stat or resolve a path its file names (a debug
//                                     link, a .dwo, a dwz file): the daemon decides
//   daemon -> worker  kFileOpReply    the answer (an opened descriptor rides along)
//   worker -> daemon  kSymbolizeReply the answers, or why there are none
//
// A worker asks for files only while it serves a kSymbolize; the daemon answers every kFileOp
// before it reads on.
#ifndef JITSYM_DAEMON_PARSE_WORKER_MESSAGES_H_
#define JITSYM_DAEMON_PARSE_WORKER_MESSAGES_H_

#include <sys/stat.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/util/result.h"

namespace jitsym::parse_worker {

enum MessageType : uint32_t {
  kSymbolize = 1,
  kFileOp = 2,
  kFileOpReply = 3,
  kSymbolizeReply = 4,
};

struct SymbolizeRequest {
  std::string path;   // the file's path, as the daemon opened it (for messages and companions)
  struct stat st {};  // what the daemon's stat said of it (its identity and owner)
  bool file_offsets = false;  // addrs are file offsets (mapped ranges), not virtual addresses
  bool all_frames = true;     // else only each answer's innermost frame (its source position)
  std::vector<uint64_t> addrs;
  // The strings the daemon has of this file's module in the worker that numbered them
  // (`strings_token`): ids below `strings_known`. The reply sends only the others.
  uint64_t strings_token = 0;
  uint32_t strings_known = 0;
};

// kFetch: the debug file debuginfod has for the build id in `path` (its path in `resolved`,
// ENOENT while it is being fetched).
enum class FileOpKind : uint8_t { kOpen = 1, kStat = 2, kResolve = 3, kFetch = 4 };

struct FileOpRequest {
  FileOpKind kind = FileOpKind::kStat;
  bool follow = true;  // kStat: stat(2), else lstat(2)
  std::string path;
};

struct FileOpReply {
  int32_t error = 0;  // errno; 0 on success (kOpen: the descriptor comes with the frame)
  struct stat st {};
  bool served_by_process = false;
  std::string resolved;  // kResolve
};

struct AnswerFrame {
  uint32_t name = 0;  // indices into SymbolizeReply::strings (0 is "")
  uint32_t file = 0;
  uint32_t line = 0;
  uint32_t column = 0;
};

struct AddressAnswer {
  enum State : uint8_t { kUnmapped = 0, kMiss = 1, kFound = 2 };
  State state = kUnmapped;  // kUnmapped: a file offset no loadable segment holds
  uint64_t vaddr = 0;
  uint32_t name = 0, clone = 0, missing = 0;
  uint64_t start = 0, size = 0;
  // Its frames, innermost first: SymbolizeReply::frames[first_frame, first_frame + frame_count)
  // (answers for one address share them).
  uint32_t first_frame = 0, frame_count = 0;
};

struct SymbolizeReply {
  std::string error;  // the file could not be read as ELF: why (then nothing else is set)
  std::string build_id;
  bool stripped = false;
  std::string dwarf_refusal;
  // Names, files, clone suffixes, missing files: the strings of ids strings_base on (id 0 is
  // ""), numbered by the worker's module `strings_token` for as long as it holds the module;
  // answers refer to them (and to those below strings_base the daemon has) by id.
  uint64_t strings_token = 0;
  uint32_t strings_base = 1;
  std::vector<std::string> strings;
  std::vector<AddressAnswer> answers;  // one per address asked, in order
  std::vector<AnswerFrame> frames;     // the answers' frames, one after the other
};

std::string Encode(const SymbolizeRequest& m);
std::string Encode(const FileOpRequest& m);
std::string Encode(const FileOpReply& m);
std::string Encode(const SymbolizeReply& m);

Result<SymbolizeRequest> DecodeSymbolizeRequest(std::string_view bytes);
Result<FileOpRequest> DecodeFileOpRequest(std::string_view bytes);
Result<FileOpReply> DecodeFileOpReply(std::string_view bytes);
// Checks every string index against the ids the reply reaches (strings_base + its strings),
// and every answer's frames against the reply's: the daemon trusts nothing a worker says.
Result<SymbolizeReply> DecodeSymbolizeReply(std::string_view bytes);

}  // namespace jitsym::parse_worker

#endif  // JITSYM_DAEMON_PARSE_WORKER_MESSAGES_H_
