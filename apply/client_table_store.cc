#include "apply/table_store.h"
#include "client/client.h"

#include <memory>

namespace sidetable::apply {
namespace {

class ClientTableStore final : public TableStore {
 public:
  ClientTableStore(client::Client* c, size_t window) : c_(c), window_(window < 1 ? 1 : window) {}

  // Writes are packed into WriteMany requests of up to kBatchesPerRequest
  // EGTs or kBytesPerRequest payload: one request, one trip through the
  // sidecar's frontend and a worker thread, for many small derived writes.
  void SendWrite(const Batch& batch, WriteDone done) override {
    buffered_bytes_ += batch.PayloadBytes();
    buffered_.push_back(batch);
    dones_.push_back(std::move(done));
    if (buffered_.size() >= kBatchesPerRequest || buffered_bytes_ >= kBytesPerRequest) SendBuffered();
  }
  void SendGet(const std::string& table, const std::string& pk, const std::string& rk, GetDone done) override {
    while (c_->pending() >= kMaxGetsInFlight) c_->Poll(std::chrono::milliseconds(100));
    c_->SendGet(table, pk, rk, std::move(done));
  }
  void Flush() override {
    SendBuffered();
    c_->Drain();
  }

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
  static constexpr size_t kBatchesPerRequest = 100;
  static constexpr size_t kBytesPerRequest = 1 << 20;
  static constexpr size_t kMaxGetsInFlight = 128;   // under sidecar.max_inflight_per_connection

  void SendBuffered() {
    if (buffered_.empty()) return;
    while (c_->pending() >= window_) c_->Poll(std::chrono::milliseconds(100));
    auto dones = std::make_shared<std::vector<WriteDone>>(std::move(dones_));
    c_->SendWriteMany(buffered_, [dones](Result<std::vector<Result<WriteResult>>> r) {
      for (size_t i = 0; i < dones->size(); i++) {
        if (!r.ok()) {
          (*dones)[i](r.status());   // the request itself failed: every EGT in it
        } else if (i < r->size()) {
          (*dones)[i](std::move((*r)[i]));
        } else {
          (*dones)[i](Status(Code::kInternal, "WriteMany reply holds fewer results than batches"));
        }
      }
    });
    buffered_.clear();
    dones_.clear();
    buffered_bytes_ = 0;
  }

  client::Client* c_;
  size_t window_;
  std::vector<Batch> buffered_;
  std::vector<WriteDone> dones_;
  size_t buffered_bytes_ = 0;
};

}  // namespace

std::unique_ptr<TableStore> NewClientTableStore(client::Client* client, size_t window) {
  return std::make_unique<ClientTableStore>(client, window);
}

}  // namespace sidetable::apply
