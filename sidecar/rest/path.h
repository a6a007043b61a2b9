// Path-style Table service URLs, as Azurite serves them:
//   /<account>/Tables                      table list and create
//   /<account>/Tables('name')              one table (delete)
//   /<account>/<table> or /<table>()       entity insert, entity query
//   /<account>/<table>(PartitionKey='p',RowKey='r')   one entity
//   /<account>/$batch                      entity group transaction
// Keys are single-quoted with quotes doubled, and percent-encoded.
//
// Thread safety: pure functions.
#pragma once

#include <string>
#include <string_view>

#include "engine/status.h"

namespace sidetable::sidecar::rest {

enum class Resource : uint8_t {
  kTables,    // /acct/Tables
  kTable,     // /acct/Tables('name')
  kEntities,  // /acct/table, /acct/table()
  kEntity,    // /acct/table(PartitionKey='..',RowKey='..')
  kBatch,     // /acct/$batch
  kService,   // /acct or /acct/ (service properties, stats: not served)
};

struct RestPath {
  std::string account;
  Resource resource = Resource::kService;
  std::string table;  // kTable, kEntities, kEntity
  std::string pk, rk;  // kEntity
};

// `raw` is the request target's path, still percent-encoded. InvalidInput
// for a malformed path or key literal.
Result<RestPath> ParsePath(std::string_view raw);

// %XX decoding ('+' stays '+' in paths); InvalidInput for a bad escape.
Result<std::string> PercentDecode(std::string_view s, bool plus_is_space = false);

// 'it''s' -> it's, starting at s[*pos] == '\''; advances *pos past the
// closing quote. InvalidInput when unterminated.
Result<std::string> ParseQuoted(std::string_view s, size_t* pos);

// The inverse, for links: 'it''s' with the quotes doubled, percent-encoded
// where a path needs it.
std::string QuoteKey(std::string_view key);

}  // namespace sidetable::sidecar::rest
