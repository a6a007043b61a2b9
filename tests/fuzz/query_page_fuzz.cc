// libFuzzer target for what a client trusts of a sidecar's query page:
// wire::DecodeQuery (Entity values), wire::IndexQuery (the page read in place,
// the client's PageView) and wire::PeekQueryContinuation (read-ahead).
//
// Any byte string must decode or fail with a Status, never crash, hang or
// read out of bounds. The three readers must agree: the same verdict and
// code, the same continuation (see the "tailAt" note below), and for each
// entity the same keys, ETag, timestamp and properties, found one by one or
// rebuilt whole.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "protocol/wire.h"

using namespace sidetable;
using namespace sidetable::wire;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view body(reinterpret_cast<const char*>(data), size);
  QueryReply full;
  QueryIndex index;
  std::optional<std::string> npk, nrk;
  const Status decoded = DecodeQuery(body, &full);
  const Status indexed = IndexQuery(body, &index);
  const Status peeked = PeekQueryContinuation(body, &npk, &nrk);
  if (decoded.code() != indexed.code()) std::abort();
  if (!decoded.ok()) return 0;
  // The peek accepts every page DecodeQuery accepts (it falls back to
  // walking the body). It finds the same continuation, unless the body's
  // "tailAt" points at other bytes that parse: the client refuses such a
  // page once decoded (client.cc, SameContinuation).
  if (!peeked.ok()) std::abort();
  if ((npk != full.next_pk || nrk != full.next_rk) && body.substr(1, 8) != "\xa6tailAt\xce") std::abort();
  if (index.next_pk != full.next_pk || index.next_rk != full.next_rk || index.plan != full.plan ||
      index.examined != full.examined || index.entities.size() != full.entities.size()) {
    std::abort();
  }
  for (size_t i = 0; i < full.entities.size(); i++) {
    const Entity& want = full.entities[i];
    const EntityRef& ref = index.entities[i];
    if (ref.pk != want.partition_key || ref.rk != want.row_key || ref.etag != want.etag ||
        ref.timestamp != want.timestamp) {
      std::abort();
    }
    Entity built;
    if (!EntityFromRef(ref, &built).ok() || built.properties != want.properties) std::abort();
    for (const Property& p : want.properties) {
      // A repeated name: Find returns the first, as Entity::Find does.
      PropertyView v;
      if (!FindProperty(ref, p.name, &v) || v.ToValue() != *want.Find(p.name)) std::abort();
    }
  }
  return 0;
}
