// Reads an answer whose one array member may be larger than a client should hold (a `symbols`
// answer of a gigabyte, a long `processes` list): the text of each element of that array is
// handed over as soon as it is complete, and the rest of the line (its head and tail) is kept
// and decoded as a response whose array is empty. The line is fed in pieces of any size, so
// neither the line nor the array is ever held whole: only one element and the rest.
//
// Structural: the member is found as a key of the top-level object (a string that happens to
// hold `"symbols":[` is just a string), and elements end where their brackets close, strings
// and escapes followed.
#ifndef JITSYM_PROTO_ARRAY_ANSWER_READER_H_
#define JITSYM_PROTO_ARRAY_ANSWER_READER_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "daemon/util/result.h"
#include "proto/protocol.h"

namespace jitsym::proto {

class ArrayAnswerReader {
 public:
  using ElementFn = std::function<Status(std::string_view element)>;
  // `member`: the array's key ("symbols"). An element longer than max_element_bytes, or a
  // rest longer than max_rest_bytes, makes the answer malformed.
  explicit ArrayAnswerReader(std::string member, size_t max_element_bytes = size_t{64} << 20,
                             size_t max_rest_bytes = size_t{64} << 20);

  // The next bytes of the line (without its newline). Each element completed is passed to
  // `element`; its error (or a malformed line) stops the reading and is returned.
  Status Feed(std::string_view bytes, const ElementFn& element);
  // The line is complete: the response it holds, without the array's elements.
  Result<Response> Finish();

  uint64_t elements() const { return elements_; }

 private:
  enum class Mode {
    kRest,     // outside the array: kept in rest_
    kBetween,  // in the array, between elements
    kElement,  // in an element: kept in element_
  };
  // One byte outside the array; `c` is appended to rest_ first.
  Status RestByte(char c);
  Status ElementByte(char c, const ElementFn& element);
  Status EndElement(const ElementFn& element);

  std::string member_;
  size_t max_element_bytes_;
  size_t max_rest_bytes_;
  Mode mode_ = Mode::kRest;
  std::string rest_;
  std::string element_;
  uint64_t elements_ = 0;
  uint64_t offset_ = 0;  // of the byte being read, for error messages
  // Outside the array: nesting, and at the top level the key whose value comes next.
  int depth_ = 0;
  bool in_string_ = false;
  bool escape_ = false;
  bool key_expected_ = false;  // at depth 1: a string here is a key
  bool in_key_ = false;
  std::string key_;
  bool value_of_member_ = false;  // after `"member":`, before its value starts
  bool array_seen_ = false;
  // In an element: its own nesting and strings.
  int element_depth_ = 0;
};

}  // namespace jitsym::proto

#endif  // JITSYM_PROTO_ARRAY_ANSWER_READER_H_
