// DOM-level access to the JSON entity format, for decoders of documents that
// embed entities (change events). Everyone else uses entity_json.h.
#pragma once

#include <simdjson.h>

#include "engine/edm.h"
#include "engine/status.h"

namespace sidetable::json {

// Reads an entity object into *e, overwriting what it held (its strings and
// property slots are reused, so a decoder that recycles entities allocates
// little). `with_timestamp` keeps "Timestamp" (as in change event images);
// without it "Timestamp" is ignored (as in user input, where the server sets
// it) and e->timestamp is 0. On an error *e holds part of the object.
Status EntityFromJsonElement(simdjson::dom::element el, Entity* e, bool with_timestamp);

}  // namespace sidetable::json
