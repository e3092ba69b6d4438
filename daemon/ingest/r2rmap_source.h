// Reads one ReadyToRun perf map (`<image>.ni.r2rmap`, or crossgen1's `<image>.ni.{MVID}.map`):
// an image source. Its ranges are at RVAs and valid from time 0, since an image's layout never
// changes; lookups add the image's base in a process (daemon/query/image_lookup.h). A last
// record without its newline counts once the file stops growing (Settle); if later bytes
// complete it to another record, that one takes its place.
#ifndef JITSYM_DAEMON_INGEST_R2RMAP_SOURCE_H_
#define JITSYM_DAEMON_INGEST_R2RMAP_SOURCE_H_

#include <string>

#include "daemon/formats/r2rmap/r2rmap_parser.h"
#include "daemon/ingest/source.h"

namespace jitsym::ingest {

class R2rmapSource : public Source, private r2rmap::Sink {
 public:
  static constexpr Origin kOrigin = Origin::kR2rmap;

  // `legacy_signature`: for crossgen1's headerless files, the MVID their name carries.
  explicit R2rmapSource(std::string path, std::string legacy_signature = {});

  Origin origin() const override { return kOrigin; }
  void Feed(std::span<const uint8_t> data) override;
  bool Settle() override;
  std::string image_signature() const override;
  const r2rmap::Header& header() const { return parser_.header(); }

 private:
  void OnHeader(const r2rmap::Header& header) override;
  void OnRecord(const r2rmap::Record& record) override;
  void OnWithdrawn(const r2rmap::Record& provisional) override;
  void AfterParse();  // records, errors and warnings after the parser was given bytes

  r2rmap::Parser parser_;
  std::string legacy_signature_;
  bool reported_malformed_ = false;
};

// "System.Private.CoreLib.ni.r2rmap" -> "System.Private.CoreLib"; crossgen1's
// "mscorlib.ni.{0D2A...}.map" -> "mscorlib" with the MVID in *mvid. nullopt for other names.
std::optional<std::string> R2rmapImageName(std::string_view filename, std::string* mvid = nullptr);

}  // namespace jitsym::ingest

#endif  // JITSYM_DAEMON_INGEST_R2RMAP_SOURCE_H_
