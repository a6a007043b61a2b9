// Handler: executes one decoded request against the engine and encodes the
// reply frame. The only place that maps protocol operations to engine calls.
//
// Thread safety: Handle() may run on many worker threads at once (the
// engine is thread-safe; the handler has no mutable state of its own).
#pragma once

#include <string>

#include "engine/engine.h"
#include "protocol/wire.h"
#include "sidecar/changestream/publisher.h"
#include "sidecar/config.h"
#include "sidecar/metrics.h"
#include "sidecar/watermarks.h"

namespace sidetable::sidecar {

class Handler {
 public:
  // `publisher` may be null (no change stream).
  Handler(Engine* engine, Metrics* metrics, const ServerConfig* config,
          changestream::Publisher* publisher, Watermarks* watermarks)
      : engine_(engine), metrics_(metrics), config_(config), publisher_(publisher),
        watermarks_(watermarks) {}

  // Appends the whole reply frame (header and body) to *out and returns the
  // outcome (Code::kOk or the error code sent).
  Code Handle(const wire::Request& request, std::string* out) const;

 private:
  Status Run(const wire::Request& r, std::string* body, uint16_t* http_status) const;

  Engine* engine_;
  Metrics* metrics_;
  const ServerConfig* config_;
  changestream::Publisher* publisher_;
  Watermarks* watermarks_;
};

}  // namespace sidetable::sidecar
