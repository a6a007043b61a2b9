// `policy set|get|clear`: a table's stored access policies (token_commands.h,
// docs/security.md). Changing or removing a policy revokes every token issued
// under it at once. Needs a token with permission m on the table.
#include "client/tokens.h"
#include "tools/cli/option_checks.h"
#include "tools/cli/token_commands.h"

namespace sidetable::cli {
namespace {

namespace tk = sidetable::client::tokens;

std::string PolicyLine(const tk::StoredPolicy& p) {
  std::string out = p.id;
  out += "\tpermissions=" + (p.permissions ? tk::PermissionString(*p.permissions) : std::string("-"));
  out += "\tstart=" + (p.start ? tk::FormatTime(*p.start) : std::string("-"));
  out += "\texpiry=" + (p.expiry ? tk::FormatTime(*p.expiry) : std::string("-"));
  return out + "\n";
}

}  // namespace

CLI::App* AddPolicyCommands(CLI::App& app, PolicyArgs& a) {
  auto* policy = app.add_subcommand("policy", "a table's stored access policies (at most 5; docs/security.md)");
  policy->require_subcommand(1);
  auto* set = policy->add_subcommand("set", "add or replace one policy (revokes tokens under its old terms)");
  set->add_option("TABLE", a.table, "table name")->required();
  set->add_option("ID", a.id, "policy id (the tokens' si)")->required();
  set->add_option("--permissions", a.perms, "letters of raudmc the policy grants");
  set->add_option("--start", a.start, "valid from: a duration from now (-5m) or YYYY-MM-DDTHH:MM:SSZ");
  set->add_option("--expiry", a.expiry, "valid until: a duration from now (30d) or YYYY-MM-DDTHH:MM:SSZ");
  auto* get = policy->add_subcommand("get", "print the table's policies, one per line");
  get->add_option("TABLE", a.table, "table name")->required();
  auto* clear = policy->add_subcommand("clear", "remove one policy (or all): revokes the tokens issued under it");
  clear->add_option("TABLE", a.table, "table name")->required();
  clear->add_option("ID", a.id, "policy id (all when omitted)")
      ->check(NotEmpty("name a policy, or leave ID out to remove every policy"));
  return policy;
}

int RunPolicyCommand(Session& s, const PolicyArgs& a, const std::string& sub) {
  tk::StoredPolicy p;
  if (sub == "set") {
    p.id = a.id;
    if (!a.perms.empty()) {
      auto perms = tk::ParsePermissions(a.perms);
      if (!perms.ok()) return s.Usage("--permissions: " + perms.status().message());
      p.permissions = *perms;
    }
    for (auto [text, field, flag] : {std::tuple{&a.start, &p.start, "--start"}, {&a.expiry, &p.expiry, "--expiry"}}) {
      if (text->empty()) continue;
      auto t = ParseWhen(*text);
      if (!t.ok()) return s.Usage(std::string(flag) + ": " + t.status().message());
      *field = *t;
    }
  }
  client::Client* c = s.Client();
  if (!c) return s.connect_exit;
  auto current = c->GetTablePolicies(a.table);
  if (!current.ok()) return s.Fail(current.status());
  if (sub == "get") {
    for (const auto& policy : *current) s.out += PolicyLine(policy);
    return s.Finish();
  }
  std::vector<tk::StoredPolicy> next;
  for (const auto& policy : *current) {
    if (policy.id != a.id && !(sub == "clear" && a.id.empty())) next.push_back(policy);
  }
  if (sub == "clear" && !a.id.empty() && next.size() == current->size()) {
    return s.Usage("table " + a.table + " has no policy '" + a.id + "'");
  }
  if (sub == "set") next.push_back(p);
  Status st = c->SetTablePolicies(a.table, next);
  if (!st.ok()) return s.Fail(st);
  return s.Finish();
}

}  // namespace sidetable::cli
