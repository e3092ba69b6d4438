// perf script text as jitsym annotate reads it: every line through the line parser, and the
// offsets it returns used the way annotate uses them (they must stay inside the line).
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "client/perf_script_parser.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    const std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    jitsym::client::PerfScriptSample sample;
    jitsym::client::PerfScriptFrame frame;
    const auto kind = jitsym::client::ParsePerfScriptLine(line, &sample, &frame);
    const jitsym::client::PerfScriptFrame* f = nullptr;
    if (kind == jitsym::client::PerfScriptLine::kFrame) f = &frame;
    if (kind == jitsym::client::PerfScriptLine::kSample && sample.frame) f = &*sample.frame;
    if (f != nullptr) {
      if (f->ip_end > line.size() || f->sym_begin > f->tail_begin || f->tail_begin > line.size() ||
          f->sym_begin < f->ip_end) {
        std::abort();
      }
      (void)jitsym::client::NeedsJitName(*f);
      if (f->has_dso) {
        const auto pid = jitsym::client::PidOfJitDso(f->dso);
        if (pid && *pid <= 0) std::abort();  // only positive pids are taken from a dso
      }
      (void)jitsym::client::StripSymbolOffset(f->sym);
    }
  }
  return 0;
}
