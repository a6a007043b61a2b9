// One HTTP request being served: what the gateway parsed and checked
// (path, query, metadata level, principal), and the helpers every
// operation answers through. Internal to sidecar/rest/.
#pragma once

#include <optional>
#include <string>

#include "protocol/token.h"
#include "protocol/wire.h"
#include "sidecar/handler.h"
#include "sidecar/rest/gateway.h"
#include "sidecar/rest/http.h"
#include "sidecar/rest/odata.h"
#include "sidecar/rest/path.h"
#include "sidecar/rest/sas.h"

namespace sidetable::sidecar::rest {

struct Call {
  const HttpRequest& req;
  HttpResponse& res;
  const Handler* handler = nullptr;
  const GatewayHooks* hooks = nullptr;  // may be null
  RestPath path;
  QueryParams query;
  Metadata meta = Metadata::kMinimal;
  std::string request_id;
  std::string method;  // after X-HTTP-Method
  // The request's authority for the Handler: null when authentication is
  // off and the caller holds the account key (full access).
  std::optional<token::Token> principal;
  std::string caller;  // recorded in the change log: the account, or <account>:sas
  bool sas_lists_tables = false;  // an account SAS with srt c and sp l
  Links links;

  std::string_view Header(const char* name) const;
  // Prefer: return-no-content (the SDKs' createEntity, createTable): the
  // reply is 204 without the entity or table.
  bool PrefersNoContent() const {
    return Header("Prefer").find("return-no-content") != std::string_view::npos;
  }
  // x-ms-client-request-id as the write's client request id (a retry with
  // it is applied once, docs/protocol.md), when the engine accepts it
  // (1-128 printable ASCII characters); "" otherwise: the service allows
  // longer ids, and the write must not fail for it.
  std::string ClientRequestId() const;
  const token::Token* Principal() const { return principal ? &*principal : nullptr; }
  // Runs `r` through the Handler, within the tenant's quota when there is
  // a principal, counted in the metrics; on success *body is the reply
  // body (inside *frame).
  Status Execute(wire::Request& r, std::string* frame, std::string_view* body) const;
};

// The service's error response: status, x-ms-error-code and the odata.error body.
void SendError(Call& c, int status, std::string_view code, std::string_view message);
void SendStatus(Call& c, const Status& s);
// The message as the service words it: the text, the request id and the time.
std::string ServiceMessage(std::string_view message, std::string_view request_id);
void SendJson(Call& c, int status, std::string body);

// Continuation tokens travel as base64url: keys may hold any character,
// headers may not.
std::string EncodeToken(std::string_view key);
std::optional<std::string> DecodeToken(std::string_view token);

// A query's $top into r->top (absent: left unset; the Handler checks the
// 1..1000 range). False after answering 400 InvalidInput for a value that
// is not an integer.
bool ParseTop(Call& c, wire::Request* r);

// Operations (tables.cc, entities.cc, batch.cc).
void ServeTables(Call& c);
void ServeEntities(Call& c);
void ServeBatch(Call& c);

}  // namespace sidetable::sidecar::rest
