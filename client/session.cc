#include "client/session.h"

#include <algorithm>
#include <charconv>

#include "engine/limits.h"
#include "engine/table_name.h"

namespace sidetable::client {
namespace {

constexpr std::string_view kExportPrefix = "st1:";

}  // namespace

Result<WriteResult> Session::Recorded(const std::string& table, Result<WriteResult> r) {
  if (r.ok()) Record(table, r->lsn);
  return r;
}

Result<WriteResult> Session::Execute(const Batch& batch) {
  return Recorded(batch.table(), client_->Execute(batch));
}
Result<WriteResult> Session::Insert(const std::string& table, Entity e) {
  return Recorded(table, client_->Insert(table, std::move(e)));
}
Result<WriteResult> Session::Update(const std::string& table, Entity e, std::optional<std::string> if_match) {
  return Recorded(table, client_->Update(table, std::move(e), std::move(if_match)));
}
Result<WriteResult> Session::Merge(const std::string& table, Entity e, std::optional<std::string> if_match) {
  return Recorded(table, client_->Merge(table, std::move(e), std::move(if_match)));
}
Result<WriteResult> Session::Delete(const std::string& table, std::string pk, std::string rk,
                                    std::string if_match) {
  return Recorded(table, client_->Delete(table, std::move(pk), std::move(rk), std::move(if_match)));
}
Result<WriteResult> Session::InsertOrReplace(const std::string& table, Entity e) {
  return Recorded(table, client_->InsertOrReplace(table, std::move(e)));
}
Result<WriteResult> Session::InsertOrMerge(const std::string& table, Entity e) {
  return Recorded(table, client_->InsertOrMerge(table, std::move(e)));
}

Result<uint64_t> Session::RequestArchive(const std::string& table, const std::string& pk,
                                         const std::vector<std::string>& row_keys,
                                         const std::string& archive_table) {
  auto lsn = client_->RequestArchive(table, pk, row_keys, archive_table);
  if (lsn.ok()) Record(table, *lsn);
  return lsn;
}

Result<Entity> Session::Get(const std::string& table, const std::string& pk, const std::string& rk,
                            const std::vector<std::string>& select) {
  return client_->Get(table, pk, rk, select, read_options());
}

Result<Page> Session::QueryPage(QueryOptions q, const std::optional<Continuation>& next) {
  q.read = read_options();
  return client_->QueryPage(q, next);
}

QueryIterator Session::Query(QueryOptions q) {
  q.read = read_options();
  return client_->Query(q);
}

void Session::Record(const std::string& table, uint64_t lsn) {
  SessionToken& t = tokens_[TableKey(table).str()];
  if (t.source_table.empty() || lsn > t.lsn) {
    t.source_table = table;
    t.lsn = std::max(t.lsn, lsn);
  }
}

std::vector<SessionToken> Session::tokens() const {
  std::vector<SessionToken> out;
  out.reserve(tokens_.size());
  for (const auto& [key, t] : tokens_) out.push_back(t);
  return out;
}

ReadOptions Session::read_options() const { return ReadOptions{tokens(), wait_}; }

std::string Session::Export() const {
  std::string out(kExportPrefix);
  bool first = true;
  for (const auto& [key, t] : tokens_) {
    if (!first) out += ',';
    first = false;
    out += t.source_table + "=" + std::to_string(t.lsn);
  }
  return out;
}

Status Session::Import(std::string_view exported) {
  if (exported.substr(0, kExportPrefix.size()) != kExportPrefix) {
    return Status(Code::kInvalidInput, "a session token string starts with 'st1:'");
  }
  std::string_view rest = exported.substr(kExportPrefix.size());
  std::vector<SessionToken> parsed;
  // "st1:" alone is an empty session; otherwise items separated by commas,
  // none empty (a trailing comma is malformed).
  for (bool more = !rest.empty(); more;) {
    const size_t comma = rest.find(',');
    std::string_view item = rest.substr(0, comma);
    more = comma != std::string_view::npos;
    if (more) rest = rest.substr(comma + 1);
    const size_t eq = item.find('=');
    if (eq == std::string_view::npos) return Status(Code::kInvalidInput, "bad session token '" + std::string(item) + "'");
    std::string_view name = item.substr(0, eq), digits = item.substr(eq + 1);
    // A malformed token string, whatever the name's own code would be.
    if (Status v = ValidateTableName(name); !v.ok()) {
      return Status(Code::kInvalidInput, "session token: " + v.message());
    }
    uint64_t lsn = 0;
    auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), lsn);
    if (digits.empty() || ec != std::errc() || end != digits.data() + digits.size()) {
      return Status(Code::kInvalidInput, "bad LSN in session token '" + std::string(item) + "'");
    }
    parsed.push_back(SessionToken{std::string(name), lsn});
  }
  for (const auto& t : parsed) Record(t.source_table, t.lsn);
  return Status::OK();
}

}  // namespace sidetable::client
