// HTTP/1.1 messages for the REST gateway: the request as read off the wire,
// the response the operations fill in, and the incremental reader that
// frames requests out of a connection's bytes (RFC 9112: request line,
// header fields, Content-Length or chunked bodies, pipelining).
//
// The reader is a trust boundary: every input either yields a request or
// an error with the status to answer; it never reads past `buf`, and it
// bounds what it accepts (header bytes, header count, body bytes) before
// the bytes arrive, so a caller buffers at most those limits. It is pure
// (no I/O): unit tests and the fuzz target drive it with any bytes.
//
// Thread safety: values; a reader belongs to one connection.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace sidetable::sidecar::rest {

// Header names compare case-insensitively (RFC 9110 5.1).
bool HeaderNameEquals(std::string_view a, std::string_view b);
// `s` with ASCII A-Z lowered (header values such as media types and origins).
std::string LowerAscii(std::string_view s);

struct HttpRequest {
  std::string method;  // as sent: "GET", "MERGE", ...
  std::string target;  // origin-form: path and query, still percent-encoded
  int minor_version = 1;  // HTTP/1.<minor>
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;  // de-chunked
  bool keep_alive = true;  // after this request's response, read the next

  // The first field of that name, "" when absent.
  std::string_view Header(std::string_view name) const;
  void Clear();
};

struct HttpResponse {
  int status = 200;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;

  // Appends a field (no check for an earlier one of the same name, like
  // the service, which never repeats the fields it sets).
  void set_header(std::string name, std::string value) { headers.emplace_back(std::move(name), std::move(value)); }
  void set_content(std::string content, std::string content_type) {
    body = std::move(content);
    set_header("Content-Type", std::move(content_type));
  }
  std::string get_header_value(std::string_view name) const;
  bool has_header(std::string_view name) const;
};

// "OK", "Not Found", ...; "Unknown" for codes it does not name.
std::string_view ReasonPhrase(int status);

// The status line and the header fields of `res`, with Content-Length
// (the body's size; kept for HEAD, whose body is not sent) and
// "Connection: close" when `close`. Ends with the blank line.
void AppendResponseHead(const HttpResponse& res, bool close, std::string* out);

struct HttpLimits {
  size_t max_head_bytes = 64 << 10;   // request line and fields
  size_t max_headers = 100;           // fields
  size_t max_body_bytes = 4 << 20;    // declared or de-chunked
};

class HttpRequestReader {
 public:
  enum class Outcome {
    kNeedMore,  // the request is not complete in `buf`
    kRequest,   // *req holds it; *consumed bytes of `buf` were it
    kError,     // answer error_status() and close: the framing is lost
  };

  explicit HttpRequestReader(HttpLimits limits = {}) : limits_(limits) {}

  // Reads the request at the front of `buf` (the bytes not yet consumed;
  // pass them again, with more appended, and the same *req after
  // kNeedMore: the reader remembers how far it got). After kRequest the
  // reader is ready for the next request, which starts at buf + *consumed.
  // After kError it stays in error.
  Outcome Next(std::string_view buf, HttpRequest* req, size_t* consumed);

  // After kNeedMore: the head has been read and the client asked for
  // "Expect: 100-continue"; the caller sends the interim response once
  // (and calls ContinueSent()).
  bool WantsContinue() const { return head_done_ && expect_continue_ && !continue_sent_; }
  void ContinueSent() { continue_sent_ = true; }
  // After kNeedMore: the head has been read; the body still to come (for
  // a chunked body: at least this much). 0 before the head is complete.
  size_t BodyBytesExpected() const { return head_done_ ? (chunked_ ? body_.size() : content_length_) : 0; }
  bool HeadDone() const { return head_done_; }

  int error_status() const { return error_status_; }
  const std::string& error_message() const { return error_message_; }

 private:
  Outcome Fail(int status, std::string message);
  Outcome ParseHead(std::string_view head, HttpRequest* req);
  // Decodes chunks from buf[pos_...]; kRequest when the last chunk and its
  // trailer section have been read.
  Outcome ReadChunks(std::string_view buf, HttpRequest* req, size_t* consumed);
  void Reset();

  HttpLimits limits_;
  // Progress on the current request.
  bool head_done_ = false;
  size_t head_len_ = 0;  // bytes of request line and fields, blank line included
  size_t scanned_ = 0;   // bytes searched for the end of the head so far
  bool chunked_ = false;
  bool expect_continue_ = false;
  bool continue_sent_ = false;
  size_t content_length_ = 0;
  size_t pos_ = 0;       // chunked: the next unread byte of buf
  std::string body_;     // chunked: what has been decoded so far
  enum class ChunkState { kSize, kData, kDataEnd, kTrailer };
  ChunkState chunk_state_ = ChunkState::kSize;
  size_t chunk_left_ = 0;     // of the current chunk's data
  size_t trailer_bytes_ = 0;
  int error_status_ = 0;
  std::string error_message_;
};

}  // namespace sidetable::sidecar::rest
