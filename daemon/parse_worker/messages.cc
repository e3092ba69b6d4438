#include "daemon/parse_worker/messages.h"

#include "daemon/parse_worker/channel.h"

namespace jitsym::parse_worker {
namespace {

constexpr size_t kMaxPath = 4096;

Error Bad(std::string_view what) {
  return MakeError(ErrorKind::kMalformed, "parse worker message: " + std::string(what));
}

}  // namespace

std::string Encode(const SymbolizeRequest& m) {
  Writer w;
  w.PutString(m.path);
  w.Put(m.st);
  w.Put<uint8_t>(m.file_offsets);
  w.Put<uint8_t>(m.all_frames);
  w.Put(m.strings_token);
  w.Put(m.strings_known);
  w.Put<uint32_t>(static_cast<uint32_t>(m.addrs.size()));
  for (uint64_t a : m.addrs) w.Put(a);
  return std::move(w.bytes());
}

Result<SymbolizeRequest> DecodeSymbolizeRequest(std::string_view bytes) {
  Reader r(bytes);
  SymbolizeRequest m;
  m.path = r.GetString();
  m.st = r.Get<struct stat>();
  m.file_offsets = r.Get<uint8_t>() != 0;
  m.all_frames = r.Get<uint8_t>() != 0;
  m.strings_token = r.Get<uint64_t>();
  m.strings_known = r.Get<uint32_t>();
  const uint32_t n = r.GetCount(sizeof(uint64_t));
  m.addrs.resize(n);
  for (uint64_t& a : m.addrs) a = r.Get<uint64_t>();
  if (!r.ok() || !r.at_end() || m.path.size() > kMaxPath) return Bad("symbolize request");
  return m;
}

std::string Encode(const FileOpRequest& m) {
  Writer w;
  w.Put(static_cast<uint8_t>(m.kind));
  w.Put<uint8_t>(m.follow);
  w.PutString(m.path);
  return std::move(w.bytes());
}

Result<FileOpRequest> DecodeFileOpRequest(std::string_view bytes) {
  Reader r(bytes);
  FileOpRequest m;
  const uint8_t kind = r.Get<uint8_t>();
  m.follow = r.Get<uint8_t>() != 0;
  m.path = r.GetString();
  if (!r.ok() || !r.at_end() || kind < 1 || kind > 4 || m.path.size() > kMaxPath ||
      m.path.find('\0') != std::string::npos) {
    return Bad("file request");
  }
  m.kind = static_cast<FileOpKind>(kind);
  return m;
}

std::string Encode(const FileOpReply& m) {
  Writer w;
  w.Put(m.error);
  w.Put(m.st);
  w.Put<uint8_t>(m.served_by_process);
  w.PutString(m.resolved);
  return std::move(w.bytes());
}

Result<FileOpReply> DecodeFileOpReply(std::string_view bytes) {
  Reader r(bytes);
  FileOpReply m;
  m.error = r.Get<int32_t>();
  m.st = r.Get<struct stat>();
  m.served_by_process = r.Get<uint8_t>() != 0;
  m.resolved = r.GetString();
  if (!r.ok() || !r.at_end()) return Bad("file reply");
  return m;
}

std::string Encode(const SymbolizeReply& m) {
  Writer w;
  size_t size = 64 + m.error.size() + m.build_id.size() + m.dwarf_refusal.size() +
                m.answers.size() * (1 + 8 + 3 * 4 + 2 * 8 + 2 * 4) +
                m.frames.size() * sizeof(AnswerFrame);
  for (const std::string& s : m.strings) size += 4 + s.size();
  w.Reserve(size);
  w.PutString(m.error);
  w.PutString(m.build_id);
  w.Put<uint8_t>(m.stripped);
  w.PutString(m.dwarf_refusal);
  w.Put(m.strings_token);
  w.Put(m.strings_base);
  w.Put<uint32_t>(static_cast<uint32_t>(m.strings.size()));
  for (const std::string& s : m.strings) w.PutString(s);
  w.Put<uint32_t>(static_cast<uint32_t>(m.answers.size()));
  for (const AddressAnswer& a : m.answers) {
    w.Put<uint8_t>(a.state);
    if (a.state == AddressAnswer::kUnmapped) continue;
    w.Put(a.vaddr);
    if (a.state == AddressAnswer::kMiss) continue;
    w.Put(a.name);
    w.Put(a.clone);
    w.Put(a.missing);
    w.Put(a.start);
    w.Put(a.size);
    w.Put(a.first_frame);
    w.Put(a.frame_count);
  }
  w.Put<uint32_t>(static_cast<uint32_t>(m.frames.size()));
  w.PutBytes(m.frames.data(), m.frames.size() * sizeof(AnswerFrame));
  return std::move(w.bytes());
}

Result<SymbolizeReply> DecodeSymbolizeReply(std::string_view bytes) {
  Reader r(bytes);
  SymbolizeReply m;
  m.error = r.GetString();
  m.build_id = r.GetString();
  m.stripped = r.Get<uint8_t>() != 0;
  m.dwarf_refusal = r.GetString();
  m.strings_token = r.Get<uint64_t>();
  m.strings_base = r.Get<uint32_t>();
  const uint32_t strings = r.GetCount(sizeof(uint32_t));
  m.strings.reserve(strings);
  for (uint32_t k = 0; k < strings; ++k) m.strings.emplace_back(r.GetString());
  if (!r.ok() || m.strings_base == 0 || m.strings_base > (1u << 30)) return Bad("reply strings");
  const uint64_t count = uint64_t{m.strings_base} + m.strings.size();  // ids the reply reaches
  const uint32_t answers = r.GetCount(1);
  m.answers.resize(answers);
  for (AddressAnswer& a : m.answers) {
    const uint8_t state = r.Get<uint8_t>();
    if (state > AddressAnswer::kFound) return Bad("answer state");
    a.state = static_cast<AddressAnswer::State>(state);
    if (a.state == AddressAnswer::kUnmapped) continue;
    a.vaddr = r.Get<uint64_t>();
    if (a.state == AddressAnswer::kMiss) continue;
    a.name = r.Get<uint32_t>();
    a.clone = r.Get<uint32_t>();
    a.missing = r.Get<uint32_t>();
    a.start = r.Get<uint64_t>();
    a.size = r.Get<uint64_t>();
    a.first_frame = r.Get<uint32_t>();
    a.frame_count = r.Get<uint32_t>();
    if (a.name >= count || a.clone >= count || a.missing >= count) return Bad("answer string");
  }
  m.frames.resize(r.GetCount(sizeof(AnswerFrame)));
  for (AnswerFrame& f : m.frames) {
    f = r.Get<AnswerFrame>();
    if (f.name >= count || f.file >= count) return Bad("frame string");
  }
  if (!r.ok() || !r.at_end()) return Bad("reply");
  for (const AddressAnswer& a : m.answers) {
    if (uint64_t{a.first_frame} + a.frame_count > m.frames.size()) return Bad("answer frames");
  }
  return m;
}

}  // namespace jitsym::parse_worker
