// Reading .dwp packages and writing their units as .dwo files libdw reads (dwp_package.h).
#include "daemon/native/dwp_package.h"

#include <fcntl.h>
#include <gelf.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

namespace jitsym::native {
namespace {

constexpr uint32_t kMaxColumns = 16;
constexpr uint32_t kMaxSlots = 1u << 24;
constexpr size_t kMaxName = 1024;

class IndexReader {
 public:
  IndexReader(std::string_view bytes, bool big_endian) : b_(bytes), big_(big_endian) {}
  bool U32(uint32_t* v) { return Read(4, v); }
  bool U64(uint64_t* v) { return Read(8, v); }
  bool U16(uint16_t* v) { return Read(2, v); }
  size_t pos() const { return pos_; }
  void Seek(size_t pos) { pos_ = pos; }

 private:
  template <typename T>
  bool Read(size_t n, T* v) {
    if (pos_ > b_.size() || b_.size() - pos_ < n) return false;
    uint64_t x = 0;
    for (size_t i = 0; i < n; ++i) {
      const uint64_t byte = static_cast<unsigned char>(b_[pos_ + i]);
      x |= big_ ? byte << (8 * (n - 1 - i)) : byte << (8 * i);
    }
    pos_ += n;
    *v = static_cast<T>(x);
    return true;
  }
  std::string_view b_;
  bool big_;
  size_t pos_ = 0;
};

struct OutSection {
  std::string name;
  GElf_Word type = SHT_PROGBITS;
  GElf_Xword flags = 0;
  GElf_Xword align = 1;
  const void* data = nullptr;
  size_t size = 0;
};

// Writes an ELF relocatable file of `sections` (no symbols): what libdw needs to read them.
bool WriteElf(const std::string& path, unsigned char cls, unsigned char data, uint16_t machine,
              const std::vector<OutSection>& sections, std::string* error) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) {
    *error = path + ": " + std::strerror(errno);
    return false;
  }
  Elf* e = elf_begin(fd, ELF_C_WRITE, nullptr);
  bool ok = e != nullptr && gelf_newehdr(e, cls) != nullptr;
  std::string names(1, '\0');
  std::vector<size_t> name_offsets;
  for (const OutSection& s : sections) {
    name_offsets.push_back(names.size());
    names.append(s.name).push_back('\0');
  }
  const size_t shstrtab_name = names.size();
  names.append(".shstrtab").push_back('\0');
  GElf_Ehdr eh;
  if (ok && gelf_getehdr(e, &eh) != nullptr) {
    eh.e_ident[EI_DATA] = data;
    eh.e_ident[EI_VERSION] = EV_CURRENT;
    eh.e_type = ET_REL;
    eh.e_machine = machine;
    eh.e_version = EV_CURRENT;
    ok = gelf_update_ehdr(e, &eh) != 0;
  } else {
    ok = false;
  }
  auto add = [&](size_t name, GElf_Word type, GElf_Xword flags, GElf_Xword align, const void* buf,
                 size_t size) -> Elf_Scn* {
    Elf_Scn* scn = elf_newscn(e);
    if (scn == nullptr) return nullptr;
    Elf_Data* d = elf_newdata(scn);
    if (d == nullptr) return nullptr;
    d->d_buf = const_cast<void*>(buf);
    d->d_size = size;
    d->d_type = ELF_T_BYTE;
    d->d_align = 1;
    d->d_version = EV_CURRENT;
    GElf_Shdr sh;
    if (gelf_getshdr(scn, &sh) == nullptr) return nullptr;
    sh.sh_name = static_cast<GElf_Word>(name);
    sh.sh_type = type;
    sh.sh_flags = flags;
    sh.sh_addralign = std::max<GElf_Xword>(align, 1);
    sh.sh_size = size;
    if (gelf_update_shdr(scn, &sh) == 0) return nullptr;
    return scn;
  };
  for (size_t i = 0; ok && i < sections.size(); ++i) {
    const OutSection& s = sections[i];
    ok = add(name_offsets[i], s.type, s.flags, s.align, s.data, s.size) != nullptr;
  }
  if (ok) {
    Elf_Scn* str = add(shstrtab_name, SHT_STRTAB, 0, 1, names.data(), names.size());
    ok = str != nullptr && gelf_getehdr(e, &eh) != nullptr;
    if (ok) {
      eh.e_shstrndx = static_cast<GElf_Half>(elf_ndxscn(str));
      ok = gelf_update_ehdr(e, &eh) != 0 && elf_update(e, ELF_C_WRITE) >= 0;
    }
  }
  if (!ok) *error = path + ": cannot write: " + elf_errmsg(-1);
  if (e != nullptr) elf_end(e);
  ::close(fd);
  if (!ok) ::unlink(path.c_str());
  return ok;
}

}  // namespace

std::optional<DwpIndex> ParseDwpIndex(std::string_view bytes, bool big_endian, std::string* error) {
  IndexReader r(bytes, big_endian);
  DwpIndex index;
  uint32_t first = 0, columns = 0, units = 0, slots = 0;
  if (!r.U32(&first) || !r.U32(&columns) || !r.U32(&units) || !r.U32(&slots)) {
    *error = "offset 0: index header truncated (" + std::to_string(bytes.size()) + " bytes)";
    return std::nullopt;
  }
  // Version 5 is a u16 and a u16 of padding; version 2 a u32.
  if (first == 2) {
    index.version = 2;
  } else if ((big_endian ? first >> 16 : first & 0xffff) == 5) {
    index.version = 5;
  } else {
    *error = "offset 0: unit index version " + std::to_string(first) + " is neither 2 nor 5";
    return std::nullopt;
  }
  if (columns == 0 || columns > kMaxColumns || slots > kMaxSlots || units > slots) {
    *error = "offset 4: " + std::to_string(columns) + " columns, " + std::to_string(units) +
             " units in " + std::to_string(slots) + " slots";
    return std::nullopt;
  }
  // Everything after the header: slots * 12 + columns * 4 + units * columns * 8 bytes.
  const uint64_t need =
      16 + uint64_t{slots} * 12 + uint64_t{columns} * 4 + uint64_t{units} * columns * 8;
  if (need > bytes.size()) {
    *error = "offset 16: the index needs " + std::to_string(need) + " bytes, the section has " +
             std::to_string(bytes.size());
    return std::nullopt;
  }
  std::vector<uint32_t> ids(columns);
  r.Seek(16 + size_t{slots} * 12);
  for (uint32_t& id : ids) r.U32(&id);
  const size_t offsets_at = r.pos();
  const size_t sizes_at = offsets_at + size_t{units} * columns * 4;
  std::vector<bool> seen(units + 1, false);
  for (uint32_t slot = 0; slot < slots; ++slot) {
    uint64_t id = 0;
    uint32_t row = 0;
    r.Seek(16 + size_t{slot} * 8);
    r.U64(&id);
    r.Seek(16 + size_t{slots} * 8 + size_t{slot} * 4);
    r.U32(&row);
    if (row == 0) continue;
    if (row > units || seen[row]) {
      *error = "offset " + std::to_string(16 + size_t{slots} * 8 + size_t{slot} * 4) + ": row " +
               std::to_string(row) + " of " + std::to_string(units) + " (or twice)";
      return std::nullopt;
    }
    seen[row] = true;
    DwpUnit u;
    u.id = id;
    for (uint32_t c = 0; c < columns; ++c) {
      DwpUnit::Part p;
      p.section = ids[c];
      r.Seek(offsets_at + (size_t{row - 1} * columns + c) * 4);
      r.U32(&p.offset);
      r.Seek(sizes_at + (size_t{row - 1} * columns + c) * 4);
      r.U32(&p.size);
      u.parts.push_back(p);
    }
    index.units.push_back(std::move(u));
  }
  return index;
}

std::string_view DwpSectionName(uint32_t version, uint32_t section) {
  if (version == 2) {
    switch (section) {
      case 1:
        return ".debug_info.dwo";
      case 3:
        return ".debug_abbrev.dwo";
      case 4:
        return ".debug_line.dwo";
      case 5:
        return ".debug_loc.dwo";
      case 6:
        return ".debug_str_offsets.dwo";
      case 8:
        return ".debug_macro.dwo";
      default:
        return {};  // 2 .debug_types (type units: not read), 7 .debug_macinfo
    }
  }
  switch (section) {
    case 1:
      return ".debug_info.dwo";
    case 3:
      return ".debug_abbrev.dwo";
    case 4:
      return ".debug_line.dwo";
    case 5:
      return ".debug_loclists.dwo";
    case 6:
      return ".debug_str_offsets.dwo";
    case 7:
      return ".debug_macro.dwo";
    case 8:
      return ".debug_rnglists.dwo";
    default:
      return {};
  }
}

bool CompactStrings(std::string_view offsets, std::string_view strings, bool big_endian,
                    bool header, std::string* new_offsets, std::string* new_strings) {
  new_offsets->assign(offsets);
  new_strings->clear();
  size_t pos = 0;
  if (header) {
    IndexReader r(offsets, big_endian);
    uint32_t length = 0;
    if (!r.U32(&length) || length >= 0xfffffff0u) return false;  // 64-bit DWARF: not rewritten
    pos = 8;
  }
  if (pos > offsets.size() || (offsets.size() - pos) % 4 != 0) return false;
  std::unordered_map<uint32_t, uint32_t> moved;  // old offset -> new
  for (; pos < offsets.size(); pos += 4) {
    uint32_t old = 0;
    IndexReader r(offsets.substr(pos, 4), big_endian);
    r.U32(&old);
    auto [it, fresh] = moved.try_emplace(old, 0);
    if (fresh) {
      if (old >= strings.size()) return false;
      const size_t len = strnlen(strings.data() + old, strings.size() - old);
      if (len == strings.size() - old) return false;  // not terminated
      if (new_strings->size() > 0xffffffffu - len - 1) return false;
      it->second = static_cast<uint32_t>(new_strings->size());
      new_strings->append(strings.data() + old, len).push_back('\0');
    }
    const uint32_t v = it->second;
    for (size_t i = 0; i < 4; ++i) {
      (*new_offsets)[pos + i] = static_cast<char>(big_endian ? v >> (8 * (3 - i)) : v >> (8 * i));
    }
  }
  return true;
}

bool SafeRelativeName(std::string_view name) {
  if (name.empty() || name.size() > kMaxName || name.front() == '/') return false;
  size_t start = 0;
  while (start <= name.size()) {
    size_t end = name.find('/', start);
    if (end == std::string_view::npos) end = name.size();
    const std::string_view part = name.substr(start, end - start);
    if (part.empty() || part == "." || part == "..") return false;
    start = end + 1;
  }
  return name.find('\0') == std::string_view::npos;
}

std::unique_ptr<DwpPackage> DwpPackage::Open(const std::string& path, std::string* error) {
  std::unique_ptr<DwpPackage> p(new DwpPackage());
  p->path_ = path;
  p->elf_ = OpenElf(path, error);
  if (p->elf_.elf == nullptr) return nullptr;
  GElf_Ehdr eh;
  if (gelf_getehdr(p->elf_.elf, &eh) == nullptr) {
    *error = path + ": bad ELF header";
    return nullptr;
  }
  p->elf_class_ = eh.e_ident[EI_CLASS];
  p->elf_data_ = eh.e_ident[EI_DATA];
  p->machine_ = eh.e_machine;
  size_t shstrndx = 0;
  if (elf_getshdrstrndx(p->elf_.elf, &shstrndx) != 0) {
    *error = path + ": no section names";
    return nullptr;
  }
  for (Elf_Scn* scn = elf_nextscn(p->elf_.elf, nullptr); scn; scn = elf_nextscn(p->elf_.elf, scn)) {
    GElf_Shdr sh;
    if (gelf_getshdr(scn, &sh) == nullptr || sh.sh_type == SHT_NOBITS) continue;
    const char* name = elf_strptr(p->elf_.elf, shstrndx, sh.sh_name);
    if (name == nullptr) continue;
    const std::string_view n(name);
    if (!n.starts_with(".debug_")) continue;
    if (sh.sh_flags & SHF_COMPRESSED) elf_compress(scn, 0, 0);  // contributions are cut raw
    Elf_Data* d = elf_getdata(scn, nullptr);
    if (d == nullptr || d->d_buf == nullptr) continue;
    p->sections_.push_back({std::string(n), static_cast<const char*>(d->d_buf), d->d_size});
  }
  const Section* index = p->Find(".debug_cu_index");
  if (index == nullptr) {
    *error = path + ": no .debug_cu_index: not a DWARF package";
    return nullptr;
  }
  std::string why;
  std::optional<DwpIndex> parsed =
      ParseDwpIndex(std::string_view(index->data, index->size), p->elf_data_ == ELFDATA2MSB, &why);
  if (!parsed) {
    *error = path + ": .debug_cu_index: " + why;
    return nullptr;
  }
  p->index_ = std::move(*parsed);
  for (size_t i = 0; i < p->index_.units.size(); ++i) p->by_id_.emplace(p->index_.units[i].id, i);
  // Contributions must lie inside their sections.
  for (const DwpUnit& u : p->index_.units) {
    for (const DwpUnit::Part& part : u.parts) {
      const Section* s = p->Find(DwpSectionName(p->index_.version, part.section));
      if (s != nullptr && uint64_t{part.offset} + part.size > s->size) {
        char id[24];
        std::snprintf(id, sizeof(id), "0x%016llx", static_cast<unsigned long long>(u.id));
        *error = path + ": .debug_cu_index: unit " + id + ": " + s->name + " contribution at " +
                 std::to_string(part.offset) + "+" + std::to_string(part.size) + " past its end (" +
                 std::to_string(s->size) + ")";
        return nullptr;
      }
    }
  }
  return p;
}

size_t DwpPackage::Bytes() const {
  size_t n = sizeof(*this) + index_.units.size() * (sizeof(DwpUnit) + 8 * sizeof(DwpUnit::Part));
  for (const Section& s : sections_) n += s.size;
  return n;
}

const DwpPackage::Section* DwpPackage::Find(std::string_view name) const {
  if (name.empty()) return nullptr;
  for (const Section& s : sections_) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

bool DwpPackage::WriteUnit(uint64_t id, const std::string& out, size_t* written,
                           std::string* error) const {
  auto it = by_id_.find(id);
  const DwpUnit* unit = it == by_id_.end() ? nullptr : &index_.units[it->second];
  if (unit == nullptr) {
    *error = "no unit with that dwo id";
    return false;
  }
  std::vector<OutSection> sections;
  const Section* str = Find(".debug_str.dwo");
  std::string offsets, strings;  // the unit's own strings (CompactStrings), when they can be
  bool compact = false;
  for (const DwpUnit::Part& part : unit->parts) {
    const Section* s = Find(DwpSectionName(index_.version, part.section));
    if (s == nullptr) continue;
    const char* data = s->data + part.offset;
    size_t size = part.size;
    if (s->name == ".debug_str_offsets.dwo" && str != nullptr &&
        CompactStrings(std::string_view(data, size), std::string_view(str->data, str->size),
                       elf_data_ == ELFDATA2MSB, index_.version == 5, &offsets, &strings)) {
      compact = true;
      data = offsets.data();
      size = offsets.size();
    }
    sections.push_back({s->name, SHT_PROGBITS, 0, 1, data, size});
  }
  if (str != nullptr) {
    sections.push_back({str->name, SHT_PROGBITS, SHF_MERGE | SHF_STRINGS, 1,
                        compact ? strings.data() : str->data,
                        compact ? strings.size() : str->size});
  }
  for (const OutSection& o : sections) *written += o.size;
  return WriteElf(out, elf_class_, elf_data_, machine_, sections, error);
}

bool WriteDebugSections(Elf* elf, const std::string& out, std::string* error) {
  GElf_Ehdr eh;
  size_t shstrndx = 0;
  if (gelf_getehdr(elf, &eh) == nullptr || elf_getshdrstrndx(elf, &shstrndx) != 0) {
    *error = "bad ELF header";
    return false;
  }
  std::vector<OutSection> sections;
  for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn; scn = elf_nextscn(elf, scn)) {
    GElf_Shdr sh;
    if (gelf_getshdr(scn, &sh) == nullptr || sh.sh_type == SHT_NOBITS) continue;
    const char* n = elf_strptr(elf, shstrndx, sh.sh_name);
    if (n == nullptr || !(std::string_view(n).starts_with(".debug_") ||
                          std::string_view(n).starts_with(".zdebug_"))) {
      continue;
    }
    Elf_Data* d = elf_rawdata(scn, nullptr);
    if (d == nullptr || d->d_buf == nullptr) continue;
    sections.push_back(
        {n, sh.sh_type, sh.sh_flags & SHF_COMPRESSED, sh.sh_addralign, d->d_buf, d->d_size});
  }
  return WriteElf(out, eh.e_ident[EI_CLASS], eh.e_ident[EI_DATA], eh.e_machine, sections, error);
}

}  // namespace jitsym::native
