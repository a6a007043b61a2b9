// DOM-level access to the JSON entity format, for decoders of documents that
// embed entities (change events). Everyone else uses entity_json.h.
#pragma once

#include <simdjson.h>

#include "engine/edm.h"
#include "engine/status.h"

namespace sidetable::json {

// Reads an entity object. `with_timestamp` keeps "Timestamp" (as in change
// event images); without it "Timestamp" is ignored (as in user input, where
// the server sets it).
Status EntityFromJsonElement(simdjson::dom::element el, Entity* e, bool with_timestamp);

}  // namespace sidetable::json
