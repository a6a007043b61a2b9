#include "sidecar/rest/path.h"

namespace sidetable::sidecar::rest {
namespace {

Status Invalid(std::string m) { return Status(Code::kInvalidInput, std::move(m)); }

int Hex(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Parses `Name='value'` at s[*pos]; `name` is what was found.
Status KeyPair(std::string_view s, size_t* pos, std::string* name, std::string* value) {
  const size_t eq = s.find('=', *pos);
  if (eq == std::string_view::npos) return Invalid("expected Name='value' in the entity's keys");
  *name = std::string(s.substr(*pos, eq - *pos));
  size_t p = eq + 1;
  if (p >= s.size() || s[p] != '\'') return Invalid("the value of " + *name + " must be a quoted string");
  auto v = ParseQuoted(s, &p);
  if (!v.ok()) return v.status();
  *value = std::move(v).value();
  *pos = p;
  return Status::OK();
}

}  // namespace

Result<std::string> PercentDecode(std::string_view s, bool plus_is_space) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); i++) {
    if (s[i] == '%') {
      if (i + 2 >= s.size()) return Invalid("bad percent-encoding");
      const int hi = Hex(s[i + 1]), lo = Hex(s[i + 2]);
      if (hi < 0 || lo < 0) return Invalid("bad percent-encoding");
      out += static_cast<char>(hi * 16 + lo);
      i += 2;
    } else if (plus_is_space && s[i] == '+') {
      out += ' ';
    } else {
      out += s[i];
    }
  }
  return out;
}

Result<std::string> ParseQuoted(std::string_view s, size_t* pos) {
  if (*pos >= s.size() || s[*pos] != '\'') return Invalid("expected a quoted string");
  std::string out;
  for (size_t i = *pos + 1; i < s.size(); i++) {
    if (s[i] != '\'') {
      out += s[i];
      continue;
    }
    if (i + 1 < s.size() && s[i + 1] == '\'') {
      out += '\'';
      i++;
      continue;
    }
    *pos = i + 1;
    return out;
  }
  return Invalid("unterminated quoted string");
}

std::string QuoteKey(std::string_view key) {
  static const char* kHex = "0123456789ABCDEF";
  std::string out = "'";
  for (unsigned char c : key) {
    if (c == '\'') {
      out += "''";
    } else if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  out += '\'';
  return out;
}

Result<RestPath> ParsePath(std::string_view raw) {
  RestPath p;
  if (raw.empty() || raw[0] != '/') return Invalid("the path must start with /");
  raw.remove_prefix(1);
  const size_t slash = raw.find('/');
  auto account = PercentDecode(raw.substr(0, slash));
  if (!account.ok()) return account.status();
  p.account = std::move(account).value();
  if (p.account.empty()) return Invalid("the path must name the account: /<account>/...");
  if (slash == std::string_view::npos) return p;  // service
  std::string_view rest_raw = raw.substr(slash + 1);
  if (rest_raw.empty()) return p;
  if (rest_raw.find('/') != std::string_view::npos) return Invalid("unexpected '/' in the resource path");
  auto decoded = PercentDecode(rest_raw);
  if (!decoded.ok()) return decoded.status();
  const std::string s = std::move(decoded).value();
  if (s == "$batch") {
    p.resource = Resource::kBatch;
    return p;
  }
  const size_t open = s.find('(');
  std::string name = s.substr(0, open);
  if (name.empty()) return Invalid("the path names no table");
  if (open == std::string::npos) {
    p.resource = name == "Tables" ? Resource::kTables : Resource::kEntities;
    p.table = name == "Tables" ? "" : name;
    return p;
  }
  if (s.back() != ')') return Invalid("expected ')' at the end of the path");
  const std::string_view inner(s.data() + open + 1, s.size() - open - 2);
  if (name == "Tables") {
    if (inner.empty()) {
      p.resource = Resource::kTables;
      return p;
    }
    size_t pos = 0;
    auto table = ParseQuoted(inner, &pos);
    if (!table.ok()) return table.status();
    if (pos != inner.size()) return Invalid("unexpected text after the table name");
    p.resource = Resource::kTable;
    p.table = std::move(table).value();
    return p;
  }
  p.table = std::move(name);
  if (inner.empty()) {
    p.resource = Resource::kEntities;
    return p;
  }
  bool have_pk = false, have_rk = false;
  size_t pos = 0;
  while (pos < inner.size()) {
    std::string key, value;
    ST_RETURN_IF_ERROR(KeyPair(inner, &pos, &key, &value));
    if (key == "PartitionKey" && !have_pk) {
      p.pk = std::move(value);
      have_pk = true;
    } else if (key == "RowKey" && !have_rk) {
      p.rk = std::move(value);
      have_rk = true;
    } else {
      return Invalid("unexpected key '" + key + "' in the entity's path (PartitionKey and RowKey, once each)");
    }
    if (pos < inner.size()) {
      if (inner[pos] != ',') return Invalid("expected ',' between the entity's keys");
      pos++;
      if (pos == inner.size()) return Invalid("expected a key after ','");
    }
  }
  if (!have_pk || !have_rk) return Invalid("the entity's path needs PartitionKey and RowKey");
  p.resource = Resource::kEntity;
  return p;
}

}  // namespace sidetable::sidecar::rest
