// Signed access tokens in the client library (docs/security.md): what an
// application tier needs to hand a tenant a token for exactly its tables and
// key ranges (the valet-key pattern), and to read one back. The format and
// its checks live with the wire protocol (protocol/token.h), because the
// sidecar verifies what the clients issue; this header is the clients' (and
// tools') door to it.
//
// Thread safety: stateless functions over values.
#pragma once

#include "protocol/token.h"

namespace sidetable::client::tokens {

using token::Permission;
using token::Permissions;
using token::StoredPolicy;
using token::TimePoint;
using token::Token;
using token::TokenSpec;

// Issue: TokenSpec in, signed text out (HMAC-SHA256 under `key_id`).
using token::IssueToken;
// Read one back without verifying it (inspection, debugging).
using token::ParseToken;
// Keys: base64 of at least 32 bytes, in a file only its owner can read.
using token::DecodeKey;
using token::LoadKeyFile;
// Permission letters "raudmc" and RFC 3339 UTC times, both ways.
using token::FormatTime;
using token::ParsePermissions;
using token::ParseTime;
using token::PermissionString;

}  // namespace sidetable::client::tokens
