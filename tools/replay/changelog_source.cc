// The change-log source: pages of op 8 ReadChanges from a sidecar, with one
// page of read-ahead.
//
// LSNs have no gaps, so the page after [from, from + n) starts at from + n
// whenever a page comes back full. That request goes out as soon as a reply
// arrives, before the reply is decoded and used, so the sidecar reads and
// encodes the next page while this side works on the current one. A page
// cut short by its byte bound makes the guess wrong; that reply is dropped
// and the right page asked for.
#include <algorithm>
#include <deque>

#include "client/client.h"
#include "tools/replay/source.h"

namespace sidetable::replay {
namespace {

class ChangeLogSource final : public RecordSource {
 public:
  ChangeLogSource(client::Client* client, ChangeLogSourceOptions options, uint64_t next_lsn,
                  uint64_t first_available, uint64_t end)
      : client_(client), options_(options), next_(next_lsn), fetch_(next_lsn), first_available_(first_available),
        end_(end) {
    position_.last_lsn = next_lsn - 1;
    position_.end_lsn = end;
  }

  ~ChangeLogSource() override {
    // The client outlives us and may serve others: let its replies land.
    while (ahead_ && !ahead_->done) client_->Poll(std::chrono::milliseconds(100));
  }

  Status Next(size_t max, std::vector<ChangeRecord>* out, bool* end) override {
    *end = false;
    if (buffer_.empty() && fetch_ <= end_) ST_RETURN_IF_ERROR(Fill());
    while (max > 0 && !buffer_.empty()) {
      next_ = buffer_.front().lsn + 1;
      out->push_back(std::move(buffer_.front()));
      buffer_.pop_front();
      max--;
    }
    position_.last_lsn = next_ - 1;
    if (next_ > end_) *end = true;
    return Status::OK();
  }

  Position position() const override { return position_; }
  std::optional<uint64_t> remaining() const override { return next_ > end_ ? 0 : end_ - next_ + 1; }
  uint64_t first_available_lsn() const override { return first_available_; }
  uint64_t end_lsn() const override { return end_; }
  std::string Describe() const override { return "the sidecar's change log"; }

 private:
  struct Page {
    uint64_t from = 0;
    bool done = false;
    Status status;
    ChangeBatch batch;
  };

  uint32_t PageSize(uint64_t from) const {
    return static_cast<uint32_t>(std::min<uint64_t>(options_.page_records, end_ - from + 1));
  }

  std::shared_ptr<Page> Ask(uint64_t from) {
    auto page = std::make_shared<Page>();
    page->from = from;
    client_->SendReadChanges(from, PageSize(from), options_.page_bytes, [page](Result<ChangeBatch> r) {
      if (r.ok()) page->batch = std::move(r).value();
      else page->status = r.status();
      page->done = true;
    }, options_.raw_pages);
    return page;
  }

  // Reads the page at fetch_ into buffer_ (and asks for the one after it).
  Status Fill() {
    if (ahead_ && ahead_->from != fetch_) {
      // A wrong guess: wait for it (the client must not be left with it) and drop it.
      while (!ahead_->done) client_->Poll(std::chrono::milliseconds(100));
      ahead_.reset();
    }
    std::shared_ptr<Page> page = ahead_ ? std::move(ahead_) : Ask(fetch_);
    // The guess (this page is full) goes out before this page is waited for
    // and decoded, so the sidecar reads the next page meanwhile.
    const uint32_t asked = PageSize(fetch_);
    if (fetch_ + asked <= end_) ahead_ = Ask(fetch_ + asked);
    while (!page->done) client_->Poll(std::chrono::milliseconds(100));
    if (!page->status.ok()) return page->status;
    ChangeBatch& batch = page->batch;
    if (batch.first_available_lsn > fetch_) {
      // Retention trimmed records not read yet: the replay would silently
      // skip history, so it stops instead.
      return Status(Code::kResourceNotFound,
                    "the change log no longer holds LSN " + std::to_string(fetch_) + " (it starts at " +
                        std::to_string(batch.first_available_lsn) + "); replay from there or from Kafka");
    }
    for (ChangeRecord& r : batch.records) {
      if (r.lsn < fetch_) continue;
      if (r.lsn > end_) break;
      if (r.lsn != fetch_) {
        return Status(Code::kInternal, "change log gap: expected LSN " + std::to_string(fetch_) + ", got " +
                                           std::to_string(r.lsn));
      }
      fetch_ = r.lsn + 1;
      buffer_.push_back(std::move(r));
    }
    if (buffer_.empty()) {
      return Status(Code::kInternal, "the change log ended at LSN " + std::to_string(fetch_ - 1) +
                                         " before the range's end " + std::to_string(end_));
    }
    return Status::OK();
  }

  client::Client* client_;
  ChangeLogSourceOptions options_;
  uint64_t next_;   // the next LSN handed out
  uint64_t fetch_;  // the next LSN to fetch (buffer_ holds [next_, fetch_))
  uint64_t first_available_;
  uint64_t end_;
  Position position_;
  std::deque<ChangeRecord> buffer_;
  std::shared_ptr<Page> ahead_;
};

}  // namespace

Result<std::unique_ptr<RecordSource>> OpenChangeLogSource(client::Client* client,
                                                          const ChangeLogSourceOptions& options,
                                                          const Position* resume) {
  // One small read fixes the range: the newest LSN now and the oldest kept.
  auto probe = client->ReadChanges(1, 1, 1);
  if (!probe.ok()) return probe.status();
  uint64_t end = options.to_lsn != 0 ? std::min(options.to_lsn, probe->last_lsn) : probe->last_lsn;
  if (resume && resume->end_lsn != 0) end = std::min(end, resume->end_lsn);
  uint64_t next = resume                   ? resume->last_lsn + 1
                  : options.from_lsn == 0 ? probe->first_available_lsn
                                          : options.from_lsn;
  if (options.from_lsn != 0 && !resume && options.from_lsn < probe->first_available_lsn) {
    return Status(Code::kResourceNotFound, "the change log no longer holds LSN " + std::to_string(options.from_lsn) +
                                               " (it starts at " + std::to_string(probe->first_available_lsn) + ")");
  }
  return std::unique_ptr<RecordSource>(new ChangeLogSource(client, options, next, probe->first_available_lsn, end));
}

}  // namespace sidetable::replay
