// libFuzzer target for the REST gateway's parsers (the trust boundary of
// every HTTP request): the first byte picks the parser, the rest is its
// input. 0: the $batch multipart body, 1: an entity body (with and without
// URL keys), 2: a URL path, 3: a SharedKey Authorization header, 4: the
// bytes of an HTTP/1.1 connection (the listener's request reader). Each must
// give a value or an error, never crash, and what it gives must hold its
// invariants (checked below, abort on violation). Built by tests/fuzz
// (-DSIDETABLE_FUZZ=ON) and replayed by rest_fuzz_replay_test.cc in the
// unit suite.
#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "engine/edm.h"
#include "sidecar/rest/http.h"
#include "sidecar/rest/multipart.h"
#include "sidecar/rest/odata.h"
#include "sidecar/rest/path.h"
#include "sidecar/rest/shared_key.h"

namespace {

void Check(bool ok) {
  if (!ok) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace sidetable;
  using namespace sidetable::sidecar::rest;
  if (size == 0) return 0;
  const std::string_view in(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 5) {
    case 0: {
      auto ops = ParseBatch("multipart/mixed; boundary=batch_1", in);
      if (ops.ok()) {
        Check(!ops->empty() && ops->size() <= kMaxBatchOperations);
        for (const auto& op : *ops) {
          Check(!op.method.empty() && op.body.size() <= in.size());
          for (char c : op.method) Check(!(c >= 'a' && c <= 'z'));
        }
      } else {
        Check(ops.status().code() == Code::kInvalidInput);
      }
      break;
    }
    case 1: {
      const std::string pk = "p", rk = "r";
      auto with_keys = ParseEntityBody(in, &pk, &rk);
      if (with_keys.ok()) Check(with_keys->partition_key == "p" && with_keys->row_key == "r" && with_keys->etag.empty());
      auto alone = ParseEntityBody(in, nullptr, nullptr);
      if (!alone.ok()) Check(alone.status().code() == Code::kInvalidInput || alone.status().code() == Code::kTooManyProperties);
      if (alone.ok()) Check(with_keys.ok());  // URL keys never make a body invalid
      break;
    }
    case 2: {
      auto p = ParsePath(in);
      auto alnum = [](const std::string& s) {
        for (unsigned char ch : s) {
          if (!std::isalnum(ch)) return false;
        }
        return true;
      };
      // Names the engine would accept (table names are alphanumeric; others
      // are refused later): what was parsed prints back to a path that
      // parses to the same keys.
      if (p.ok() && p->resource == Resource::kEntity && alnum(p->account) && alnum(p->table)) {
        auto again = ParsePath("/" + p->account + "/" + p->table + "(PartitionKey=" + QuoteKey(p->pk) +
                               ",RowKey=" + QuoteKey(p->rk) + ")");
        Check(again.ok() && again->pk == p->pk && again->rk == p->rk);
      }
      break;
    }
    case 3: {
      const std::vector<RestAccount> accounts = {{"acct", "key-bytes"}};
      SignedParts parts;
      parts.verb = "GET";
      parts.raw_path = "/acct/Tables";
      parts.path_account = "acct";
      parts.x_ms_date = "Mon, 01 Jan 2024 00:00:00 GMT";
      Status s = VerifySharedKey(in, parts, accounts, *ParseDateTime("2024-01-01T00:00:00Z"));
      Check(!s.ok() && s.code() == Code::kAuthenticationFailed);  // no input forges the signature
      break;
    }
    case 4: {
      // The same bytes whole and arriving in two pieces frame the same
      // requests, or fail with the same status; nothing reads past them.
      HttpLimits limits;
      limits.max_head_bytes = 1024;
      limits.max_headers = 16;
      limits.max_body_bytes = 4096;
      auto frame = [&](size_t cut, std::vector<std::string>* out) {
        HttpRequestReader r(limits);
        HttpRequest req;
        std::string buf;
        for (const std::string_view piece : {in.substr(0, cut), in.substr(cut)}) {
          buf.append(piece);
          while (true) {
            size_t consumed = 0;
            const auto o = r.Next(buf, &req, &consumed);
            if (o == HttpRequestReader::Outcome::kError) {
              Check(r.error_status() >= 400 && r.error_status() <= 505);
              out->push_back("error " + std::to_string(r.error_status()));
              return;
            }
            if (o == HttpRequestReader::Outcome::kNeedMore) break;
            Check(consumed > 0 && consumed <= buf.size() && req.body.size() <= limits.max_body_bytes);
            out->push_back(req.method + " " + req.target + " " + req.body);
            buf.erase(0, consumed);
          }
        }
      };
      std::vector<std::string> whole, split;
      frame(in.size(), &whole);
      frame(in.size() / 2, &split);
      Check(whole == split);
      break;
    }
  }
  return 0;
}
