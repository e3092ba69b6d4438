// What the symbols operation (jitsym perfmap) is built on: RangeSetSnapshot::Latest against a
// brute-force "now" lookup of every address, the protocol round trip, and the perf map text.
#include <gtest/gtest.h>

#include <random>

#include "client/perfmap_export.h"
#include "daemon/index/range_set.h"
#include "proto/protocol.h"

namespace jitsym {
namespace {

TEST(RangeSetLatest, MatchesFindAtEveryAddress) {
  std::mt19937 rng(3);
  for (int round = 0; round < 40; ++round) {
    index::RangeSet set;
    std::shared_ptr<const index::RangeSetSnapshot> snap = set.Publish();
    uint64_t time = 1;
    const int n = 1 + static_cast<int>(rng() % 200);
    for (int i = 0; i < n; ++i) {
      const uint64_t start = rng() % 1000, size = 1 + rng() % 60;
      const uint32_t payload = rng() % 10 == 0 ? index::kTombstone : static_cast<uint32_t>(i);
      set.Add(start, size, time += rng() % 3, payload);
      if (rng() % 7 == 0) snap = set.Publish();  // several runs
    }
    snap = set.Publish();
    const std::vector<index::LatestPiece> pieces = snap->Latest();
    for (size_t k = 1; k < pieces.size(); ++k) {
      ASSERT_LE(pieces[k - 1].end, pieces[k].start) << "pieces overlap or are unsorted";
    }
    size_t p = 0;
    for (uint64_t a = 0; a < 1100; ++a) {
      while (p < pieces.size() && pieces[p].end <= a) ++p;
      const index::LatestPiece* piece =
          p < pieces.size() && pieces[p].start <= a ? &pieces[p] : nullptr;
      const index::Found f = snap->Find(a, std::nullopt);
      const bool live = f && f.range->payload != index::kTombstone;
      ASSERT_EQ(piece != nullptr, live) << "round " << round << " addr " << a;
      if (live) {
        ASSERT_EQ(piece->range, f.range) << "round " << round << " addr " << a;
      }
    }
  }
}

TEST(SymbolsProtocol, RequestAndResponseRoundTrip) {
  proto::Request request;
  request.id_json = "5";
  request.body = proto::SymbolsRequest{1234};
  std::string line;
  proto::EncodeRequest(request, &line);
  EXPECT_EQ(line, "{\"v\":1,\"id\":5,\"op\":\"symbols\",\"pid\":1234}\n");
  line.pop_back();
  auto decoded = proto::DecodeRequest(line);
  ASSERT_TRUE(decoded.request);
  EXPECT_EQ(std::get<proto::SymbolsRequest>(decoded.request->body).pid, 1234);
  EXPECT_TRUE(proto::DecodeRequest("{\"op\":\"symbols\"}").error);
  EXPECT_TRUE(proto::DecodeRequest("{\"op\":\"symbols\",\"pid\":-3}").error);

  proto::Response response;
  proto::SymbolsResponse symbols;
  symbols.pid = 1234;
  symbols.incarnation = 2;
  symbols.symbols.push_back({0x7f0000001000, 0x40, "JS:*f \"q\"", proto::Origin::kJitdump, ""});
  symbols.symbols.push_back(
      {0x7f0000002000, 0x10, "M", proto::Origin::kR2rmap, "System.Private.CoreLib"});
  response.body = symbols;
  std::string out;
  proto::EncodeResponse(response, &out);
  out.pop_back();
  auto back = proto::DecodeResponse(out);
  ASSERT_TRUE(back) << back.error().message;
  const auto& s = std::get<proto::SymbolsResponse>(back->body);
  EXPECT_EQ(s.pid, 1234);
  EXPECT_EQ(s.incarnation, 2u);
  ASSERT_EQ(s.symbols.size(), 2u);
  EXPECT_EQ(s.symbols[0].name, "JS:*f \"q\"");
  EXPECT_EQ(s.symbols[0].start, 0x7f0000001000u);
  EXPECT_EQ(s.symbols[1].image, "System.Private.CoreLib");
}

TEST(PerfMapText, LinesInOrderWithoutControlCharacters) {
  std::string text;
  client::FormatPerfMap({{0x7f0000001000, 0x40, "JS:*f\nx", proto::Origin::kJitdump, ""},
                         {0x7f0000002000, 0, "empty", proto::Origin::kJitdump, ""},
                         {0x10, 0x1, "", proto::Origin::kPerfmap, ""}},
                        &text);
  EXPECT_EQ(text, "7f0000001000 40 JS:*f x\n10 1 [unnamed]\n");
}

}  // namespace
}  // namespace jitsym
