// The REST gateway's HTTP/1.1 listener (http_server.h): one epoll loop,
// inline execution of cheap requests, a pool for the rest.
//
// Ownership of a connection: the loop owns every Conn, except while its
// request executes on the pool (busy): the loop then neither reads nor
// writes it (its epoll interest is cleared), and the pool thread that
// executed it hands it back through returned_ and the wake eventfd.
#include "sidecar/rest/http_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <spdlog/spdlog.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include "common/process.h"

namespace sidetable::sidecar::rest {

namespace {

using Clock = std::chrono::steady_clock;

constexpr size_t kReadChunk = 64 << 10;
constexpr char kContinue[] = "HTTP/1.1 100 Continue\r\n\r\n";
// Connections over max_connections let in to be answered 503.
constexpr size_t kRefusing = 64;
constexpr char kOverConnections[] = "the REST listener is at rest.max_connections; retry later";
// The share of the process's descriptor limit (RLIMIT_NOFILE) the listener's
// connections may take, refused ones included; the rest is the engine's
// (RocksDB's WAL and table files), ZeroMQ's and the status page's.
constexpr uint64_t kFdShareDivisor = 2;
// How long a closing connection's late bytes are read and dropped.
constexpr auto kLinger = std::chrono::seconds(2);
// On Stop: how long the loops go on answering what reaches them (503) and
// writing the responses of requests executing on the pool, before every
// connection is closed. Usually over in milliseconds: idle connections are
// closed at once; only a request still arriving or executing keeps it.
constexpr auto kStopDrain = std::chrono::seconds(2);

}  // namespace

class EventLoop;

namespace {

struct Conn {
  EventLoop* loop = nullptr;  // the loop that owns it
  int fd = -1;
  std::string in;     // bytes received; [in_off, size) not yet consumed
  size_t in_off = 0;
  HttpRequestReader reader;
  HttpRequest req;
  HttpResponse res;
  // The response being written: head then body, `sent` bytes of both gone.
  std::string out_head;
  std::string out_body;
  size_t sent = 0;
  bool busy = false;         // executing on the pool (not in the epoll set)
  bool close_after = false;  // close once the pending output is written
  bool refuse = false;       // over max_connections: answer 503 to its first bytes
  bool draining = false;     // answered and half-closed: reading and dropping until EOF
  uint32_t interest = 0;     // the epoll events registered (0: not in the set)
  Clock::time_point last_active;
  Clock::time_point request_started;  // first byte of the request being read
  uint64_t charged = 0;      // bytes of `in` counted in buffered_
  uint64_t req_charge = 0;   // the framed request's body (and the unsent part of a pool-run
                             // response), counted until its response is written

  explicit Conn(const HttpLimits& limits) : reader(limits) {}
  bool Pending() const { return sent < out_head.size() + out_body.size(); }
  size_t Buffered() const { return in.size() - in_off; }
};

enum class Flush { kDone, kAgain, kFailed };

// Writes what is left of c's response without blocking.
Flush FlushOut(Conn* c) {
  while (c->Pending()) {
    iovec iov[2];
    int n = 0;
    if (c->sent < c->out_head.size()) {
      iov[n++] = {c->out_head.data() + c->sent, c->out_head.size() - c->sent};
      if (!c->out_body.empty()) iov[n++] = {c->out_body.data(), c->out_body.size()};
    } else {
      const size_t off = c->sent - c->out_head.size();
      iov[n++] = {c->out_body.data() + off, c->out_body.size() - off};
    }
    msghdr msg{};
    msg.msg_iov = iov;
    msg.msg_iovlen = static_cast<size_t>(n);
    const ssize_t w = ::sendmsg(c->fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (w < 0) {
      if (errno == EINTR) continue;
      return errno == EAGAIN || errno == EWOULDBLOCK ? Flush::kAgain : Flush::kFailed;
    }
    c->sent += static_cast<size_t>(w);
  }
  return Flush::kDone;
}

// Lays out c->res as the pending output (HEAD: without the body).
void PrepareOut(Conn* c, bool head_only) {
  c->out_head.clear();
  c->sent = 0;
  AppendResponseHead(c->res, c->close_after, &c->out_head);
  if (head_only) c->res.body.clear();
  c->out_body = std::move(c->res.body);
}

}  // namespace

// What the loops share: the options, the listening socket, the pool and
// its queue, the counters and the buffered bytes.
class HttpServer::Impl {
 public:
  Impl(const HttpServerOptions& o, HttpServerCallbacks cb) : opt_(o), cb_(std::move(cb)) {}
  ~Impl();

  Status Bind();
  Status StartThreads();
  // max_connections, lowered so that connections (plus the refused ones)
  // stay within the listener's share of RLIMIT_NOFILE.
  void FitConnectionsToFdLimit();
  void PoolThread();
  void Stop();
  // The unwritten part of c's response is held until it is written (or
  // the connection closes): counted in buffered_ with the request, so
  // clients that do not read their responses meet max_buffered_bytes.
  void ChargeUnsent(Conn* c) {
    const uint64_t unsent = c->out_head.size() + c->out_body.size() - c->sent;
    c->req_charge += unsent;
    buffered_.fetch_add(unsent, std::memory_order_relaxed);
  }
  bool OverBudget(uint64_t more) const {
    return buffered_.load(std::memory_order_relaxed) + more > opt_.max_buffered_bytes;
  }

  const HttpServerOptions opt_;
  const HttpServerCallbacks cb_;
  uint64_t max_connections_ = 0;  // opt_.max_connections, or lower (FitConnectionsToFdLimit)
  int listen_fd_ = -1;
  int port_ = 0;
  std::vector<std::unique_ptr<EventLoop>> loops_;
  std::vector<std::thread> pool_;
  std::atomic<bool> stopping_{false};
  Clock::time_point stop_deadline_;  // written before stopping_ is set
  bool started_ = false;
  // Request bytes held, all loops (received, or framed and not answered).
  std::atomic<uint64_t> buffered_{0};
  std::atomic<uint64_t> open_{0}, inline_{0}, pooled_{0}, busy_{0};

  // The pool's queue.
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Conn*> jobs_;
  bool pool_stop_ = false;
};

// One event-loop thread and the connections it owns. Loop 0 also accepts,
// and hands each new connection to the loops in turn.
class EventLoop {
 public:
  EventLoop(HttpServer::Impl* srv, size_t index) : srv_(srv), index_(index) {}
  ~EventLoop();
  Status Init();
  void Start() { thread_ = common::NamedThread("st-rest", [this] { Run(); }); }
  void Run();
  // From any thread: wakes the loop (stop, a returned or handed connection).
  void Wake();
  // From a pool thread: c's request has run; the loop takes it back.
  void Return(Conn* c);
  void Join() {
    if (thread_.joinable()) thread_.join();
  }
  // After the threads have stopped: last writes, then every close.
  void Finish();

 private:
  // Each returns false when it closed the connection (c is gone).
  bool ReadInput(Conn* c);
  bool Drain(Conn* c);
  // Frames and runs the requests buffered on c until one goes to the pool,
  // a response cannot be written at once, or more bytes are needed.
  bool Process(Conn* c);
  // Writes c's prepared response; then closes, waits for EPOLLOUT, or
  // goes back to reading.
  bool Respond(Conn* c);
  bool AnswerError(Conn* c, int status, const std::string& message);
  // Half-closes c and reads what the client still sends until it closes.
  bool LingerClose(Conn* c);
  // Stopping, c has no request: closes it, unless bytes of one wait unread.
  bool Retire(Conn* c);
  // The first pass of a stopping loop: no new connections; each idle
  // connection answered (503) or closed.
  void BeginStop();
  bool AllAnswered() const {
    for (const auto& [fd, conn] : conns_) {
      if (!conn->draining) return false;
    }
    return true;
  }

  void AcceptAll();
  // The new connection, or nullptr (it could not join the epoll set).
  Conn* Adopt(int fd, bool refuse);
  void OnEvent(Conn* c, uint32_t events);
  void OnWake();
  void SetInterest(Conn* c, uint32_t events);
  void Close(Conn* c);
  void Compact(Conn* c);
  void Sweep(Clock::time_point now);

  HttpServer::Impl* const srv_;
  const size_t index_;
  int epoll_fd_ = -1;
  int wake_fd_ = -1;
  std::thread thread_;
  std::unordered_map<int, std::unique_ptr<Conn>> conns_;
  std::string scratch_ = std::string(kReadChunk, '\0');
  bool accept_paused_ = false;
  bool stop_begun_ = false;
  Clock::time_point accept_resume_;
  Clock::time_point last_sweep_ = Clock::now();
  size_t next_loop_ = 0;  // loop 0: where the next connection goes

  // Handed back by the pool, and handed over by loop 0.
  std::mutex ret_mu_;
  std::vector<Conn*> returned_;
  std::vector<std::pair<int, bool>> incoming_;  // fd, refuse

  // Tags for the listening socket and the wake eventfd in epoll's data.
  static inline char kListenTag = 0, kWakeTag = 0;
};

Status HttpServer::Impl::Bind() {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV | AI_PASSIVE;
  addrinfo* found = nullptr;
  const std::string port = std::to_string(opt_.port);
  if (int rc = ::getaddrinfo(opt_.host.c_str(), port.c_str(), &hints, &found); rc != 0) {
    return Status(Code::kUnavailable, "rest.address: cannot resolve '" + opt_.host + "': " + gai_strerror(rc));
  }
  std::string error = "no address";
  for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
    const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    const int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(fd, a->ai_addr, a->ai_addrlen) == 0 && ::listen(fd, 1024) == 0) {
      listen_fd_ = fd;
      break;
    }
    error = std::strerror(errno);
    ::close(fd);
  }
  ::freeaddrinfo(found);
  if (listen_fd_ < 0) return Status(Code::kUnavailable, "rest.address: cannot bind " + opt_.host + ":" + port + ": " + error);
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&ss), &len);
  port_ = ntohs(ss.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port
                                         : reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
  return Status::OK();
}

HttpServer::Impl::~Impl() {
  Stop();
  loops_.clear();
  if (listen_fd_ >= 0) ::close(listen_fd_);
}

// Before: connections were bounded by rest.max_connections alone (1024 by
// default), and a descriptor limit of 1024 (a common default) let a flood of
// connections, no authentication needed, take every descriptor: RocksDB
// could then not open its next WAL file, the storage turned `failed` and
// refused every write until a restart, long after the connections closed.
void HttpServer::Impl::FitConnectionsToFdLimit() {
  max_connections_ = opt_.max_connections;
  rlimit rl{};
  if (::getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY) return;
  const uint64_t share = static_cast<uint64_t>(rl.rlim_cur) / kFdShareDivisor;
  const uint64_t fit = share > kRefusing + 1 ? share - kRefusing : 1;
  if (fit >= max_connections_) return;
  spdlog::warn(
      "REST listener: rest.max_connections {} lowered to {}: the process may open {} descriptors "
      "(RLIMIT_NOFILE) and the listener keeps to half of them; raise the limit (ulimit -n, "
      "LimitNOFILE=) to serve more connections",
      max_connections_, fit, static_cast<uint64_t>(rl.rlim_cur));
  max_connections_ = fit;
}

Status HttpServer::Impl::StartThreads() {
  const size_t n = static_cast<size_t>(std::max(1, opt_.io_threads));
  for (size_t i = 0; i < n; ++i) {
    loops_.push_back(std::make_unique<EventLoop>(this, i));
    if (Status s = loops_.back()->Init(); !s.ok()) return s;
  }
  // Only once every loop exists: loop 0 hands connections to the others.
  for (auto& l : loops_) l->Start();
  for (int i = 0; i < std::max(1, opt_.pool_threads); ++i) {
    pool_.push_back(common::NamedThread("st-rest-pool", [this] { PoolThread(); }));
  }
  started_ = true;
  return Status::OK();
}

void HttpServer::Impl::Stop() {
  if (!started_) return;
  started_ = false;
  stop_deadline_ = Clock::now() + kStopDrain;
  stopping_.store(true, std::memory_order_release);
  for (auto& l : loops_) l->Wake();
  for (auto& l : loops_) l->Join();
  // No loop reads any more; the pool runs what it was given.
  {
    std::lock_guard lock(mu_);
    pool_stop_ = true;
  }
  cv_.notify_all();
  for (auto& t : pool_) t.join();
  pool_.clear();
  for (auto& l : loops_) l->Finish();
}

EventLoop::~EventLoop() {
  for (int fd : {epoll_fd_, wake_fd_}) {
    if (fd >= 0) ::close(fd);
  }
}

Status EventLoop::Init() {
  epoll_fd_ = ::epoll_create1(EPOLL_CLOEXEC);
  wake_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (epoll_fd_ < 0 || wake_fd_ < 0) return Status(Code::kInternal, std::string("epoll/eventfd: ") + std::strerror(errno));
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.ptr = &kWakeTag;
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, wake_fd_, &ev);
  if (index_ == 0) {
    ev.data.ptr = &kListenTag;
    ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, srv_->listen_fd_, &ev);
  }
  return Status::OK();
}

void EventLoop::Wake() {
  const uint64_t one = 1;
  (void)!::write(wake_fd_, &one, sizeof one);
}

void EventLoop::Return(Conn* c) {
  {
    std::lock_guard lock(ret_mu_);
    returned_.push_back(c);
  }
  Wake();
}

void EventLoop::SetInterest(Conn* c, uint32_t events) {
  if (c->interest == events) return;
  epoll_event ev{};
  ev.events = events;
  ev.data.ptr = c;
  // A connection on the pool leaves the set: with an empty interest epoll
  // would still report its hang-up, again and again, to a loop that must
  // not touch it.
  const int op = events == 0 ? EPOLL_CTL_DEL : c->interest == 0 ? EPOLL_CTL_ADD : EPOLL_CTL_MOD;
  ::epoll_ctl(epoll_fd_, op, c->fd, events == 0 ? nullptr : &ev);
  c->interest = events;
}

void EventLoop::Close(Conn* c) {
  srv_->buffered_.fetch_sub(c->charged + c->req_charge, std::memory_order_relaxed);
  ::close(c->fd);  // also leaves the epoll set
  srv_->open_.fetch_sub(1, std::memory_order_relaxed);
  conns_.erase(c->fd);
}

void EventLoop::AcceptAll() {
  while (true) {
    const int fd = ::accept4(srv_->listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
        // Out of descriptors: stop accepting for a moment rather than spin
        // on a listening socket that stays readable.
        spdlog::warn("REST listener: accept: {}; pausing 100 ms", std::strerror(errno));
        ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, srv_->listen_fd_, nullptr);
        accept_paused_ = true;
        accept_resume_ = Clock::now() + std::chrono::milliseconds(100);
      }
      return;
    }
    // Past max_connections a few more are let in only to be told 503
    // (after their request arrives: answered before it, a client may see
    // a reset instead); past those, closed at once.
    const uint64_t open = srv_->open_.load(std::memory_order_relaxed);
    const bool refuse = open >= srv_->max_connections_;
    if (refuse && open >= srv_->max_connections_ + kRefusing) {
      srv_->busy_.fetch_add(1, std::memory_order_relaxed);
      ::close(fd);
      continue;
    }
    srv_->open_.fetch_add(1, std::memory_order_relaxed);
    const int one = 1;
    // Each response is one write; without NODELAY a response following a
    // small one could wait for the peer's delayed ACK.
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    // The loops take connections in turn: a connection stays on its loop.
    EventLoop* to = srv_->loops_[next_loop_++ % srv_->loops_.size()].get();
    if (to == this) {
      Adopt(fd, refuse);
    } else {
      {
        std::lock_guard lock(to->ret_mu_);
        to->incoming_.emplace_back(fd, refuse);
      }
      to->Wake();
    }
  }
}

Conn* EventLoop::Adopt(int fd, bool refuse) {
  auto conn = std::make_unique<Conn>(srv_->opt_.limits);
  Conn* c = conn.get();
  c->loop = this;
  c->fd = fd;
  c->refuse = refuse;
  c->last_active = Clock::now();
  c->request_started = c->last_active;
  c->interest = EPOLLIN;
  epoll_event ev{};
  ev.events = c->interest;
  ev.data.ptr = c;
  if (::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev) != 0) {
    ::close(fd);
    srv_->open_.fetch_sub(1, std::memory_order_relaxed);
    return nullptr;
  }
  conns_.emplace(fd, std::move(conn));
  return c;
}

void EventLoop::Compact(Conn* c) {
  if (c->in_off == c->in.size()) {
    // A request's worth of capacity is not kept by an idle connection.
    if (c->in.capacity() > kReadChunk) std::string().swap(c->in);
    c->in.clear();
    c->in_off = 0;
  } else if (c->in_off >= kReadChunk) {
    c->in.erase(0, c->in_off);
    c->in_off = 0;
  }
  const uint64_t now = c->in.size();
  srv_->buffered_.fetch_add(now - c->charged, std::memory_order_relaxed);  // modulo 2^64: a decrease too
  c->charged = now;
}

bool EventLoop::ReadInput(Conn* c) {
  if (c->Buffered() == 0 && !c->reader.HeadDone()) c->request_started = Clock::now();
  while (true) {
    const ssize_t r = ::recv(c->fd, scratch_.data(), scratch_.size(), 0);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    if (r <= 0) {
      // The peer closed (or reset): nothing more can be answered.
      Close(c);
      return false;
    }
    c->in.append(scratch_.data(), static_cast<size_t>(r));
    srv_->buffered_.fetch_add(static_cast<uint64_t>(r), std::memory_order_relaxed);
    c->charged += static_cast<uint64_t>(r);
    if (static_cast<size_t>(r) < scratch_.size()) break;
    // A full read: more may be waiting, but frame what is here before
    // buffering past one whole request's bounds.
    if (c->Buffered() > srv_->opt_.limits.max_head_bytes + srv_->opt_.limits.max_body_bytes) break;
  }
  c->last_active = Clock::now();
  if (c->refuse) return AnswerError(c, 503, kOverConnections);
  if (srv_->buffered_.load(std::memory_order_relaxed) > srv_->opt_.max_buffered_bytes) {
    return AnswerError(c, 503, "the REST listener holds rest.max_buffered_mb of requests; retry later");
  }
  return Process(c);
}

bool EventLoop::Drain(Conn* c) {
  while (true) {
    const ssize_t r = ::recv(c->fd, scratch_.data(), scratch_.size(), 0);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;
    if (r <= 0) break;
  }
  Close(c);
  return false;
}

bool EventLoop::AnswerError(Conn* c, int status, const std::string& message) {
  c->res = HttpResponse();
  c->res.status = status;
  if (status == 503) srv_->busy_.fetch_add(1, std::memory_order_relaxed);
  if (srv_->cb_.error) srv_->cb_.error(status, message, c->res);
  c->close_after = true;
  // What is buffered can no longer be framed: drop it.
  c->in.clear();
  c->in_off = 0;
  Compact(c);
  PrepareOut(c, false);
  return Respond(c);
}

bool EventLoop::Respond(Conn* c) {
  const Flush f = FlushOut(c);
  if (f == Flush::kFailed) {
    Close(c);
    return false;
  }
  if (f == Flush::kAgain) {
    SetInterest(c, EPOLLOUT);
    return true;
  }
  c->out_head.clear();
  c->out_body.clear();
  srv_->buffered_.fetch_sub(c->req_charge, std::memory_order_relaxed);
  c->req_charge = 0;
  if (c->out_body.capacity() > kReadChunk) std::string().swap(c->out_body);
  if (c->req.body.capacity() > kReadChunk) std::string().swap(c->req.body);
  if (c->close_after) return LingerClose(c);
  SetInterest(c, EPOLLIN);
  return true;
}

// Lingering close: half-close so the response is read, then drop what the
// client still sends until it closes (closing with unread bytes would reset
// the connection and could lose the response). Bounded by the sweep's
// timeout.
bool EventLoop::LingerClose(Conn* c) {
  ::shutdown(c->fd, SHUT_WR);
  c->draining = true;
  c->last_active = Clock::now();
  SetInterest(c, EPOLLIN);
  return Drain(c);
}

bool EventLoop::Retire(Conn* c) {
  // A request that reached the socket but not yet this loop must be
  // answered (503), not dropped unread by the lingering close: the loop's
  // next pass reads it (not read from here: Process calls Retire, and a
  // client that keeps sending would deepen the recursion).
  char probe = 0;
  const ssize_t r = ::recv(c->fd, &probe, 1, MSG_PEEK | MSG_DONTWAIT);
  if (r > 0) {
    SetInterest(c, EPOLLIN);
    return true;
  }
  if (r == 0) {
    Close(c);
    return false;
  }
  return LingerClose(c);
}

// Stopping (SIGTERM): before, the loops just exited and every connection
// was closed with whatever it had sent unread: a keep-alive client whose
// next request had arrived got a reset, neither an answer nor a 503, and
// could not tell whether it was executed. Now each request is answered.
void EventLoop::BeginStop() {
  stop_begun_ = true;
  if (index_ == 0)
    ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, srv_->listen_fd_, nullptr);  // no new connections
  std::vector<Conn*> idle;
  for (auto& [fd, conn] : conns_) {
    Conn* c = conn.get();
    if (!c->busy && !c->Pending() && !c->draining) idle.push_back(c);
  }
  // Each call closes at most its own connection: the others stay valid.
  for (Conn* c : idle) {
    if (c->Buffered() == 0 && !c->reader.HeadDone()) {
      Retire(c);
    } else {
      Process(c);
    }
  }
}

bool EventLoop::Process(Conn* c) {
  while (!c->busy && !c->Pending() && !c->draining) {
    size_t consumed = 0;
    const std::string_view buf(c->in.data() + c->in_off, c->in.size() - c->in_off);
    const auto outcome = c->reader.Next(buf, &c->req, &consumed);
    if (outcome == HttpRequestReader::Outcome::kError) {
      return AnswerError(c, c->reader.error_status(), c->reader.error_message());
    }
    if (outcome == HttpRequestReader::Outcome::kNeedMore) {
      if (buf.empty() && !c->reader.HeadDone() && srv_->stopping_.load(std::memory_order_relaxed)) {
        return Retire(c);  // answered everything it sent
      }
      if (c->reader.HeadDone()) {
        const size_t expected = c->reader.BodyBytesExpected();
        // What is here is counted already; refuse now a body that could
        // not be held, rather than after reading most of it.
        if (srv_->OverBudget(expected > buf.size() ? expected - buf.size() : 0)) {
          return AnswerError(c, 503, "the REST listener holds rest.max_buffered_mb of requests; retry later");
        }
        if (c->reader.WantsContinue()) {
          c->reader.ContinueSent();
          c->out_head.assign(kContinue);
          c->sent = 0;
          return Respond(c);
        }
      }
      return true;
    }
    c->in_off += consumed;
    Compact(c);
    // The body now lives in req until the response is written: still held.
    c->req_charge = c->req.body.size();
    srv_->buffered_.fetch_add(c->req_charge, std::memory_order_relaxed);
    if (srv_->stopping_.load(std::memory_order_relaxed)) {
      // Framed after the stop began: not executed (the engine is about to
      // drain), answered so the client knows it may retry it. Each
      // pipelined request gets its own 503, the last one `Connection:
      // close` (a client must not send more on it).
      c->res = HttpResponse();
      c->res.status = 503;
      if (srv_->cb_.error) srv_->cb_.error(503, "the server is shutting down; retry later", c->res);
      c->close_after = c->Buffered() == 0;
      PrepareOut(c, c->req.method == "HEAD");
      if (!Respond(c)) return false;
      c->request_started = Clock::now();
      continue;
    }
    c->res = HttpResponse();
    c->close_after = !c->req.keep_alive;
    const HttpServerCallbacks& cb = srv_->cb_;
    if (cb.runs_inline && cb.runs_inline(c->req)) {
      srv_->inline_.fetch_add(1, std::memory_order_relaxed);
      cb.handle(c->req, c->res);
      PrepareOut(c, c->req.method == "HEAD");
      if (!Respond(c)) return false;
      c->request_started = Clock::now();
      continue;
    }
    srv_->pooled_.fetch_add(1, std::memory_order_relaxed);
    c->busy = true;
    SetInterest(c, 0);
    {
      std::lock_guard lock(srv_->mu_);
      srv_->jobs_.push_back(c);
    }
    srv_->cv_.notify_one();
    return true;
  }
  return true;
}

void HttpServer::Impl::PoolThread() {
  while (true) {
    Conn* c = nullptr;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [this] { return pool_stop_ || !jobs_.empty(); });
      if (jobs_.empty()) return;  // stopping, and every queued request has run
      c = jobs_.front();
      jobs_.pop_front();
    }
    cb_.handle(c->req, c->res);
    // Stopping, and nothing pipelined behind it (those get their 503s
    // first): the connection closes after this response; say so, so the
    // client sends nothing more on it. (The loop does not touch c while it
    // is busy.)
    if (stopping_.load(std::memory_order_relaxed) && c->Buffered() == 0) c->close_after = true;
    PrepareOut(c, c->req.method == "HEAD");
    // What the socket takes now is written here; the rest of a large
    // response (a query page) is left to the loop (EPOLLOUT, and its
    // timeout for a client that stops reading). This thread used to wait
    // for the socket up to request_timeout_ms: rest.threads clients that
    // did not read their pages then held every pool thread, and every
    // write in fsync durability, query and $batch waited 30 s.
    const Flush f = FlushOut(c);
    if (f == Flush::kFailed) c->close_after = true;
    if (f == Flush::kAgain) ChargeUnsent(c);
    c->loop->Return(c);
  }
}

void EventLoop::OnWake() {
  uint64_t n = 0;
  (void)!::read(wake_fd_, &n, sizeof n);
  std::vector<Conn*> back;
  std::vector<std::pair<int, bool>> handed;
  {
    std::lock_guard lock(ret_mu_);
    back.swap(returned_);
    handed.swap(incoming_);
  }
  for (const auto& [fd, refuse] : handed) {
    Conn* c = Adopt(fd, refuse);
    // Accepted by loop 0 just before the stop, handed over after this
    // loop's BeginStop: retired like the others, not left to the deadline.
    if (c != nullptr && stop_begun_) Retire(c);
  }
  for (Conn* c : back) {
    c->busy = false;
    c->last_active = Clock::now();
    c->request_started = c->last_active;
    if (!Respond(c) || c->Pending()) continue;
    Process(c);  // requests pipelined behind it
  }
}

void EventLoop::OnEvent(Conn* c, uint32_t events) {
  if (c->busy) return;  // an event from before it left the set
  if (c->draining) {
    Drain(c);
    return;
  }
  if (c->Pending()) {
    if ((events & (EPOLLOUT | EPOLLERR | EPOLLHUP)) == 0) return;
    if (!Respond(c) || c->Pending()) return;
    c->last_active = Clock::now();
    c->request_started = c->last_active;
    Process(c);
    return;
  }
  ReadInput(c);
}

void EventLoop::Sweep(Clock::time_point now) {
  last_sweep_ = now;
  if (accept_paused_ && now >= accept_resume_) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.ptr = &kListenTag;
    ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, srv_->listen_fd_, &ev);
    accept_paused_ = false;
  }
  const auto request_timeout = std::chrono::milliseconds(srv_->opt_.request_timeout_ms);
  std::vector<Conn*> gone, slow;
  for (auto& [fd, conn] : conns_) {
    Conn* c = conn.get();
    if (c->busy) continue;
    if (c->draining) {
      if (now - c->last_active > kLinger) gone.push_back(c);
    } else if (c->Pending()) {
      // A client that does not read its response.
      if (now - c->last_active > request_timeout) gone.push_back(c);
    } else if (c->Buffered() > 0 || c->reader.HeadDone() || c->refuse) {
      if (now - c->request_started > request_timeout) slow.push_back(c);
    } else if (now - c->last_active > std::chrono::milliseconds(srv_->opt_.idle_timeout_ms)) {
      gone.push_back(c);
    }
  }
  for (Conn* c : gone) Close(c);
  for (Conn* c : slow) {
    // A connection let in past max_connections that sent nothing is still
    // refused for that reason (it used to get 408, and no busy count).
    if (c->refuse && c->Buffered() == 0) {
      AnswerError(c, 503, kOverConnections);
    } else {
      AnswerError(c, 408, "the request was not received within rest.request_timeout_ms");
    }
  }
}

void EventLoop::Run() {
  std::vector<epoll_event> events(256);
  while (true) {
    if (srv_->stopping_.load(std::memory_order_acquire)) {
      if (!stop_begun_) BeginStop();
      // Done when every connection is answered and half-closed (busy ones
      // included: their responses are written here), or at the deadline.
      // A lingering one need not wait for its client's close: it was told
      // everything, and a client's pool may keep an idle socket for long.
      if (AllAnswered() || Clock::now() >= srv_->stop_deadline_) break;
    }
    const int n = ::epoll_wait(epoll_fd_, events.data(), static_cast<int>(events.size()),
                               stop_begun_ ? 20 : 250);
    if (n < 0 && errno != EINTR) {
      spdlog::error("REST listener: epoll_wait: {}", std::strerror(errno));
      break;
    }
    for (int i = 0; i < n; ++i) {
      void* tag = events[i].data.ptr;
      if (tag == &kListenTag) {
        AcceptAll();
      } else if (tag == &kWakeTag) {
        OnWake();
      } else {
        // A handler closes only its own connection, and each descriptor
        // appears once per batch: the pointer is live.
        OnEvent(static_cast<Conn*>(tag), events[i].events);
      }
    }
    const auto now = Clock::now();
    if (now - last_sweep_ >= std::chrono::milliseconds(250)) {
      Sweep(now);
      if (srv_->cb_.tick) srv_->cb_.tick();
    }
  }
}

void EventLoop::Finish() {
  std::lock_guard lock(ret_mu_);
  for (Conn* c : returned_) {
    if (c->Pending()) (void)FlushOut(c);  // one last try, without waiting
  }
  returned_.clear();
  for (const auto& [fd, refuse] : incoming_) {
    ::close(fd);
    srv_->open_.fetch_sub(1, std::memory_order_relaxed);
  }
  incoming_.clear();
  while (!conns_.empty()) Close(conns_.begin()->second.get());
}

Result<std::unique_ptr<HttpServer>> HttpServer::Start(const HttpServerOptions& options, HttpServerCallbacks callbacks) {
  if (!callbacks.handle) return Status(Code::kInvalidInput, "HttpServer: no handler");
  std::unique_ptr<HttpServer> s(new HttpServer());
  s->impl_ = std::make_unique<Impl>(options, std::move(callbacks));
  Impl* impl = s->impl_.get();
  impl->FitConnectionsToFdLimit();
  if (Status st = impl->Bind(); !st.ok()) return st;
  if (Status st = impl->StartThreads(); !st.ok()) return st;
  return s;
}

HttpServer::~HttpServer() { Stop(); }

void HttpServer::Stop() {
  if (impl_) impl_->Stop();
}

int HttpServer::port() const { return impl_->port_; }

HttpServerStats HttpServer::Stats() const {
  HttpServerStats s;
  s.connections_open = impl_->open_.load(std::memory_order_relaxed);
  s.requests_inline = impl_->inline_.load(std::memory_order_relaxed);
  s.requests_pooled = impl_->pooled_.load(std::memory_order_relaxed);
  s.refused_busy = impl_->busy_.load(std::memory_order_relaxed);
  s.buffered_bytes = impl_->buffered_.load(std::memory_order_relaxed);
  return s;
}

}  // namespace sidetable::sidecar::rest
