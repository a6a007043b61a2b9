// libFuzzer target for the server's trust boundary: wire::DecodeRequest.
//
// Any byte string must decode to a Request or an InvalidInput status, never
// crash, hang or leak. An accepted request must survive a re-encode and
// decode unchanged in its key fields (the encoder and decoder agree).
#include <cstdint>
#include <cstdlib>
#include <string>

#include "protocol/wire.h"

using sidetable::Code;
using sidetable::wire::DecodeRequest;
using sidetable::wire::EncodeRequest;
using sidetable::wire::Request;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view frame(reinterpret_cast<const char*>(data), size);
  Request r;
  sidetable::Status s = DecodeRequest(frame, &r);
  if (!s.ok()) {
    // An entity declaring more than 252 properties is refused at decoding
    // with the engine's code (protocol/wire.h).
    if (s.code() != Code::kInvalidInput && s.code() != Code::kTooManyProperties) std::abort();
    return 0;
  }
  std::string again;
  EncodeRequest(r, &again);
  Request r2;
  if (!DecodeRequest(again, &r2).ok()) std::abort();
  if (r2.op != r.op || r2.id != r.id || r2.table != r.table || r2.ops.size() != r.ops.size() ||
      r2.filter != r.filter || r2.select != r.select || r2.issue.has_value() != r.issue.has_value()) {
    std::abort();
  }
  for (size_t i = 0; i < r.ops.size(); i++) {
    if (!(r2.ops[i].entity.properties == r.ops[i].entity.properties)) std::abort();
  }
  return 0;
}
