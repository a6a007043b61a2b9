#include "apply/table_store.h"
#include "client/client.h"

namespace sidetable::apply {
namespace {

class ClientTableStore final : public TableStore {
 public:
  ClientTableStore(client::Client* c, size_t window) : c_(c), window_(window < 1 ? 1 : window) {}

  void SendWrite(const Batch& batch, WriteDone done) override {
    while (c_->pending() >= window_) c_->Poll(std::chrono::milliseconds(100));
    c_->SendWrite(batch, std::move(done));
  }
  void Flush() override { c_->Drain(); }

  Result<Entity> Get(const std::string& table, const std::string& pk, const std::string& rk) override {
    return c_->Get(table, pk, rk);
  }
  Result<WriteResult> Insert(const std::string& table, const Entity& e) override {
    return c_->Insert(table, e);
  }
  Result<WriteResult> Update(const std::string& table, const Entity& e, const std::string& if_match) override {
    return c_->Update(table, e, if_match);
  }
  Result<WriteResult> Delete(const std::string& table, const std::string& pk, const std::string& rk,
                             const std::string& if_match) override {
    return c_->Delete(table, pk, rk, if_match);
  }
  Status CreateTable(const std::string& table) override { return c_->CreateTable(table); }
  Result<Page> QueryPage(const std::string& table, const std::string& filter, const Continuation& next) override {
    client::QueryOptions q;
    q.table = table;
    q.filter = filter;
    auto r = c_->QueryPage(q, next);
    if (!r.ok()) return r.status();
    Page p;
    p.entities = std::move(r->entities);
    p.next = std::move(r->next);
    return p;
  }

 private:
  client::Client* c_;
  size_t window_;
};

}  // namespace

std::unique_ptr<TableStore> NewClientTableStore(client::Client* client, size_t window) {
  return std::make_unique<ClientTableStore>(client, window);
}

}  // namespace sidetable::apply
