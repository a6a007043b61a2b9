// libFuzzer target for what a client trusts of a sidecar's change-log
// page: wire::DecodeChanges, both forms (MessagePack records and a raw page
// of the change log's own records, DecodeChangePage).
//
// Any byte string must decode or fail with a Status, never crash, hang or
// leak. What decodes must survive a MessagePack re-encode unchanged in its
// records' count and keys (the two forms carry the same records).
#include <cstdint>
#include <cstdlib>
#include <string>

#include "protocol/wire.h"

using sidetable::ChangeBatch;
using sidetable::wire::DecodeChanges;
using sidetable::wire::EncodeChanges;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view body(reinterpret_cast<const char*>(data), size);
  ChangeBatch b;
  if (!DecodeChanges(body, &b).ok()) return 0;
  std::string again;
  EncodeChanges(b, &again);
  ChangeBatch b2;
  if (!DecodeChanges(again, &b2).ok()) std::abort();
  if (b2.records.size() != b.records.size() || b2.last_lsn != b.last_lsn) std::abort();
  for (size_t i = 0; i < b.records.size(); i++) {
    if (b2.records[i].lsn != b.records[i].lsn || b2.records[i].ops.size() != b.records[i].ops.size() ||
        b2.records[i].partition_key != b.records[i].partition_key) {
      std::abort();
    }
  }
  return 0;
}
