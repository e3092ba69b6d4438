#include "daemon/parse_worker/parser.h"

#include "daemon/parse_worker/serve.h"

namespace jitsym::parse_worker {

Result<SymbolizeReply> InProcessParser::Symbolize(const SymbolizeRequest& request, int) {
  return ServeSymbolize(modules_, ids_, request);
}

}  // namespace jitsym::parse_worker
