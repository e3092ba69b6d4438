// One ELF object opened for symbolization: its loadable segments (file offset <-> virtual
// address), its symbol tables (.symtab, .dynsym, MiniDebugInfo), and its DWARF (in the file or in
// a separate debug file), read lazily one compilation unit at a time into compact sorted tables.
//
// Thread safety: a NativeModule is shared by query threads. Everything built at Open() is
// immutable; a CU's tables are built once (claimed through an atomic state, built under the
// mutex of the libdw handle used: a Dwarf is not thread-safe) and published through an atomic
// pointer, so lookups in CUs already read never wait. Prefetch() builds several CUs at once,
// each extra thread with a libdw handle of its own.
#ifndef JITSYM_DAEMON_NATIVE_NATIVE_MODULE_H_
#define JITSYM_DAEMON_NATIVE_NATIVE_MODULE_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

typedef struct Elf Elf;
typedef struct Dwarf Dwarf;

namespace jitsym::native {

// Where separate debug files are looked for.
struct DebugSearch {
  std::vector<std::string> debug_dirs = {"/usr/lib/debug"};  // roots of .build-id trees
  std::vector<std::string> extra_files;  // debug files known for this build-id (debuginfod)
};

// "_ZN3foo3barEv" -> "foo::bar()", as llvm-symbolizer prints it (GNU's " [clone .cold]" suffix
// becomes " (.cold)"); names that are not mangled are returned unchanged.
std::string Demangle(std::string_view name);
// Raw build-id bytes -> lower-case hex.
std::string HexBuildId(std::string_view bytes);

struct NativeFrame {
  std::string_view name;  // empty: unknown
  std::string_view file;  // empty: unknown
  uint32_t line = 0;
  uint32_t column = 0;
};

struct NativeAnswer {
  bool found = false;
  std::string_view name;  // the outermost (physical) function: symbol table, else DWARF
  uint64_t start = 0;     // its start address (virtual) and size, when known
  uint64_t size = 0;
  std::vector<NativeFrame> frames;  // innermost first; views into the module's tables
};

// Sorted 64-bit keys searched for the last key <= x. A sparse copy of every 16th key (small
// enough to stay in cache) narrows the search to two cache lines of the dense keys.
class KeyIndex {
 public:
  void Build(std::vector<uint64_t> keys);
  // Index of the last key <= x; -1 if none.
  ptrdiff_t LastAtMost(uint64_t x) const;
  size_t Bytes() const { return (keys_.capacity() + sparse_.capacity()) * sizeof(uint64_t); }

 private:
  static constexpr size_t kStride = 16;
  std::vector<uint64_t> keys_, sparse_;
};

// The tables of one compilation unit. Immutable once built.
struct CuTables {
  struct Interval {  // [lo, hi) -> the deepest subprogram/inlined DIE covering it
    uint64_t lo, hi;
    uint32_t node;
  };
  struct Node {
    uint32_t parent;                             // kNone for a subprogram
    uint32_t name;                               // index into strings
    uint32_t call_file, call_line, call_column;  // where this inlined instance was called
    uint64_t low_pc;                             // entry (subprograms)
  };
  struct Row {
    uint64_t addr;
    uint32_t file;  // index into strings; kNone: no file
    uint32_t line;
    uint32_t column;
    bool end_sequence;
  };
  static constexpr uint32_t kNone = 0xffffffffu;
  std::vector<Interval> intervals;  // sorted, disjoint
  std::vector<Node> nodes;
  std::vector<Row> rows;  // sorted by address, end_sequence rows first at equal addresses
  std::vector<std::string> strings;
  KeyIndex interval_index, row_index;  // over intervals[].lo and rows[].addr
  size_t Bytes() const;
};

class NativeModule {
 public:
  ~NativeModule();
  NativeModule(const NativeModule&) = delete;
  NativeModule& operator=(const NativeModule&) = delete;

  // Opens an ELF file. nullptr and *error set ("PATH: not an ELF file", ...) on failure.
  static std::shared_ptr<NativeModule> Open(const std::string& path, const DebugSearch& search,
                                            std::string* error);

  const std::string& path() const { return path_; }
  const std::string& build_id() const { return build_id_; }  // hex; empty if none
  // Where the DWARF came from ("" when there is none): the file itself or a debug file.
  const std::string& debug_file() const { return debug_file_; }
  bool has_dwarf() const { return dwarf_ != nullptr; }
  size_t symbol_count() const { return symbols_.size(); }

  // A file offset (as in /proc/<pid>/maps, perf's dso offsets) -> virtual address, through the
  // PT_LOAD segment that contains it.
  std::optional<uint64_t> FileOffsetToAddress(uint64_t offset) const;

  // Symbolizes a virtual address. Thread-safe.
  void Symbolize(uint64_t addr, NativeAnswer* out);

  // Reads ahead the tables of the CUs that `addrs` (virtual addresses, in any order) fall in and
  // that are not read yet, on this thread and up to `extra_threads` more, each with a libdw
  // handle of its own, opened for the occasion and closed after (the tables own their strings).
  // A first batch over a large binary touches most of its CUs, which Symbolize would read one
  // after the other. Thread-safe; returns when they are built.
  void Prefetch(const std::vector<uint64_t>& addrs, unsigned extra_threads);
  // CUs not read yet (nor being read): once it is below 2, Prefetch has nothing to do.
  size_t unread_cus() const { return unread_cus_.load(std::memory_order_relaxed); }

  // Bytes held (tables read so far, symbol tables, section data read by libelf/libdw).
  size_t Bytes() const { return bytes_.load(std::memory_order_relaxed); }

 private:
  struct Segment {
    uint64_t vaddr, memsz, offset, filesz;
  };
  static constexpr uint32_t kNoFile = 0xffffffffu;
  struct Symbol {
    uint64_t addr, size;
    uint32_t name;  // offset into symbol_names_
    uint32_t file;  // the STT_FILE before a local symbol (offset into symbol_names_), or kNoFile
    uint32_t name_size, file_size;
  };
  struct CuRange {
    uint64_t lo, hi;
    uint32_t cu;
  };
  enum CuState : uint8_t { kUnread, kBuilding, kBuilt };
  struct Cu {
    uint64_t die_offset;  // of the CU DIE
    std::atomic<uint8_t> state{kUnread};
    std::atomic<const CuTables*> tables{nullptr};  // null when built and unreadable
  };
  // A libdw handle and what building tables with it caches. Only one thread uses it at a time.
  struct DwarfHandle {
    Dwarf* dwarf = nullptr;
    std::mutex mu;
    std::unordered_map<const char*, std::string> demangled;  // by .debug_str pointer
  };

  NativeModule() = default;
  bool LoadSymbols(Elf* elf, bool dynamic_ok);
  void LoadMiniDebugInfo(Elf* elf);
  // "function@plt" for the PLT entries of x86 objects, which have no symbols.
  void SynthesizePltSymbols(Elf* elf);
  void FinishSymbols();
  bool OpenDwarf(Elf* main, const DebugSearch& search);
  void IndexCus();
  // The CU whose ranges cover addr, or -1.
  int64_t CuOf(uint64_t addr) const;
  const CuTables* Tables(uint32_t cu);
  // Builds a CU this thread has claimed (kUnread -> kBuilding) and publishes it.
  const CuTables* Build(uint32_t cu, DwarfHandle& handle);
  std::unique_ptr<CuTables> BuildTables(uint32_t cu, DwarfHandle& handle);
  const Symbol* FindSymbol(uint64_t addr) const;
  bool InSegment(uint64_t addr) const;

  std::string path_;
  std::string build_id_;
  std::string debug_file_;
  std::vector<Segment> segments_;
  std::vector<Symbol> symbols_;
  KeyIndex symbol_index_;  // over symbols_[].addr
  std::string symbol_names_;

  // Owned libelf/libdw handles and their file descriptors.
  int fd_ = -1;
  Elf* elf_ = nullptr;
  int debug_fd_ = -1;
  Elf* debug_elf_ = nullptr;
  Dwarf* dwarf_ = nullptr;
  int dwarf_fd_ = -1;      // the file dwarf_ reads (fd_ or debug_fd_), for Prefetch's handles
  std::string minidebug_;  // decompressed .gnu_debugdata (libelf reads it in place)
  Elf* mini_elf_ = nullptr;

  std::unique_ptr<Cu[]> cus_;
  size_t cu_count_ = 0;
  std::vector<CuRange> cu_ranges_;  // sorted by lo

  DwarfHandle main_handle_;  // over dwarf_
  std::mutex built_mu_;      // with built_cv_: waiting for a CU another thread builds
  std::condition_variable built_cv_;
  std::atomic<size_t> bytes_{0};
  std::atomic<size_t> unread_cus_{0};
};

}  // namespace jitsym::native

#endif  // JITSYM_DAEMON_NATIVE_NATIVE_MODULE_H_
