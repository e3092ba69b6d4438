#include "proto/array_answer_reader.h"

#include <utility>

namespace jitsym::proto {
namespace {

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

Error Malformed(std::string message, uint64_t offset) {
  return MakeError(ErrorKind::kMalformed, std::move(message), offset);
}

}  // namespace

ArrayAnswerReader::ArrayAnswerReader(std::string member, size_t max_element_bytes,
                                     size_t max_rest_bytes)
    : member_(std::move(member)),
      max_element_bytes_(max_element_bytes),
      max_rest_bytes_(max_rest_bytes) {}

Status ArrayAnswerReader::Feed(std::string_view bytes, const ElementFn& element) {
  for (size_t i = 0; i < bytes.size(); ++i, ++offset_) {
    const char c = bytes[i];
    if (mode_ == Mode::kElement) {
      // Most bytes are inside an element: its plain text is copied in runs.
      if (in_string_ && !escape_) {
        size_t j = i;
        while (j < bytes.size() && bytes[j] != '"' && bytes[j] != '\\') ++j;
        if (j > i) {
          if (element_.size() + (j - i) > max_element_bytes_) {
            return Malformed("an element of '" + member_ + "' is longer than " +
                                 std::to_string(max_element_bytes_) + " bytes",
                             offset_);
          }
          element_.append(bytes.substr(i, j - i));
          offset_ += j - i;
          i = j;
          if (i == bytes.size()) break;
        }
      }
      if (Status st = ElementByte(bytes[i], element); !st.ok()) return st;
      continue;
    }
    if (mode_ == Mode::kBetween) {
      if (IsSpace(c) || c == ',') continue;
      if (c == ']') {
        mode_ = Mode::kRest;
        rest_.push_back(']');
        --depth_;
        continue;
      }
      mode_ = Mode::kElement;
      element_.clear();
      element_depth_ = 0;
      in_string_ = escape_ = false;
      if (Status st = ElementByte(c, element); !st.ok()) return st;
      continue;
    }
    if (Status st = RestByte(c); !st.ok()) return st;
  }
  return OkStatus();
}

Status ArrayAnswerReader::RestByte(char c) {
  if (rest_.size() >= max_rest_bytes_) {
    return Malformed("the answer around '" + member_ + "' is longer than " +
                         std::to_string(max_rest_bytes_) + " bytes",
                     offset_);
  }
  rest_.push_back(c);
  if (in_string_) {
    if (escape_) {
      escape_ = false;
    } else if (c == '\\') {
      escape_ = true;
    } else if (c == '"') {
      in_string_ = false;
      if (in_key_) in_key_ = false;
      return OkStatus();
    }
    if (in_key_ && key_.size() <= member_.size()) key_.push_back(c);
    return OkStatus();
  }
  if (IsSpace(c)) return OkStatus();
  const bool member_value = value_of_member_;
  value_of_member_ = false;
  switch (c) {
    case '"':
      in_string_ = true;
      if (depth_ == 1 && key_expected_) {
        in_key_ = true;
        key_.clear();
      }
      break;
    case ':':
      if (depth_ == 1) {
        key_expected_ = false;
        value_of_member_ = key_ == member_;
      }
      break;
    case ',':
      if (depth_ == 1) key_expected_ = true;
      break;
    case '{':
    case '[':
      ++depth_;
      if (depth_ == 1) key_expected_ = c == '{';
      if (c == '[' && member_value && depth_ == 2) {
        if (array_seen_) return Malformed("'" + member_ + "' appears twice", offset_);
        array_seen_ = true;
        mode_ = Mode::kBetween;  // its elements are handed over, not kept
      }
      break;
    case '}':
    case ']':
      --depth_;
      break;
    default:
      break;
  }
  return OkStatus();
}

Status ArrayAnswerReader::ElementByte(char c, const ElementFn& element) {
  if (element_.size() >= max_element_bytes_) {
    return Malformed("an element of '" + member_ + "' is longer than " +
                         std::to_string(max_element_bytes_) + " bytes",
                     offset_);
  }
  if (in_string_) {
    element_.push_back(c);
    if (escape_) {
      escape_ = false;
    } else if (c == '\\') {
      escape_ = true;
    } else if (c == '"') {
      in_string_ = false;
      if (element_depth_ == 0) return EndElement(element);  // a string element
    }
    return OkStatus();
  }
  if (element_depth_ == 0 && (c == ',' || c == ']' || IsSpace(c)) && !element_.empty()) {
    // The end of a number or literal element.
    Status st = EndElement(element);
    if (!st.ok()) return st;
    if (c == ']') {
      mode_ = Mode::kRest;
      rest_.push_back(']');
      --depth_;
    }
    return OkStatus();
  }
  element_.push_back(c);
  switch (c) {
    case '"':
      in_string_ = true;
      break;
    case '{':
    case '[':
      ++element_depth_;
      break;
    case '}':
    case ']':
      if (--element_depth_ < 0) return Malformed("unbalanced '" + member_ + "' element", offset_);
      if (element_depth_ == 0) return EndElement(element);
      break;
    default:
      break;
  }
  return OkStatus();
}

Status ArrayAnswerReader::EndElement(const ElementFn& element) {
  mode_ = Mode::kBetween;
  ++elements_;
  Status st = element(element_);
  element_.clear();
  return st;
}

Result<Response> ArrayAnswerReader::Finish() {
  if (mode_ != Mode::kRest || in_string_ || depth_ != 0) {
    return Malformed("the answer ends inside '" + member_ + "'", offset_);
  }
  return DecodeResponse(rest_);
}

}  // namespace jitsym::proto
