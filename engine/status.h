// Status and Result<T>: the one error type of every hot path.
//
// A Status carries an Azure-style error code (with its HTTP status), a
// human-readable message and, for entity group transactions, the index of the
// operation that failed. Both types are [[nodiscard]]: a caller that means to
// drop an error says so with IgnoreError().
//
// Thread safety: values; safe to copy between threads, not to mutate from two.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace sidetable {

// The error codes users of Azure Tables rely on, plus a few of our own
// (kInternal, kUnavailable, kInsufficientStorage, kReadSessionNotAvailable). Keep ErrorCodeName() and
// HttpStatus() in step, and kLastCode the last enumerator.
enum class Code : uint8_t {
  kOk = 0,
  kInvalidInput,                  // 400
  kPropertyNameInvalid,           // 400
  kPropertyNameTooLong,           // 400
  kInvalidDuplicateRow,           // 400
  kOutOfRangeInput,               // 400
  kPropertyValueTooLarge,         // 400
  kEntityTooLarge,                // 400
  kTooManyProperties,             // 400
  kKeyValueTooLarge,              // 400
  kAuthorizationFailure,          // 403
  kAuthorizationPermissionMismatch,  // 403
  kTableNotFound,                 // 404
  kResourceNotFound,              // 404
  kTableAlreadyExists,            // 409
  kEntityAlreadyExists,           // 409
  kTableBeingDeleted,             // 409
  kUpdateConditionNotSatisfied,   // 412
  kRequestBodyTooLarge,           // 413
  kInternal,                      // 500
  kServerBusy,                    // 503
  kUnavailable,                   // 503: the engine is closed or failed
  // 507 (WebDAV's Insufficient Storage): the disk is full; the write was not
  // acknowledged. Reads keep working and writes resume once space is freed.
  kInsufficientStorage,
  // 504: a read that carried session tokens (docs/consistency.md) waited its
  // waitMs and the derived table still did not cover them. Not 503: a blind
  // retry would wait again for the same worker; the caller decides.
  kReadSessionNotAvailable,
  // 400, as Azure names them: a table name with a leading digit, a character
  // outside [A-Za-z0-9] or a reserved name (a wrong length is
  // OutOfRangeInput); an EGT whose operations name two PartitionKeys.
  kInvalidResourceName,
  kCommandsInBatchActOnDifferentPartitions,
  // 403, as Azure names it: a token whose signature does not match, signed
  // with an unknown key, expired, not yet valid, or revoked through its
  // stored access policy (protocol/token.h).
  kAuthenticationFailed,
  // Client-side only, never on the wire: no reply arrived in time on any
  // attempt (the request may or may not have been executed). Distinct from
  // the server's own 503 ServiceUnavailable. HttpStatus() is 0.
  kNoReply,
};
inline constexpr Code kLastCode = Code::kNoReply;

// "EntityAlreadyExists", ...: the code as Azure spells it on the wire.
std::string_view ErrorCodeName(Code code);
// 400, 404, ...
int HttpStatus(Code code);
// Inverse of ErrorCodeName; nullopt for an unknown name.
std::optional<Code> ParseErrorCode(std::string_view name);

class [[nodiscard]] Status {
 public:
  Status() = default;  // OK
  Status(Code code, std::string message, int op_index = -1)
      : code_(code), op_index_(op_index), message_(std::move(message)) {}

  static Status OK() { return Status(); }

  bool ok() const { return code_ == Code::kOk; }
  Code code() const { return code_; }
  const std::string& message() const { return message_; }
  // Index of the failing operation inside an EGT, or -1.
  int op_index() const { return op_index_; }
  Status WithOpIndex(int index) const& {
    Status s = *this;
    s.op_index_ = index;
    return s;
  }

  // "ResourceNotFound: no such entity (operation 3)".
  std::string ToString() const;

  // Dropping an error on purpose is an explicit call.
  void IgnoreError() const {}

 private:
  Code code_ = Code::kOk;
  int op_index_ = -1;
  std::string message_;
};

inline bool operator==(const Status& s, Code c) { return s.code() == c; }

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}  // NOLINT: implicit by design
  Result(Status status) : status_(std::move(status)) {}  // NOLINT

  bool ok() const { return status_.ok(); }
  const Status& status() const { return status_; }
  T& value() & { return *value_; }
  const T& value() const& { return *value_; }
  T&& value() && { return std::move(*value_); }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }
  T& operator*() & { return *value_; }
  const T& operator*() const& { return *value_; }

 private:
  Status status_;
  std::optional<T> value_;
};

}  // namespace sidetable

// Returns early with the status of `expr` when it is not OK.
#define ST_RETURN_IF_ERROR(expr)              \
  do {                                        \
    ::sidetable::Status st_status_ = (expr);  \
    if (!st_status_.ok()) return st_status_;  \
  } while (0)
