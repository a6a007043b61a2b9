// A real sidetable process with its REST gateway (--rest 127.0.0.1:0), and
// an HTTP client that signs its requests with SharedKey as the SDKs do:
// the signature is computed here with libsodium, independently of the
// gateway's code.
#pragma once

#include <gtest/gtest.h>
#include <httplib.h>
#include <simdjson.h>
#include <sodium.h>

#include <strings.h>

#include <ctime>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tests/sidecar/e2e_fixture.h"

namespace sidetable::testing {

inline constexpr const char* kAccount = "devstoreaccount1";
inline constexpr const char* kAccountKey =
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";

inline std::string B64(std::string_view bytes) {
  std::string out(sodium_base64_ENCODED_LEN(bytes.size(), sodium_base64_VARIANT_ORIGINAL), '\0');
  sodium_bin2base64(out.data(), out.size(), reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(),
                    sodium_base64_VARIANT_ORIGINAL);
  out.resize(out.size() - 1);  // the terminating NUL
  return out;
}

inline std::string UnB64(std::string_view text) {
  std::string out(text.size(), '\0');
  size_t len = 0;
  EXPECT_EQ(sodium_base642bin(reinterpret_cast<unsigned char*>(out.data()), out.size(), text.data(), text.size(),
                              nullptr, &len, nullptr, sodium_base64_VARIANT_ORIGINAL),
            0);
  out.resize(len);
  return out;
}

inline std::string Hmac(std::string_view key, std::string_view msg) {
  unsigned char mac[crypto_auth_hmacsha256_BYTES];
  crypto_auth_hmacsha256_state st;
  crypto_auth_hmacsha256_init(&st, reinterpret_cast<const unsigned char*>(key.data()), key.size());
  crypto_auth_hmacsha256_update(&st, reinterpret_cast<const unsigned char*>(msg.data()), msg.size());
  crypto_auth_hmacsha256_final(&st, mac);
  return B64(std::string_view(reinterpret_cast<char*>(mac), sizeof mac));
}

// Percent-encodes everything but unreserved characters (RFC 3986).
inline std::string Enc(std::string_view s) {
  static const char* kHex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

// (PartitionKey='..',RowKey='..') with quotes doubled and percent-encoded.
inline std::string KeyPath(const std::string& table, std::string_view pk, std::string_view rk) {
  auto quote = [](std::string_view k) {
    std::string q;
    for (char c : k) {
      q += c;
      if (c == '\'') q += '\'';
    }
    return "'" + Enc(q) + "'";
  };
  return "/" + std::string(kAccount) + "/" + table + "(PartitionKey=" + quote(pk) + ",RowKey=" + quote(rk) + ")";
}

// An RFC 1123 date `offset_s` seconds from now (what SDKs send as x-ms-date).
inline std::string HttpDateNow(long offset_s = 0) {
  std::time_t now = std::time(nullptr) + offset_s;
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, "%a, %d %b %Y %H:%M:%S GMT", &tm);
  return buf;
}

struct Reply {
  int status = 0;
  std::string body;
  httplib::Headers headers;
  std::string Header(const std::string& name) const {
    auto it = headers.find(name);
    return it == headers.end() ? "" : it->second;
  }
  // odata.error.code of an error body ("" when none).
  std::string ErrorCode() const {
    simdjson::dom::parser p;
    simdjson::dom::element doc;
    std::string_view code;
    if (p.parse(body).get(doc) || doc["odata.error"]["code"].get_string().get(code)) return "";
    return std::string(code);
  }
  std::string ErrorMessage() const {
    simdjson::dom::parser p;
    simdjson::dom::element doc;
    std::string_view m;
    if (p.parse(body).get(doc) || doc["odata.error"]["message"]["value"].get_string().get(m)) return "";
    return std::string(m);
  }
};

enum class Sign { kSharedKey, kSharedKeyLite, kNone };

class RestTest : public SidecarTest {
 protected:
  std::vector<std::string> ServerArgs() override { return {"--durability", "os", "--rest", "127.0.0.1:0"}; }

  void SetUp() override {
    ASSERT_EQ(sodium_init() < 0, false);
    SidecarTest::SetUp();
    ConnectRest();
  }

  // (Again after a restart: the gateway's port is a new one.)
  void ConnectRest() {
    ASSERT_FALSE(server_->rest().empty()) << "no `rest` line in the ready file\n" << server_->Log();
    const std::string& hp = server_->rest();
    host_ = hp.substr(0, hp.rfind(':'));
    port_ = std::stoi(hp.substr(hp.rfind(':') + 1));
    ASSERT_GT(port_, 0);
    http_ = std::make_unique<httplib::Client>(host_, port_);
    http_->set_url_encode(false);  // the paths are encoded here, as signed
    http_->set_read_timeout(20, 0);
    key_ = UnB64(kAccountKey);
  }

  // `target` is the raw path and query (already encoded).
  Reply Send(const std::string& method, const std::string& target, const std::string& body = "",
             httplib::Headers extra = {}, Sign sign = Sign::kSharedKey) {
    return SendOn(*http_, method, target, body, std::move(extra), sign);
  }

  // Send on a client of the caller's (one per thread); with `quiet`, no
  // response is a status of 0 rather than a failure.
  Reply SendOn(httplib::Client& http, const std::string& method, const std::string& target, const std::string& body,
               httplib::Headers extra = {}, Sign sign = Sign::kSharedKey, bool quiet = false) const {
    return SendDated(http, method, target, body, RequestDates{HttpDateNow(), std::nullopt},
                     std::move(extra), sign, quiet);
  }

  // The date headers a request carries (nullopt: not sent). The signature
  // covers x-ms-date when sent, else Date, as the SDKs sign.
  struct RequestDates {
    std::optional<std::string> x_ms_date;
    std::optional<std::string> date;
  };
  Reply SendDated(httplib::Client& http, const std::string& method, const std::string& target,
                  const std::string& body, const RequestDates& dates, httplib::Headers extra = {},
                  Sign sign = Sign::kSharedKey, bool quiet = false) const {
    httplib::Request req;
    req.method = method;
    req.path = target;
    req.body = body;
    const std::string date = dates.x_ms_date ? *dates.x_ms_date : dates.date.value_or("");
    req.headers = {{"x-ms-version", "2019-02-02"},
                   {"Accept", "application/json;odata=minimalmetadata"},
                   {"DataServiceVersion", "3.0"}};
    if (dates.x_ms_date) req.headers.emplace("x-ms-date", *dates.x_ms_date);
    if (dates.date) req.headers.emplace("Date", *dates.date);
    std::string content_type;
    if (!body.empty() || method == "POST" || method == "PUT" || method == "PATCH") {
      content_type = "application/json";
    }
    for (const auto& [k, v] : extra) {
      if (strcasecmp(k.c_str(), "Content-Type") == 0) content_type = v;
      else req.headers.erase(k), req.headers.emplace(k, v);
    }
    if (!content_type.empty()) req.headers.emplace("Content-Type", content_type);
    const std::string path = target.substr(0, target.find('?'));
    std::string resource = "/" + std::string(kAccount) + path;
    if (target.find("comp=") != std::string::npos) {
      resource += "?comp=" + target.substr(target.find("comp=") + 5, target.find('&', target.find("comp=")) -
                                                                         (target.find("comp=") + 5));
    }
    if (sign == Sign::kSharedKey) {
      const std::string to_sign = method + "\n\n" + content_type + "\n" + date + "\n" + resource;
      req.headers.emplace("Authorization", "SharedKey " + std::string(kAccount) + ":" + Hmac(key_, to_sign));
    } else if (sign == Sign::kSharedKeyLite) {
      req.headers.emplace("Authorization", "SharedKeyLite " + std::string(kAccount) + ":" + Hmac(key_, date + "\n" + resource));
    }
    Reply r;
    auto res = http.send(req);
    if (!res) {
      if (quiet) return r;
      ADD_FAILURE() << method << " " << target << ": no response (" << httplib::to_string(res.error()) << ")";
      return r;
    }
    r.status = res->status;
    r.body = res->body;
    r.headers = res->headers;
    return r;
  }

  Reply CreateTable(const std::string& name) {
    return Send("POST", "/" + std::string(kAccount) + "/Tables", "{\"TableName\":\"" + name + "\"}");
  }
  Reply InsertJson(const std::string& table, const std::string& json, httplib::Headers extra = {}) {
    return Send("POST", "/" + std::string(kAccount) + "/" + table, json, std::move(extra));
  }
  Reply GetEntity(const std::string& table, const std::string& pk, const std::string& rk, httplib::Headers extra = {}) {
    return Send("GET", KeyPath(table, pk, rk), "", std::move(extra));
  }

  std::string host_;
  int port_ = 0;
  std::string key_;
  std::unique_ptr<httplib::Client> http_;
};

// A JSON document parsed for assertions.
struct Json {
  explicit Json(const std::string& text) : padded(text) { ok = parser.parse(padded).get(doc) == simdjson::SUCCESS; }
  std::string Str(std::string_view key) const {
    std::string_view v;
    if (doc[key].get_string().get(v)) return "<missing>";
    return std::string(v);
  }
  bool Has(std::string_view key) const { return doc[key].error() == simdjson::SUCCESS; }
  size_t Count(std::string_view array_key) const {
    simdjson::dom::array a;
    if (doc[array_key].get_array().get(a)) return 0;
    return a.size();
  }
  simdjson::padded_string padded;
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  bool ok = false;
};

}  // namespace sidetable::testing
