// The binary lookup answer's layout, shared by its encoder and decoder (docs/protocol.md,
// *Binary answers*, is the specification). Internal to proto/.
//
//   frame    := length:u32le payload[length]          (length 0: the end of the answer)
//   payload  := count:u32le result[count]
//   result   := members:uleb  (addr:uleb | raw:text)  the members the bits name, in bit order
//   string   := uleb k: 0 = a new string follows as text (the answer's next index), k >= 1 =
//               the answer's string k - 1 (sent by this frame or an earlier one)
//   text     := length:uleb bytes[length]
//   frames   := count:uleb (name:string file:string line:uleb column:uleb)[count]
#ifndef JITSYM_PROTO_BINARY_ANSWER_H_
#define JITSYM_PROTO_BINARY_ANSWER_H_

#include <cstdint>

namespace jitsym::proto::binary {

// Which members a result carries, in the order they follow.
enum Member : uint32_t {
  kFound = 1u << 0,        // no value: found is true
  kRaw = 1u << 1,          // addr is the input text (a per-address error), not a number
  kName = 1u << 2,         // string
  kOffset = 1u << 3,       // uleb
  kStart = 1u << 4,        // uleb
  kSize = 1u << 5,         // uleb
  kOrigin = 1u << 6,       // string: the origin's wire name
  kSource = 1u << 7,       // string
  kLoadedAt = 1u << 8,     // uleb
  kIncarnation = 1u << 9,  // uleb
  kFile = 1u << 10,        // string
  kLine = 1u << 11,        // uleb (< 2^32)
  kColumn = 1u << 12,      // uleb (< 2^32)
  kImage = 1u << 13,       // string
  kBuildId = 1u << 14,     // string
  kFrames = 1u << 15,      // uleb count, then the frames
  kClone = 1u << 16,       // string
  kReason = 1u << 17,      // string: the reason's wire name
  kDetail = 1u << 18,      // text
  kError = 1u << 19,       // text
  kAllMembers = (1u << 20) - 1,
};

}  // namespace jitsym::proto::binary

#endif  // JITSYM_PROTO_BINARY_ANSWER_H_
