// The $batch body (multipart/mixed, one changeset of HTTP requests) and
// the service's multipart response. Parsing is a trust boundary: any bytes
// give parts or InvalidInput, never a crash (tests/sidecar/rest/rest_fuzz.cc, a libFuzzer target built by tests/fuzz);
// the number of parts is bounded before anything is kept for them.
//
//   --batch_B
//   Content-Type: multipart/mixed; boundary=changeset_C
//
//   --changeset_C
//   Content-Type: application/http
//   Content-Transfer-Encoding: binary
//
//   POST http://host/account/table HTTP/1.1
//   Content-Type: application/json
//
//   {"PartitionKey":...}
//   --changeset_C--
//   --batch_B--
//
// Thread safety: pure functions.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/status.h"
#include "sidecar/rest/http.h"  // ReasonPhrase

namespace sidetable::sidecar::rest {

// An EGT holds at most 100 operations.
inline constexpr size_t kMaxBatchOperations = 100;

using HeaderList = std::vector<std::pair<std::string, std::string>>;  // names lower case

// One operation of the changeset: an HTTP request.
struct BatchRequest {
  std::string method;   // upper case
  std::string url;      // as written: absolute or a path
  HeaderList headers;
  std::string body;
  std::string_view Header(std::string_view lower_name) const;
};

// The boundary parameter of a multipart Content-Type ("" when absent).
std::string BoundaryOf(std::string_view content_type);

// The operations of the batch's one changeset, in order.
Result<std::vector<BatchRequest>> ParseBatch(std::string_view content_type, std::string_view body);

// One operation's outcome in the response.
struct BatchResponsePart {
  int status = 204;
  HeaderList headers;
  std::string body;
};

// The response body for boundary batchresponse_<id>, with one changeset
// (changesetresponse_<id>) of `parts`.
std::string WriteBatchResponse(std::string_view id, const std::vector<BatchResponsePart>& parts);

}  // namespace sidetable::sidecar::rest
