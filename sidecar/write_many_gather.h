// A WriteMany whose batches live on several worker threads, run in their
// partitions' order (docs/protocol.md, "Request ids").
//
// Requests are ordered per partition because a partition's requests go to
// one worker, in the order they arrived. A WriteMany's batches may be of
// many partitions (a pattern worker's derived writes), so running it whole
// on one worker let its batches overtake, or be overtaken by, requests of
// their partitions sent before or after it on other workers: two pipelined
// WriteManys that both wrote one index row could commit in either order.
// The frontend splits such a request into one part per worker (each part
// keeps its batches' order) and queues each part with its partitions; the
// worker that finishes the last part answers the request, with every
// batch's result in the request's order.
//
// A part that fails as a whole (the change-stream backlog full, the server
// stopping) gives that error to each of its batches; when every part
// failed so, the request fails with the first part's error, as it would
// have whole.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/batch.h"
#include "engine/status.h"
#include "sidecar/job_queue.h"

namespace sidetable::sidecar {

class WriteManyGather {
 public:
  // whole: the client's request, answered once every part is in; batches:
  // its number of batches; parts: how many parts will report.
  WriteManyGather(Job whole, size_t batches, size_t parts);

  // One part's outcome: its reply frame as the handler encoded it (the
  // part's results, or an error for the part as a whole) and, for those
  // written, the entities and the LSN the reply must wait for. `indexes`
  // are the part's batches in the whole request. True for the call that
  // brought in the last part: the caller then answers with Finish().
  bool Add(const std::vector<uint32_t>& indexes, Code code, std::string_view reply,
           uint64_t entities, uint64_t await_lsn);

  struct Answer {
    Code code = Code::kOk;
    std::string reply;  // the whole request's reply frame
    uint64_t entities = 0;
    uint64_t await_lsn = 0;
    // Codes of the batches answered with their part's error in a 200
    // reply (for sidetable_errors_total, as the handler counts its own).
    std::vector<Code> part_failures;
  };
  // After the last Add: the request and its reply.
  Job& whole() { return whole_; }
  Answer Finish();

 private:
  std::mutex mu_;
  Job whole_;
  std::vector<Result<WriteResult>> results_;
  std::vector<Code> part_failures_;
  size_t parts_left_;
  bool any_part_ran_ = false;
  std::optional<Status> first_failure_;
  uint64_t entities_ = 0;
  uint64_t await_lsn_ = 0;
};

// A part of a split WriteMany (Job::part): its gather and its batches'
// places in the whole request.
struct WriteManyPart {
  std::shared_ptr<WriteManyGather> gather;
  std::vector<uint32_t> indexes;
};

}  // namespace sidetable::sidecar
