// `token issue` and `token inspect` (token_commands.h).
#include <chrono>
#include <iostream>

#include "client/tokens.h"
#include "tools/cli/token_commands.h"

namespace sidetable::cli {

namespace tk = sidetable::client::tokens;

namespace {

tk::TimePoint Now() { return std::chrono::floor<std::chrono::seconds>(std::chrono::system_clock::now()); }

}  // namespace

// "1h", "-5m", "7d", "90s", or an absolute time.
Result<tk::TimePoint> ParseWhen(const std::string& text) {
  if (text.size() == 20) return tk::ParseTime(text);
  std::string_view v = text;
  bool negative = !v.empty() && v.front() == '-';
  if (negative) v.remove_prefix(1);
  if (v.size() < 2) return Status(Code::kInvalidInput, "expected a duration like 1h or a time like 2026-12-01T20:00:00Z: " + text);
  int64_t n = 0;
  for (char c : v.substr(0, v.size() - 1)) {
    if (c < '0' || c > '9' || n > 100'000'000) {
      return Status(Code::kInvalidInput, "expected a duration like 1h or a time like 2026-12-01T20:00:00Z: " + text);
    }
    n = n * 10 + (c - '0');
  }
  int64_t unit = 0;
  switch (v.back()) {
    case 's': unit = 1; break;
    case 'm': unit = 60; break;
    case 'h': unit = 3600; break;
    case 'd': unit = 86400; break;
    default:
      return Status(Code::kInvalidInput, "a duration ends in s, m, h or d: " + text);
  }
  return Now() + std::chrono::seconds(negative ? -n * unit : n * unit);
}

namespace {

int Issue(Session& s, const TokenArgs& a) {
  if (a.table.empty() == !a.table_prefix) return s.Usage("token issue: give one of --table, --table-prefix");
  if (a.via_sidecar && (!a.key_file.empty() || !a.key_id.empty())) {
    return s.Usage("token issue: --via-sidecar signs with the sidecar's key: leave out --key-file and --key-id");
  }
  if (!a.via_sidecar && (a.key_file.empty() || a.key_id.empty())) {
    return s.Usage("token issue: give --key-file and --key-id, or --via-sidecar (with --token)");
  }
  tk::TokenSpec spec;
  spec.table_is_prefix = a.table_prefix.has_value();
  spec.table = spec.table_is_prefix ? *a.table_prefix : a.table;
  spec.start_pk = a.pk_start;
  spec.start_rk = a.rk_start;
  spec.end_pk = a.pk_end;
  spec.end_rk = a.rk_end;
  if (!a.perms.empty()) {
    Result<tk::Permissions> p = tk::ParsePermissions(a.perms);
    if (!p.ok()) return s.Usage("--perms: " + p.status().message());
    spec.permissions = *p;
  }
  Status when;
  auto time_option = [&](const std::string& text, std::optional<tk::TimePoint>* out, const char* name) {
    if (text.empty() || !when.ok()) return;
    Result<tk::TimePoint> t = ParseWhen(text);
    if (t.ok()) *out = *t;
    else when = Status(Code::kInvalidInput, std::string(name) + ": " + t.status().message());
  };
  time_option(a.start, &spec.start, "--start");
  time_option(a.expiry, &spec.expiry, "--expiry");
  if (!when.ok()) return s.Usage(when.message());
  spec.tenant = a.tenant;
  spec.identity = a.identity;
  spec.policy_id = a.policy;
  if (a.via_sidecar) {
    client::Client* c = s.Client();
    if (!c) return s.connect_exit;
    Result<std::string> token = c->IssueToken(spec);
    if (!token.ok()) return s.Fail(token.status());
    s.out = *token + "\n";
    return s.Finish();
  }
  Result<std::string> key = tk::LoadKeyFile(a.key_file);
  if (!key.ok()) return s.Usage(key.status().message());
  Result<std::string> token = tk::IssueToken(spec, a.key_id, *key);
  if (!token.ok()) return s.Usage(token.status().message());
  s.out = *token + "\n";
  return s.Finish();
}

std::string Describe(tk::Permissions p) {
  static const char* kNames[] = {"read", "add", "update", "delete", "manage tables", "change log"};
  std::string out;
  for (int i = 0; i < 6; i++) {
    if (!(p & (1 << i))) continue;
    out += out.empty() ? "" : ", ";
    out += kNames[i];
  }
  return out;
}

std::string Relative(tk::TimePoint t) {
  auto d = t - Now();
  bool past = d.count() < 0;
  int64_t secs = past ? -d.count() : d.count();
  std::string amount = secs >= 172800 ? std::to_string(secs / 86400) + "d"
                       : secs >= 7200 ? std::to_string(secs / 3600) + "h"
                       : secs >= 120  ? std::to_string(secs / 60) + "m"
                                      : std::to_string(secs) + "s";
  return past ? amount + " ago" : "in " + amount;
}

int Inspect(Session& s, const TokenArgs& a) {
  std::string text = a.token;
  if (text == "-") {
    std::getline(std::cin, text);
  }
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' ')) text.pop_back();
  Result<tk::Token> t = tk::ParseToken(text);
  if (!t.ok()) return s.Usage(t.status().message());
  const tk::TokenSpec& sp = t->spec;
  auto line = [&](const char* name, const std::string& value) {
    s.out += name;
    s.out.append(13 - std::string_view(name).size(), ' ');
    s.out += value + "\n";
  };
  auto quoted = [](const std::optional<std::string>& v) { return v ? "\"" + *v + "\"" : std::string("(none)"); };
  line("key id", t->key_id);
  line(sp.table_is_prefix ? "table prefix" : "table", sp.table_is_prefix && sp.table.empty() ? "(every table)" : sp.table);
  line("pk start", quoted(sp.start_pk));
  line("rk start", quoted(sp.start_rk));
  line("pk end", quoted(sp.end_pk));
  line("rk end", quoted(sp.end_rk));
  line("permissions", sp.permissions ? tk::PermissionString(*sp.permissions) + " (" + Describe(*sp.permissions) + ")"
                                     : "(from the stored policy)");
  line("start", sp.start ? tk::FormatTime(*sp.start) + " (" + Relative(*sp.start) + ")" : "(none)");
  line("expiry", sp.expiry ? tk::FormatTime(*sp.expiry) + " (" + Relative(*sp.expiry) + ")" : "(from the stored policy)");
  line("tenant", sp.tenant);
  line("caller", sp.identity);
  line("policy", sp.policy_id.empty() ? "(none)" : sp.policy_id);
  line("signature", "not verified (inspect never reads a key)");
  return s.Finish();
}

}  // namespace

CLI::App* AddTokenCommands(CLI::App& app, TokenArgs& a) {
  auto* token = app.add_subcommand("token", "issue or inspect signed access tokens (docs/security.md)");
  token->require_subcommand(1);
  auto* issue = token->add_subcommand("issue", "sign a token with a key file (or have the sidecar sign it) and print it");
  issue->add_option("--key-file", a.key_file, "file holding the signing key, base64, mode 600");
  issue->add_option("--key-id", a.key_id, "the key's id, as the sidecar's keyring names it");
  issue->add_flag("--via-sidecar", a.via_sidecar,
                  "have the sidecar sign it (IssueToken): --token must hold m, and the new token lie within it");
  issue->add_option("--table", a.table, "the one table the token is for");
  auto optional = [&](const char* name, std::optional<std::string>& out, const char* help) {
    issue->add_option_function<std::string>(name, [&out](const std::string& v) { out = v; }, help);
  };
  optional("--table-prefix", a.table_prefix, "every table whose name starts with this (\"\" for all)");
  auto& bound = optional;
  bound("--pk-start", a.pk_start, "lowest PartitionKey (inclusive)");
  bound("--rk-start", a.rk_start, "lowest RowKey within --pk-start (inclusive; needs --pk-start)");
  bound("--pk-end", a.pk_end, "highest PartitionKey (inclusive)");
  bound("--rk-end", a.rk_end, "highest RowKey within --pk-end (inclusive; needs --pk-end)");
  issue->add_option("--perms", a.perms, "letters of raudmc: read, add, update, delete, manage tables, change log");
  issue->add_option("--start", a.start, "valid from: a duration from now (-5m) or YYYY-MM-DDTHH:MM:SSZ");
  issue->add_option("--expiry", a.expiry, "valid until: a duration from now (1h, 7d) or YYYY-MM-DDTHH:MM:SSZ");
  issue->add_option("--tenant", a.tenant, "tenant label for metrics and quotas ([A-Za-z0-9._-])")->required();
  issue->add_option("--identity", a.identity, "the caller recorded in the change log")->required();
  issue->add_option("--policy", a.policy, "a stored access policy on the table (gives what the token leaves out)");
  auto* inspect = token->add_subcommand("inspect", "print a token's fields without verifying it");
  inspect->add_option("TOKEN", a.token, "the token, or - for stdin")->required();
  return token;
}

int RunTokenCommand(Session& s, const TokenArgs& a, const std::string& sub) {
  if (sub == "issue") return Issue(s, a);
  if (sub == "inspect") return Inspect(s, a);
  return s.Usage("token: unknown subcommand " + sub);
}

}  // namespace sidetable::cli
