// annotate's samples as a pprof profile (see pprof_sink.h).
#include "client/pprof_sink.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

namespace jitsym::client {
namespace {

void AppendNumber(uint64_t n, std::string* out) {
  out->append(reinterpret_cast<const char*>(&n), sizeof(n));
}

void AppendPiece(std::string_view s, std::string* out) {
  AppendNumber(s.size(), out);
  out->append(s);
}

}  // namespace

PprofSink::PprofSink(const std::vector<std::pair<std::string, std::string>>& labels,
                     const std::vector<std::string>& comments) {
  builder_.AddSampleType("samples", "count");
  builder_.SetPeriod("samples", "count", 1);
  for (const auto& [key, value] : labels) fixed_labels_.push_back(builder_.StringLabel(key, value));
  for (const std::string& c : comments) builder_.AddComment(c);
}

void PprofSink::BeginSample(std::string_view comm, int64_t pid, int64_t tid) {
  if (in_sample_) EndSample();
  in_sample_ = true;
  pid_ = pid;
  locations_.clear();
  labels_ = fixed_labels_;
  if (pid >= 0) labels_.push_back(builder_.NumLabel("pid", pid));
  if (tid >= 0) labels_.push_back(builder_.NumLabel("tid", tid));
  if (!comm.empty()) labels_.push_back(builder_.StringLabel("comm", comm));
}

uint64_t PprofSink::MappingOf(std::string_view file, std::string_view build_id, bool named) {
  // The builder interns mappings by their content: the same file is one mapping.
  pprof::ProfileBuilder::MappingSpec spec;
  spec.filename = file;
  spec.build_id = build_id;
  // Set where every location of the mapping was named here: pprof then trusts the names and
  // does not look for the file to symbolize it again.
  spec.has_functions = named;
  spec.has_filenames = named;
  spec.has_line_numbers = named;
  spec.has_inline_frames = named;
  return builder_.AddMapping(spec);
}

void PprofSink::AddFrame(const StackFrame& frame) {
  if (!in_sample_) return;
  const proto::LookupResult* r = frame.answer;
  // A location is a pc with what it was at the sample's time: JIT code at one address differs
  // between processes and over time, so jitsymd's answers are keyed by pid and name too.
  key_.clear();
  if (r != nullptr) {
    key_.push_back('j');
    AppendNumber(static_cast<uint64_t>(pid_), &key_);
    AppendNumber(frame.ip, &key_);
    AppendNumber(static_cast<uint64_t>(r->origin), &key_);
    AppendPiece(r->name, &key_);
    AppendPiece(r->image, &key_);
    AppendPiece(r->source, &key_);
  } else {
    key_.push_back('p');
    AppendNumber(frame.ip, &key_);
    AppendPiece(frame.dso, &key_);
    AppendPiece(frame.name, &key_);
    if (frame.dso.empty() || frame.dso[0] != '/' || frame.name.empty()) {
      AppendNumber(static_cast<uint64_t>(pid_), &key_);  // not a file's: the process's memory
    }
  }
  if (const uint64_t id = builder_.FindLocationByKey(key_)) {
    locations_.push_back(id);
    return;
  }
  lines_.clear();
  uint64_t mapping = 0;
  if (r != nullptr) {
    const std::string_view file = !r->image.empty() ? r->image : r->source;
    mapping = MappingOf(file, r->build_id, true);
    if (!r->frames.empty()) {
      for (const proto::Frame& f : r->frames) {  // innermost first, as pprof's lines
        const uint64_t fn = builder_.AddFunction(f.name, f.name, f.file, 0);
        lines_.push_back({fn, f.line, f.column});
      }
    } else {
      const uint64_t fn = builder_.AddFunction(r->name, r->name, r->file, 0);
      lines_.push_back({fn, r->line, r->column});
    }
  } else {
    if (!frame.dso.empty()) mapping = MappingOf(frame.dso, {}, !frame.name.empty());
    if (!frame.name.empty()) {
      const uint64_t fn = builder_.AddFunction(frame.name, frame.name, {}, 0);
      lines_.push_back({fn, 0, 0});
    }
  }
  locations_.push_back(builder_.AddLocationByKey(key_, mapping, frame.ip, lines_));
}

pprof::Profile PprofSink::Take() {
  pprof::Profile p = builder_.Take();
  auto is_binary = [&](const pprof::Mapping& m) {
    const std::string_view f = p.str(m.filename);
    return !f.empty() && f[0] == '/' && !f.ends_with(".dump") && !f.ends_with(".map") &&
           !f.ends_with(".mlpd") && !f.ends_with(".r2rmap");
  };
  std::stable_partition(p.mapping.begin(), p.mapping.end(), is_binary);
  return p;
}

void PprofSink::EndSample() {
  if (!in_sample_) return;
  in_sample_ = false;
  const int64_t one = 1;
  builder_.AddSample(locations_, {&one, 1}, labels_);
}

bool WriteProfileFile(const pprof::Profile& profile, const std::string& path) {
  return WriteFileBytes(pprof::Gzip(pprof::Encode(profile)), path);
}

bool WriteFileBytes(std::string_view data, const std::string& path) {
  const bool to_stdout = path == "-";
  std::FILE* f = to_stdout ? stdout : std::fopen(path.c_str(), "wb");
  bool ok = f != nullptr && std::fwrite(data.data(), 1, data.size(), f) == data.size();
  if (f != nullptr) ok = (to_stdout ? std::fflush(f) : std::fclose(f)) == 0 && ok;
  if (!ok) {
    std::fprintf(stderr, "jitsym: cannot write %s: %s\n", to_stdout ? "stdout" : path.c_str(),
                 std::strerror(errno));
  }
  return ok;
}

bool ParseLabel(std::string_view text, std::pair<std::string, std::string>* label,
                std::string* error) {
  const size_t eq = text.find('=');
  if (eq == std::string_view::npos || eq == 0) {
    *error = "--label wants KEY=VALUE, not '" + std::string(text) + "'";
    return false;
  }
  const std::string_view key = text.substr(0, eq);
  if (key == "pid" || key == "tid" || key == "comm") {
    *error = "--label " + std::string(key) + " is set on every sample already, from the profile";
    return false;
  }
  label->first = std::string(key);
  label->second = std::string(text.substr(eq + 1));
  return true;
}

}  // namespace jitsym::client
