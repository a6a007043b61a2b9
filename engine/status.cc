#include "engine/status.h"

#include <array>

namespace sidetable {
namespace {

struct CodeInfo {
  Code code;
  std::string_view name;
  int http;
};

constexpr std::array<CodeInfo, 28> kCodes = {{
    {Code::kOk, "OK", 200},
    {Code::kInvalidInput, "InvalidInput", 400},
    {Code::kPropertyNameInvalid, "PropertyNameInvalid", 400},
    {Code::kPropertyNameTooLong, "PropertyNameTooLong", 400},
    {Code::kInvalidDuplicateRow, "InvalidDuplicateRow", 400},
    {Code::kOutOfRangeInput, "OutOfRangeInput", 400},
    {Code::kPropertyValueTooLarge, "PropertyValueTooLarge", 400},
    {Code::kEntityTooLarge, "EntityTooLarge", 400},
    {Code::kTooManyProperties, "TooManyProperties", 400},
    {Code::kKeyValueTooLarge, "KeyValueTooLarge", 400},
    {Code::kAuthorizationFailure, "AuthorizationFailure", 403},
    {Code::kAuthorizationPermissionMismatch, "AuthorizationPermissionMismatch", 403},
    {Code::kTableNotFound, "TableNotFound", 404},
    {Code::kResourceNotFound, "ResourceNotFound", 404},
    {Code::kTableAlreadyExists, "TableAlreadyExists", 409},
    {Code::kEntityAlreadyExists, "EntityAlreadyExists", 409},
    {Code::kTableBeingDeleted, "TableBeingDeleted", 409},
    {Code::kUpdateConditionNotSatisfied, "UpdateConditionNotSatisfied", 412},
    {Code::kRequestBodyTooLarge, "RequestBodyTooLarge", 413},
    {Code::kInternal, "InternalError", 500},
    {Code::kServerBusy, "ServerBusy", 503},
    {Code::kUnavailable, "ServiceUnavailable", 503},
    {Code::kInsufficientStorage, "InsufficientStorage", 507},
    {Code::kReadSessionNotAvailable, "ReadSessionNotAvailable", 504},
    {Code::kInvalidResourceName, "InvalidResourceName", 400},
    {Code::kCommandsInBatchActOnDifferentPartitions, "CommandsInBatchActOnDifferentPartitions", 400},
    {Code::kAuthenticationFailed, "AuthenticationFailed", 403},
    {Code::kNoReply, "NoReply", 0},
}};

const CodeInfo& Info(Code code) {
  for (const auto& info : kCodes) {
    if (info.code == code) return info;
  }
  return kCodes[19];  // InternalError: an out-of-range enum value is a bug
}

}  // namespace

std::string_view ErrorCodeName(Code code) { return Info(code).name; }

int HttpStatus(Code code) { return Info(code).http; }

std::optional<Code> ParseErrorCode(std::string_view name) {
  for (const auto& info : kCodes) {
    if (info.name == name) return info.code;
  }
  return std::nullopt;
}

std::string Status::ToString() const {
  if (ok()) return "OK";
  std::string out(ErrorCodeName(code_));
  if (!message_.empty()) {
    out += ": ";
    out += message_;
  }
  if (op_index_ >= 0) {
    out += " (operation ";
    out += std::to_string(op_index_);
    out += ")";
  }
  return out;
}

}  // namespace sidetable
