// libFuzzer target for the token parser (protocol/token.h), which reads
// text straight from an unauthenticated client.
//
// Any byte string must parse to a Token or an InvalidInput status, never
// crash, hang or leak. A parsed token must be its own canonical spelling
// (CanonicalString gives back the input before its signature), and verifying
// and scope-checking it must answer with the documented codes only.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "protocol/token.h"

namespace tk = sidetable::token;
using sidetable::Code;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  sidetable::Result<tk::Token> t = tk::ParseToken(text);
  if (!t.ok()) {
    if (t.status().code() != Code::kInvalidInput) std::abort();
    return 0;
  }
  size_t sig = text.rfind("&sig=");
  if (sig == std::string_view::npos || t->signature.size() != 32 ||
      tk::CanonicalString(t->key_id, t->spec) != text.substr(0, sig)) {
    std::abort();
  }

  static const tk::Keyring* ring = [] {
    auto* r = new tk::Keyring;
    (void)r->Add("k1", std::string(32, 'a'));
    return r;
  }();
  sidetable::Status v = ring->Verify(*t, tk::TimePoint(std::chrono::seconds(1'800'000'000)));
  if (!v.ok() && v.code() != Code::kAuthenticationFailed) std::abort();
  sidetable::Status c = tk::CheckPoint(*t, tk::Permission::kRead, "orders", "acme", "1");
  if (!c.ok() && c.code() != Code::kAuthorizationFailure && c.code() != Code::kAuthorizationPermissionMismatch) {
    std::abort();
  }
  return 0;
}
