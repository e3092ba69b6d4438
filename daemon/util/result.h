// The one way jitsym code says "this failed": Result<T> holds either a T or an Error (a kind and
// a message for a person), and Status is Result<void>. C++20 has no std::expected; this is the
// small part of it we need. docs/conventions.md says when to use it and when not.
//
// It lives in proto/ because proto/ is the only code the daemon and the client share (the
// client's profile parser returns it too); it depends on nothing but the standard library.
//
//   Result<Settings> r = Load(path);
//   if (!r) return r.error();          // pass the failure on, kind and message unchanged
//   Use(*r);
//
//   Status s = ledger.AdmitFile(uid);
//   if (!s.ok()) Log(s.error().message);
#ifndef JITSYM_DAEMON_UTIL_RESULT_H_
#define JITSYM_DAEMON_UTIL_RESULT_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace jitsym {

// What went wrong, for code that reacts differently (a message is for people only).
enum class ErrorKind {
  kUsage,          // the caller asked for something invalid (bad option, bad setting value)
  kNotThisFormat,  // the bytes are not of the format asked for at all (magic, header)
  kMalformed,      // the input is of the format but broken (truncated, inconsistent)
  kUnsupported,    // well-formed, but a version or feature we do not read
  kLimit,          // a configured limit refuses it
  kIo,             // the system refused (open, read; the message carries strerror)
};

std::string_view ErrorKindName(ErrorKind kind);

struct Error {
  ErrorKind kind = ErrorKind::kMalformed;
  std::string message;  // complete sentence fragment for a person: "config file x is not ..."
  // Where in the input, for kNotThisFormat and kMalformed of binary input (bytes from the start).
  uint64_t offset = 0;
};

inline Error MakeError(ErrorKind kind, std::string message, uint64_t offset = 0) {
  return Error{kind, std::move(message), offset};
}

// A T or an Error. Converts implicitly from either, so a function returns `value` or
// `MakeError(...)` alike. Reading the value of a failed Result (or the error of a good one) is a
// programming error (std::get throws).
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::in_place_index<0>, std::move(value)) {}      // NOLINT: implicit
  Result(Error error) : v_(std::in_place_index<1>, std::move(error)) {}  // NOLINT: implicit

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }

  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  const Error& error() const& { return std::get<1>(v_); }
  Error&& error() && { return std::get<1>(std::move(v_)); }

 private:
  std::variant<T, Error> v_;
};

// Success carries nothing.
template <>
class [[nodiscard]] Result<void> {
 public:
  Result() = default;
  Result(Error error) : error_(std::move(error)), ok_(false) {}  // NOLINT: implicit

  bool ok() const { return ok_; }
  explicit operator bool() const { return ok_; }
  const Error& error() const& { return error_; }
  Error&& error() && { return std::move(error_); }

 private:
  Error error_;
  bool ok_ = true;
};

using Status = Result<void>;

inline Status OkStatus() { return Status(); }

inline std::string_view ErrorKindName(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kUsage:
      return "usage";
    case ErrorKind::kNotThisFormat:
      return "not this format";
    case ErrorKind::kMalformed:
      return "malformed";
    case ErrorKind::kUnsupported:
      return "unsupported";
    case ErrorKind::kLimit:
      return "limit";
    case ErrorKind::kIo:
      return "i/o";
  }
  return "?";
}

}  // namespace jitsym

#endif  // JITSYM_DAEMON_UTIL_RESULT_H_
