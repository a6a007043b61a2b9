// `changes`: change-log records as JSON lines, from --from, at most --max;
// with --follow, then waits for new ones like `tail -f` until SIGINT or
// SIGTERM (exit 0), --max records, or an error.
//
// Without --follow the output is buffered and written only on success (the
// CLI's contract, commands.h). With --follow each record is written and
// flushed as it arrives, so a pipe (`| jq`) sees it at once; an error after
// some records leaves those on stdout and reports itself on stderr.
#include <poll.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>

#include "common/process.h"
#include "events/entity_json.h"
#include "tools/cli/commands.h"

namespace sidetable::cli {
namespace {

std::atomic<bool> g_follow_stop{false};
void OnStop(int) { g_follow_stop.store(true); }

// How often an idle follow asks for more: short enough to feel live, long
// enough that an idle tail costs the sidecar nothing worth measuring.
constexpr auto kFollowPoll = std::chrono::milliseconds(200);

// True once nothing can read stdout any more: a pipe whose reader exited
// (`changes --follow | head -1`) reports POLLERR on its write end, a
// socket or a hung-up terminal POLLHUP. Asked while idle, because a write
// only fails when there is something to write: on a quiet sidecar the
// command waited for the next commit, for good if none came.
bool StdoutGone() {
  pollfd p{STDOUT_FILENO, 0, 0};
  return ::poll(&p, 1, 0) == 1 && (p.revents & (POLLERR | POLLHUP)) != 0;
}

}  // namespace

int RunChanges(Session& s, const CommandArgs& a) {
  client::Client* c = s.Client();
  if (!c) return s.connect_exit;
  if (a.follow) common::InstallStopSignals(OnStop);
  uint64_t from = a.from, remaining = a.max;
  while (remaining > 0 && !g_follow_stop.load()) {
    auto batch = c->ReadChanges(from, static_cast<uint32_t>(std::min<uint64_t>(remaining, 10'000)));
    if (!batch.ok()) {
      if (a.follow) s.Finish();
      return s.Fail(batch.status());
    }
    for (const auto& r : batch->records) {
      s.out += json::ChangeRecordToJson(r);
      s.out += '\n';
      from = r.lsn + 1;
      if (--remaining == 0) break;
    }
    const bool caught_up = batch->records.empty() || from > batch->last_lsn;
    if (!a.follow) {
      if (caught_up) break;
      continue;
    }
    if (s.Finish() != kExitOk) return kExitUsage;  // stdout went away (a closed pipe)
    if (caught_up) {
      for (auto waited = std::chrono::milliseconds(0);
           waited < kFollowPoll && !g_follow_stop.load(); waited += std::chrono::milliseconds(20)) {
        if (StdoutGone())
          return s.Usage(std::string("cannot write stdout: ") + std::strerror(EPIPE));
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
    }
  }
  return s.Finish();
}

}  // namespace sidetable::cli
