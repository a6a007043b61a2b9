#include "sidecar/write_many_gather.h"

#include <algorithm>
#include <utility>

#include "protocol/wire.h"

namespace sidetable::sidecar {

WriteManyGather::WriteManyGather(Job whole, size_t batches, size_t parts)
    : whole_(std::move(whole)),
      results_(batches, Status(Code::kInternal, "a WriteMany part did not report")),
      parts_left_(parts) {}

bool WriteManyGather::Add(const std::vector<uint32_t>& indexes, Code code, std::string_view reply,
                          uint64_t entities, uint64_t await_lsn) {
  // Decoded outside the lock: parts finish on several workers at once.
  wire::Header h;
  std::string_view body;
  Status s = wire::DecodeReply(reply, &h, &body);
  std::vector<Result<WriteResult>> part;
  if (s.ok() && code == Code::kOk) s = wire::DecodeWriteMany(body, &part);
  if (s.ok() && code != Code::kOk)
    s = Status(code, "a WriteMany part failed");  // never: errors decode as such
  if (s.ok() && part.size() != indexes.size()) {
    s = Status(Code::kInternal, "a WriteMany part answered " + std::to_string(part.size()) +
                                    " results for " + std::to_string(indexes.size()) + " batches");
  }
  std::lock_guard lock(mu_);
  if (s.ok()) {
    any_part_ran_ = true;
    for (size_t k = 0; k < indexes.size(); k++) results_[indexes[k]] = std::move(part[k]);
    entities_ += entities;
    await_lsn_ = std::max(await_lsn_, await_lsn);
  } else {
    if (!first_failure_) first_failure_ = s;
    for (uint32_t i : indexes) {
      results_[i] = s;
      part_failures_.push_back(s.code());
    }
  }
  return --parts_left_ == 0;
}

WriteManyGather::Answer WriteManyGather::Finish() {
  std::lock_guard lock(mu_);
  Answer a;
  const wire::Request& r = whole_.request;
  if (!any_part_ran_ && first_failure_) {
    // Nothing ran: the request fails whole, as it would have unsplit.
    a.code = first_failure_->code();
    wire::EncodeError(wire::Header{wire::kVersion, static_cast<uint8_t>(r.op), 0, r.id},
                      *first_failure_, &a.reply);
    return a;
  }
  wire::AppendHeader(&a.reply, wire::Header{wire::kVersion, static_cast<uint8_t>(r.op), 200, r.id});
  wire::EncodeWriteMany(results_, &a.reply);
  a.entities = entities_;
  a.await_lsn = await_lsn_;
  a.part_failures = std::move(part_failures_);
  return a;
}

}  // namespace sidetable::sidecar
