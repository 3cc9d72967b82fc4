// Errors as values inside the engine. A Status is OK or a code plus a message that names the
// problem (the config key, the file offset, the request field). Result<T> holds a T or an error.
#pragma once

#include <cassert>
#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace llmserve {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,    // bad user input (request field, CLI flag, config value)
  kNotFound,           // missing file, model, request id
  kOutOfRange,         // context length exceeded, index past the end
  kDataLoss,           // malformed or truncated file
  kUnimplemented,      // a valid but unsupported feature (tensor type, template construct)
  kResourceExhausted,  // queue full, no KV blocks, limit hit
  kUnavailable,        // not ready, draining
  kDeadlineExceeded,
  kCancelled,
  kFailedPrecondition,
  kAlreadyExists,  // an id that a live request already holds
  kInternal,
};

const char* status_code_name(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status ok() { return {}; }
  bool is_ok() const { return code_ == StatusCode::kOk; }
  explicit operator bool() const { return is_ok(); }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  std::string to_string() const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

inline Status invalid_argument(std::string m) { return {StatusCode::kInvalidArgument, std::move(m)}; }
inline Status not_found(std::string m) { return {StatusCode::kNotFound, std::move(m)}; }
inline Status out_of_range(std::string m) { return {StatusCode::kOutOfRange, std::move(m)}; }
inline Status data_loss(std::string m) { return {StatusCode::kDataLoss, std::move(m)}; }
inline Status unimplemented(std::string m) { return {StatusCode::kUnimplemented, std::move(m)}; }
inline Status resource_exhausted(std::string m) { return {StatusCode::kResourceExhausted, std::move(m)}; }
inline Status unavailable(std::string m) { return {StatusCode::kUnavailable, std::move(m)}; }
inline Status internal_error(std::string m) { return {StatusCode::kInternal, std::move(m)}; }
inline Status failed_precondition(std::string m) { return {StatusCode::kFailedPrecondition, std::move(m)}; }
inline Status already_exists(std::string m) { return {StatusCode::kAlreadyExists, std::move(m)}; }

// A value or an error Status (never an OK Status).
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : data_(std::move(value)) {}  // NOLINT(google-explicit-constructor)
  Result(Status status) : data_(std::move(status)) {  // NOLINT(google-explicit-constructor)
    assert(!std::get<Status>(data_).is_ok());
  }

  bool is_ok() const { return std::holds_alternative<T>(data_); }
  explicit operator bool() const { return is_ok(); }

  T& value() & { return std::get<T>(data_); }
  const T& value() const& { return std::get<T>(data_); }
  T&& value() && { return std::get<T>(std::move(data_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  const Status& status() const {
    static const Status kOk;
    return is_ok() ? kOk : std::get<Status>(data_);
  }

 private:
  std::variant<T, Status> data_;
};

}  // namespace llmserve

#define LLMSERVE_CONCAT_INNER(a, b) a##b
#define LLMSERVE_CONCAT(a, b) LLMSERVE_CONCAT_INNER(a, b)

// Returns the Status from the enclosing function when it is not OK.
#define LLMSERVE_RETURN_IF_ERROR(expr)              \
  do {                                              \
    ::llmserve::Status _st = (expr);                \
    if (!_st.is_ok()) return _st;                   \
  } while (0)

// `LLMSERVE_ASSIGN_OR_RETURN(auto x, f());` binds the value or returns the error.
#define LLMSERVE_ASSIGN_OR_RETURN(lhs, expr)                                  \
  auto LLMSERVE_CONCAT(_res_, __LINE__) = (expr);                             \
  if (!LLMSERVE_CONCAT(_res_, __LINE__).is_ok())                              \
    return LLMSERVE_CONCAT(_res_, __LINE__).status();                         \
  lhs = std::move(LLMSERVE_CONCAT(_res_, __LINE__)).value()
