// Small durable settings of the layers above the engine (the publisher's
// watermark, the sidecar's applied watermarks), in the meta column family
// under "x/", apart from the catalog.
#include "engine/internal/engine_impl.h"

#include <rocksdb/write_batch.h>

namespace sidetable {
namespace {

constexpr std::string_view kSettingPrefix = "x/";

std::string SettingKey(std::string_view key) { return std::string(kSettingPrefix) + std::string(key); }

Status WriteSettings(Engine::Impl* impl, rocksdb::WriteBatch* wb, const char* what) {
  // Through the storage gate like every write: appending to a WAL whose
  // writer already failed on a full disk, and then resuming, trips an
  // assertion in RocksDB builds that keep them (Debian's does), found by
  // scripts/chaos.sh when the publisher persisted its watermark every 50 ms.
  if (impl->storage_) ST_RETURN_IF_ERROR(impl->storage_->AdmitWrite(/*client_write=*/false));
  rocksdb::WriteOptions wo;
  wo.sync = impl->options_.durability == Durability::kFsync;
  rocksdb::Status s = impl->db_->Write(wo, wb);
  if (!s.ok()) {
    if (impl->storage_) return impl->storage_->WriteFailed(s, 0);
    return Status(Code::kInternal, what + s.ToString());
  }
  return Status::OK();
}

}  // namespace

Status Engine::PutSetting(std::string_view key, std::string_view value) {
  return PutSettings({{std::string(key), std::string(value)}});
}

Status Engine::PutSettings(const std::vector<std::pair<std::string, std::string>>& settings) {
  if (settings.empty()) return Status::OK();
  rocksdb::WriteBatch wb;
  for (const auto& [key, value] : settings) {
    rocksdb::Status s = wb.Put(impl_->meta_cf_, SettingKey(key), value);
    if (!s.ok()) return Status(Code::kInternal, "writing setting: " + s.ToString());
  }
  return WriteSettings(impl_.get(), &wb, "writing setting: ");
}

Status Engine::DeleteSettings(const std::vector<std::string>& keys) {
  if (keys.empty()) return Status::OK();
  rocksdb::WriteBatch wb;
  for (const auto& key : keys) {
    rocksdb::Status s = wb.Delete(impl_->meta_cf_, SettingKey(key));
    if (!s.ok()) return Status(Code::kInternal, "deleting setting: " + s.ToString());
  }
  return WriteSettings(impl_.get(), &wb, "deleting setting: ");
}

Result<std::optional<std::string>> Engine::GetSetting(std::string_view key) const {
  std::string value;
  rocksdb::Status s = impl_->db_->Get(rocksdb::ReadOptions(), impl_->meta_cf_, SettingKey(key), &value);
  if (s.IsNotFound()) return std::optional<std::string>();
  if (!s.ok()) return Status(Code::kInternal, "reading setting: " + s.ToString());
  return std::optional<std::string>(std::move(value));
}

Result<std::vector<std::pair<std::string, std::string>>> Engine::ListSettings(
    std::string_view prefix) const {
  const std::string start = SettingKey(prefix);
  std::vector<std::pair<std::string, std::string>> out;
  std::unique_ptr<rocksdb::Iterator> it(impl_->db_->NewIterator(rocksdb::ReadOptions(), impl_->meta_cf_));
  for (it->Seek(start); it->Valid() && it->key().starts_with(start); it->Next()) {
    out.emplace_back(it->key().ToString().substr(kSettingPrefix.size()), it->value().ToString());
  }
  if (!it->status().ok()) return Status(Code::kInternal, "listing settings: " + it->status().ToString());
  return out;
}

}  // namespace sidetable
