// Session: connection, error reporting and buffered output shared by all commands.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>

#include "client/curve.h"
#include "tools/cli/commands.h"

namespace sidetable::cli {

namespace {

// The client's own code for "no reply after N attempts" (never the server's
// 503 ServiceUnavailable).
bool IsNoReply(const Status& s) { return s.code() == Code::kNoReply; }

}  // namespace

client::Client* Session::Client() {
  if (client_) return client_.get();
  client_ = ConnectTo(options_.endpoint);
  if (client_ == nullptr) return nullptr;
  // First contact: one short Ping, so that a sidecar that is not there is
  // said at once instead of after every retry of the real request. It
  // carries the command's token like every request: without it a sidecar
  // with auth.mode: tokens refused it, and every command, however valid its
  // token, logged a refusal and counted an AuthenticationFailed there.
  client::ClientOptions probe_options;
  (void)BaseOptions(&probe_options);  // read once by ConnectTo above
  probe_options.endpoint = options_.endpoint;
  probe_options.timeout = std::chrono::milliseconds(std::min(options_.timeout_ms, 2000));
  probe_options.max_attempts = 1;
  auto probe = client::Client::Connect(probe_options);
  if (probe.ok()) {
    auto info = (*probe)->Ping();
    if (!info.ok() && IsNoReply(info.status())) {
      // What the probe's socket saw: nothing listening, a sidecar at its
      // connection bound, a refused CURVE key, or one that does not answer.
      std::string why = (*probe)->WhyUnanswered();
      if (why.empty()) why = "is the sidecar running?";
      std::fprintf(
          stderr,
          "sidetable-cli: nothing answered at %s within %d ms: %s (--endpoint, --timeout-ms)\n",
          options_.endpoint.c_str(), static_cast<int>(probe_options.timeout.count()), why.c_str());
      connect_exit = kExitNoReply;
      client_.reset();
      return nullptr;
    }
  }
  return client_.get();
}

std::unique_ptr<client::Client> Session::ConnectTo(const std::string& endpoint) {
  if (!endpoint.starts_with("tcp://") && !endpoint.starts_with("ipc://") && !endpoint.starts_with("inproc://")) {
    // "http://host:port" means the address with another scheme: suggest it
    // with tcp://, not "tcp://http://host:port".
    const size_t scheme = endpoint.find("://");
    const std::string address = scheme == std::string::npos ? endpoint : endpoint.substr(scheme + 3);
    std::fprintf(stderr, "sidetable-cli: endpoint '%s' has no tcp:// or ipc:// scheme: did you mean tcp://%s?\n",
                 endpoint.c_str(), address.c_str());
    connect_exit = kExitNoReply;   // "the endpoint cannot be used" (docs/cli.md)
    return nullptr;
  }
  client::ClientOptions o;
  if (!BaseOptions(&o)) return nullptr;
  o.endpoint = endpoint;
  o.timeout = std::chrono::milliseconds(options_.timeout_ms);
  o.max_attempts = options_.retries + 1;
  auto c = client::Client::Connect(o);
  if (!c.ok()) {
    std::fprintf(stderr, "sidetable-cli: %s\n", c.status().message().c_str());
    connect_exit = kExitNoReply;
    return nullptr;
  }
  return std::move(c).value();
}

bool Session::BaseOptions(client::ClientOptions* o) {
  if (!curve_) {
    auto keys = client::LoadCurveKeys(options_.curve_server_key_file, options_.curve_key_file);
    if (!keys.ok()) {
      std::fprintf(stderr, "sidetable-cli: --curve-server-key/--curve-key: %s\n", keys.status().message().c_str());
      connect_exit = kExitUsage;
      return false;
    }
    curve_ = std::move(keys).value();
  }
  if (!token_) {
    std::string token = options_.token;
    if (!options_.token_file.empty()) {
      if (!ReadFileArgument(options_.token_file, &token)) {
        std::fprintf(stderr, "sidetable-cli: cannot read --token-file %s\n",
                     options_.token_file.c_str());
        connect_exit = kExitUsage;
        return false;
      }
      while (!token.empty() && std::isspace(static_cast<unsigned char>(token.back())))
        token.pop_back();
    }
    token_ = std::move(token);
  }
  o->curve = *curve_;
  o->token = *token_;
  o->caller = options_.caller;
  return true;
}

int Session::Fail(const Status& s, bool batch) {
  if (IsNoReply(s)) {
    // The client's message says why when its socket saw it.
    const bool said = client_ != nullptr && !client_->WhyUnanswered().empty();
    std::fprintf(stderr, "sidetable-cli: %s%s (--endpoint, --timeout-ms)\n", s.message().c_str(),
                 said ? "" : ": is the sidecar running?");
    return kExitNoReply;
  }
  std::string line = std::string(ErrorCodeName(s.code())) + " (" + std::to_string(HttpStatus(s.code())) +
                     "): " + s.message();
  if (batch && s.op_index() >= 0) line += " (operation " + std::to_string(s.op_index()) + ")";
  std::fprintf(stderr, "%s\n", line.c_str());
  return kExitServerError;
}

int Session::Usage(const std::string& message) {
  std::fprintf(stderr, "sidetable-cli: %s\n", message.c_str());
  return kExitUsage;
}

int Session::Finish() {
  // stdio writes a buffer larger than its own straight through, so a
  // failure there (a full disk, a closed pipe) leaves fflush nothing to
  // report: `query T > export.jsonl` on a full disk exited 0 with the file
  // empty. fwrite's count and fflush are both checked, each with its errno,
  // and the failure is said as the streaming commands say it.
  if (!out.empty()) {
    errno = 0;
    const bool written = std::fwrite(out.data(), 1, out.size(), stdout) == out.size();
    const int write_error = errno;
    out.clear();
    if (!written) return StdoutFailed(write_error);
  }
  errno = 0;
  if (std::fflush(stdout) != 0 || std::ferror(stdout)) return StdoutFailed(errno);
  return kExitOk;
}

int Session::StdoutFailed(int error) {
  // Said once: a --follow loop calls Finish again after a failure.
  if (!stdout_failed_) {
    std::fprintf(stderr, "sidetable-cli: cannot write stdout: %s\n",
                 error != 0 ? std::strerror(error) : "write error");
    stdout_failed_ = true;
  }
  return kExitUsage;
}

bool ReadFileArgument(const std::string& path, std::string* text) {
  if (path == "-") {
    text->assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
    return !std::cin.bad();
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  text->assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  return !in.bad();
}

std::string UnreadableFileReason(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return std::strerror(errno);
  if (S_ISDIR(st.st_mode)) return "is a directory";
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::strerror(errno);
  ::close(fd);
  return "";
}

bool ReadJsonArgument(const std::string& arg, std::string* text) {
  if (arg == "-") return ReadFileArgument(arg, text);
  *text = arg;
  return true;
}

}  // namespace sidetable::cli
