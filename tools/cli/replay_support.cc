#include "tools/cli/replay_support.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>

#include "client/client.h"
#include "engine/utf8.h"

namespace sidetable::cli {
namespace {

std::atomic<bool> g_stop{false};

void OnStopSignal(int sig) {
  if (g_stop.exchange(true)) {
    // A second signal: the user does not want to wait for the checkpoint.
    std::signal(sig, SIG_DFL);
    std::raise(sig);
  }
}

}  // namespace

const std::atomic<bool>* InstallStopSignals() {
  struct sigaction sa;
  std::memset(&sa, 0, sizeof sa);
  sa.sa_handler = OnStopSignal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  return &g_stop;
}

Result<replay::ReplayFilter> BuildFilter(const ReplayArgs& a) {
  // Keys, names and callers are UTF-8 in the engine; other bytes could match
  // nothing, and a checkpoint could not carry them.
  for (auto [value, name] : {std::pair{&a.table, "--table"}, std::pair{&a.pk, "--pk"}, std::pair{&a.rk_from, "--rk-from"},
                             std::pair{&a.rk_to, "--rk-to"}, std::pair{&a.caller, "--by"}}) {
    if (!IsValidUtf8(*value)) return Status(Code::kInvalidInput, std::string(name) + " is not valid UTF-8");
  }
  replay::ReplayFilter f;
  f.table = a.table;
  if (a.has_pk) f.pk = a.pk;
  if (a.has_caller) f.caller = a.caller;
  if (a.has_rk_from) f.rk_from = a.rk_from;
  if (a.has_rk_to) f.rk_to = a.rk_to;
  for (auto [text, out, name] : {std::tuple{&a.since, &f.since, "--since"}, std::tuple{&a.until, &f.until, "--until"}}) {
    if (text->empty()) continue;
    auto t = replay::ParseTimeArgument(*text);
    if (!t) {
      return Status(Code::kInvalidInput, std::string(name) + " '" + *text +
                                             "' is not a time: use ISO 8601 (2026-11-30T10:00:00Z) or Unix "
                                             "seconds/milliseconds with an s/ms suffix");
    }
    *out = *t;
  }
  f.from_lsn = a.from_lsn;
  f.to_lsn = a.to_lsn;
  if (f.from_lsn && f.to_lsn && f.from_lsn > f.to_lsn) {
    return Status(Code::kInvalidInput, "--from-lsn is above --to-lsn");
  }
  return f;
}

replay::ProgressMode ParseProgressMode(const std::string& text) {
  if (text == "always") return replay::ProgressMode::kAlways;
  if (text == "never") return replay::ProgressMode::kNever;
  return replay::ProgressMode::kAuto;
}

std::string SourceFingerprint(const ReplayArgs& a) {
  std::string fp = a.kafka.empty()
                       ? "changelog;"
                       : "kafka;topic=" + a.topic + ";offset=" + std::to_string(a.kafka_offset) +
                             ";time=" + a.kafka_time + ";" + (a.one_table_topic ? "oneTable;" : "");
  return fp + "from=" + std::to_string(a.from_lsn) + ";to=" + std::to_string(a.to_lsn) + ";";
}

Result<std::unique_ptr<replay::RecordSource>> OpenSource(Session& s, const ReplayArgs& a,
                                                         const replay::Position* resume) {
  if (a.kafka.empty()) {
    if (a.kafka_offset >= 0 || !a.kafka_time.empty() || !a.topic.empty() ||
        !a.kafka_properties.empty() || a.one_table_topic) {
      return Status(Code::kInvalidInput,
                    "--topic, --topic-of-one-table, --kafka-offset, --kafka-time and "
                    "--kafka-property need --kafka");
    }
    client::Client* c = s.Client();
    if (!c) return Status(Code::kNoReply, "no reply: cannot connect");
    replay::ChangeLogSourceOptions o;
    o.from_lsn = a.from_lsn;
    o.to_lsn = a.to_lsn;
    return replay::OpenChangeLogSource(c, o, resume);
  }
  replay::KafkaSourceOptions o;
  o.bootstrap = a.kafka;
  o.topic = a.topic;
  if (o.topic.empty()) {
    // The topic is named after the sidecar: ask it.
    client::Client* c = s.Client();
    if (!c) return Status(Code::kNoReply, "no reply: cannot connect");
    auto ping = c->Ping();
    if (!ping.ok()) return ping.status();
    o.topic = "sidetable." + ping->sidecar_id + ".changes";
  }
  if (a.kafka_offset >= 0 && !a.kafka_time.empty()) {
    return Status(Code::kInvalidInput, "--kafka-offset and --kafka-time exclude each other");
  }
  if (a.kafka_offset >= 0) {
    o.start = replay::KafkaSourceOptions::Start::kOffset;
    o.offset = a.kafka_offset;
  } else if (!a.kafka_time.empty()) {
    auto t = replay::ParseTimeArgument(a.kafka_time);
    if (!t) return Status(Code::kInvalidInput, "--kafka-time '" + a.kafka_time + "' is not a time");
    o.start = replay::KafkaSourceOptions::Start::kTime;
    o.time_ms = (*t - kUnixEpochTicks) / (kTicksPerSecond / 1000);
  }
  o.on_undecodable = [](const std::string& what) {
    std::fprintf(stderr, "sidetable-cli: skipped a message that does not decode: %s\n",
                 what.c_str());
  };
  o.from_lsn = a.from_lsn;
  o.to_lsn = a.to_lsn;
  o.contiguous = !a.one_table_topic;
  for (const std::string& kv : a.kafka_properties) {
    const size_t eq = kv.find('=');
    if (eq == std::string::npos || eq == 0) {
      return Status(Code::kInvalidInput, "--kafka-property '" + kv + "' is not key=value");
    }
    o.properties[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  return replay::OpenKafkaSource(o, resume);
}

Status LocalFileError(const std::string& message) { return Status(Code::kInvalidInput, message); }

Status CheckCheckpointPath(const std::string& path) {
  if (path.empty()) return Status::OK();
  struct stat st;
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
    return LocalFileError("--checkpoint " + path + " is a directory; give a file path");
  }
  // O_EXCL: a temporary file left by a killed run is not ours to remove.
  const std::string tmp = path + ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  const bool created = fd >= 0;
  if (!created && errno == EEXIST) fd = ::open(tmp.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) {
    return LocalFileError("--checkpoint " + path + ": cannot create " + tmp + ": " +
                          std::strerror(errno) + " (the directory must exist and be writable)");
  }
  ::close(fd);
  if (created) ::unlink(tmp.c_str());
  return Status::OK();
}

Status SaveCheckpointFile(const std::string& path, const replay::Checkpoint& c) {
  Status st = replay::SaveCheckpoint(path, c);
  return st.ok() ? st : LocalFileError("--checkpoint: " + st.message());
}

Status RemoveCheckpointFile(const std::string& path) {
  Status st = replay::RemoveCheckpoint(path);
  return st.ok() ? st : LocalFileError("--checkpoint: " + st.message());
}

Result<std::optional<replay::Checkpoint>> LoadMatchingCheckpoint(const ReplayArgs& a, const std::string& command,
                                                                 const std::string& fingerprint) {
  if (a.checkpoint.empty()) return std::optional<replay::Checkpoint>();
  auto c = replay::LoadCheckpoint(a.checkpoint);
  if (!c.ok() && c.status().code() != Code::kInvalidInput) {
    return LocalFileError("--checkpoint: " + c.status().message());  // cannot read it
  }
  if (!c.ok() || !c->has_value()) return c;
  if ((*c)->command != command || (*c)->fingerprint != fingerprint) {
    return Status(Code::kInvalidInput, a.checkpoint + " was saved by a '" + (*c)->command +
                                           "' run with other arguments; resume with the same arguments, "
                                           "or remove the checkpoint to start over");
  }
  return c;
}

Output::~Output() {
  if (f_ && !is_stdout_) std::fclose(f_);
}

Status Output::Open(const std::string& path, std::optional<uint64_t> resume_at) {
  path_ = path;
  if (path == "-") {
    f_ = stdout;
    is_stdout_ = true;
    return Status::OK();
  }
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return Status(Code::kInvalidInput, "cannot open " + path + ": " + std::strerror(errno));
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    ::close(fd);
    return Status(Code::kInvalidInput, "cannot stat " + path + ": " + std::strerror(errno));
  }
  // A regular file starts empty, or where the checkpoint left it; a pipe or
  // a device (/dev/null) is written as it is.
  const off_t keep = resume_at ? static_cast<off_t>(*resume_at) : 0;
  if (S_ISREG(st.st_mode) && (::ftruncate(fd, keep) != 0 || ::lseek(fd, keep, SEEK_SET) < 0)) {
    ::close(fd);
    return Status(Code::kInvalidInput, "cannot truncate " + path + ": " + std::strerror(errno));
  }
  f_ = ::fdopen(fd, "w");
  is_regular_ = S_ISREG(st.st_mode);
  if (!f_) {
    const int error = errno;
    ::close(fd);
    return LocalFileError("cannot open " + path + ": " + std::strerror(error));
  }
  bytes_ = static_cast<uint64_t>(keep);
  return Status::OK();
}

Status Output::Write(std::string_view data) {
  if (data.empty()) return Status::OK();
  if (std::fwrite(data.data(), 1, data.size(), f_) != data.size()) {
    const int error = errno;
    return LocalFileError("cannot write " + (is_stdout_ ? std::string("stdout") : path_) + ": " +
                          std::strerror(error));
  }
  bytes_ += data.size();
  return Status::OK();
}

Result<uint64_t> Output::Sync() {
  const std::string name = is_stdout_ ? std::string("stdout") : path_;
  if (std::fflush(f_) != 0)
    return LocalFileError("cannot write " + name + ": " + std::strerror(errno));
  if (is_regular_ && ::fsync(::fileno(f_)) != 0) {
    return LocalFileError("cannot fsync " + name + ": " + std::strerror(errno));
  }
  return bytes_;
}

replay::RunControl MakeRunControl(const ReplayArgs& a, replay::Progress* progress) {
  replay::RunControl control;
  control.stop_after = a.stop_after;
  control.interrupted = InstallStopSignals();
  control.progress = progress;
  return control;
}

int ReportStopped(const ReplayArgs& a, uint64_t events) {
  if (a.checkpoint.empty()) {
    std::fprintf(stderr, "sidetable-cli: stopped after %llu events; without --checkpoint a new run starts over\n",
                 static_cast<unsigned long long>(events));
  } else {
    std::fprintf(stderr,
                 "sidetable-cli: stopped after %llu events; run the same command again to resume from %s\n",
                 static_cast<unsigned long long>(events), a.checkpoint.c_str());
  }
  return kExitStopped;
}

int ReportUndecodable(uint64_t undecodable, int exit) {
  if (undecodable == 0) return exit;
  std::fprintf(stderr,
               "sidetable-cli: %llu message%s on the topic did not decode and %s skipped (named "
               "above, or in the "
               "run before a resume); everything else was read\n",
               static_cast<unsigned long long>(undecodable), undecodable == 1 ? "" : "s",
               undecodable == 1 ? "was" : "were");
  return kExitUndecodable;
}

int ReplayFail(Session& s, const Status& st) {
  if (st.code() == Code::kInvalidInput) return s.Usage(st.message());
  if (st.code() == Code::kUnavailable || st.code() == Code::kNoReply) {
    // No reply from the sidecar, or Kafka unreachable: both are exit 3.
    std::fprintf(stderr, "sidetable-cli: %s\n", st.message().c_str());
    return kExitNoReply;
  }
  return s.Fail(st);
}

}  // namespace sidetable::cli
