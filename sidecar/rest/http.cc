// The HTTP/1.1 request reader and response head writer (http.h).
#include "sidecar/rest/http.h"

#include <algorithm>
#include <charconv>
#include <cstring>

namespace sidetable::sidecar::rest {

namespace {

char Lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

// tchar of RFC 9110 5.6.2: the characters of methods and field names.
bool IsTokenChar(unsigned char c) {
  if (c >= '0' && c <= '9') return true;
  if ((c | 0x20) >= 'a' && (c | 0x20) <= 'z') return true;
  return std::strchr("!#$%&'*+-.^_`|~", c) != nullptr && c != 0;
}

bool IsToken(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!IsTokenChar(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

std::string_view TrimOws(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// Does the comma-separated list `value` hold `token` (case-insensitively)?
bool ListHas(std::string_view value, std::string_view token) {
  while (!value.empty()) {
    const size_t comma = value.find(',');
    if (HeaderNameEquals(TrimOws(value.substr(0, comma)), token)) return true;
    if (comma == std::string_view::npos) break;
    value.remove_prefix(comma + 1);
  }
  return false;
}

// The first field named `name` in `fields`, or null.
const std::string* FindField(const std::vector<std::pair<std::string, std::string>>& fields, std::string_view name) {
  for (const auto& [k, v] : fields) {
    if (HeaderNameEquals(k, name)) return &v;
  }
  return nullptr;
}

}  // namespace

bool HeaderNameEquals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (Lower(a[i]) != Lower(b[i])) return false;
  }
  return true;
}

std::string LowerAscii(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = Lower(c);
  return out;
}

std::string_view HttpRequest::Header(std::string_view name) const {
  const std::string* v = FindField(headers, name);
  return v != nullptr ? std::string_view(*v) : std::string_view();
}

void HttpRequest::Clear() {
  method.clear();
  target.clear();
  minor_version = 1;
  headers.clear();
  body.clear();
  keep_alive = true;
}

std::string HttpResponse::get_header_value(std::string_view name) const {
  const std::string* v = FindField(headers, name);
  return v != nullptr ? *v : std::string();
}

bool HttpResponse::has_header(std::string_view name) const { return FindField(headers, name) != nullptr; }

std::string_view ReasonPhrase(int status) {
  switch (status) {
    case 100: return "Continue";
    case 200: return "OK";
    case 201: return "Created";
    case 202: return "Accepted";
    case 204: return "No Content";
    case 206: return "Partial Content";
    case 304: return "Not Modified";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 409: return "Conflict";
    case 411: return "Length Required";
    case 412: return "Precondition Failed";
    case 413: return "Request Entity Too Large";
    case 415: return "Unsupported Media Type";
    case 416: return "Requested Range Not Satisfiable";
    case 417: return "Expectation Failed";
    case 429: return "Too Many Requests";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 503: return "Service Unavailable";
    case 504: return "Gateway Timeout";
    case 505: return "HTTP Version Not Supported";
    case 507: return "Insufficient Storage";
    default: return "Unknown";
  }
}

void AppendResponseHead(const HttpResponse& res, bool close, std::string* out) {
  char num[24];
  out->append("HTTP/1.1 ");
  auto [end, ec] = std::to_chars(num, num + sizeof num, res.status);
  out->append(num, end);
  out->push_back(' ');
  out->append(ReasonPhrase(res.status));
  out->append("\r\n");
  for (const auto& [k, v] : res.headers) {
    out->append(k);
    out->append(": ");
    // A value never carries a line break onto the wire (response splitting):
    // the gateway echoes some request fields, which the reader already
    // refuses with one, but the writer does not rely on that.
    const size_t at = out->size();
    out->append(v);
    for (size_t i = at; i < out->size(); ++i) {
      if ((*out)[i] == '\r' || (*out)[i] == '\n') (*out)[i] = ' ';
    }
    out->append("\r\n");
  }
  // No Content-Length on 1xx and 204 (RFC 9110 8.6).
  if (res.status >= 200 && res.status != 204) {
    out->append("Content-Length: ");
    auto [e, ec2] = std::to_chars(num, num + sizeof num, res.body.size());
    out->append(num, e);
    out->append("\r\n");
  }
  if (close) out->append("Connection: close\r\n");
  out->append("\r\n");
}

void HttpRequestReader::Reset() {
  head_done_ = false;
  head_len_ = 0;
  scanned_ = 0;
  chunked_ = false;
  expect_continue_ = false;
  continue_sent_ = false;
  content_length_ = 0;
  pos_ = 0;
  body_.clear();
  chunk_state_ = ChunkState::kSize;
  chunk_left_ = 0;
  trailer_bytes_ = 0;
}

HttpRequestReader::Outcome HttpRequestReader::Fail(int status, std::string message) {
  error_status_ = status;
  error_message_ = std::move(message);
  return Outcome::kError;
}

HttpRequestReader::Outcome HttpRequestReader::Next(std::string_view buf, HttpRequest* req, size_t* consumed) {
  if (error_status_ != 0) return Outcome::kError;
  if (!head_done_) {
    // The blank line ending the head; search only the bytes not searched yet.
    const size_t from = scanned_ >= 3 ? scanned_ - 3 : 0;
    const size_t end = buf.find("\r\n\r\n", from);
    // Over the limit whether the head is complete or still arriving.
    if ((end == std::string_view::npos ? buf.size() : end + 4) > limits_.max_head_bytes) {
      return Fail(431, "the request line and header fields exceed " + std::to_string(limits_.max_head_bytes) + " bytes");
    }
    if (end == std::string_view::npos) {
      scanned_ = buf.size();
      return Outcome::kNeedMore;
    }
    head_len_ = end + 4;
    if (Outcome o = ParseHead(buf.substr(0, end + 2), req); o == Outcome::kError) return o;
    head_done_ = true;
    pos_ = head_len_;
  }
  if (chunked_) return ReadChunks(buf, req, consumed);
  if (buf.size() - head_len_ < content_length_) return Outcome::kNeedMore;
  req->body.assign(buf.data() + head_len_, content_length_);
  *consumed = head_len_ + content_length_;
  Reset();
  return Outcome::kRequest;
}

HttpRequestReader::Outcome HttpRequestReader::ParseHead(std::string_view head, HttpRequest* req) {
  req->Clear();
  // RFC 9112 2.2: empty lines before the request line are ignored.
  while (head.size() >= 2 && head[0] == '\r' && head[1] == '\n') head.remove_prefix(2);
  size_t eol = head.find("\r\n");
  const std::string_view line = head.substr(0, eol);
  head.remove_prefix(eol == std::string_view::npos ? head.size() : eol + 2);

  const size_t sp1 = line.find(' ');
  const size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos || line.find(' ', sp2 + 1) != std::string_view::npos) {
    return Fail(400, "malformed request line");
  }
  const std::string_view method = line.substr(0, sp1);
  std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  const std::string_view version = line.substr(sp2 + 1);
  if (!IsToken(method)) return Fail(400, "malformed method in the request line");
  if (version.size() != 8 || version.substr(0, 5) != "HTTP/" || version[6] != '.' || version[5] < '0' ||
      version[5] > '9' || version[7] < '0' || version[7] > '9') {
    return Fail(400, "malformed HTTP version in the request line");
  }
  if (version[5] != '1') return Fail(505, "only HTTP/1.x is served");
  for (char c : target) {
    const auto u = static_cast<unsigned char>(c);
    if (u <= 0x20 || u == 0x7f) return Fail(400, "malformed request target");
  }
  // Absolute-form (RFC 9112 3.2.2), as a proxy-aware client may send it:
  // served as the origin-form path it names.
  if (target.size() > 7 && (HeaderNameEquals(target.substr(0, 7), "http://") ||
                            (target.size() > 8 && HeaderNameEquals(target.substr(0, 8), "https://")))) {
    const size_t slash = target.find('/', target.find("//") + 2);
    target = slash == std::string_view::npos ? std::string_view("/") : target.substr(slash);
  }
  if (target.empty() || (target[0] != '/' && target != "*")) return Fail(400, "malformed request target");
  req->method.assign(method);
  req->target.assign(target);
  req->minor_version = version[7] - '0';

  bool have_length = false;
  while (!head.empty()) {
    eol = head.find("\r\n");
    const std::string_view field = head.substr(0, eol);
    head.remove_prefix(eol == std::string_view::npos ? head.size() : eol + 2);
    if (field.empty()) return Fail(400, "malformed header field");
    if (field[0] == ' ' || field[0] == '\t') return Fail(400, "obsolete line folding in a header field");
    const size_t colon = field.find(':');
    if (colon == std::string_view::npos || !IsToken(field.substr(0, colon))) {
      return Fail(400, "malformed header field");
    }
    const std::string_view value = TrimOws(field.substr(colon + 1));
    for (char c : value) {
      const auto u = static_cast<unsigned char>(c);
      if ((u < 0x20 && u != '\t') || u == 0x7f) return Fail(400, "a control character in a header field's value");
    }
    if (req->headers.size() >= limits_.max_headers) {
      return Fail(431, "more than " + std::to_string(limits_.max_headers) + " header fields");
    }
    req->headers.emplace_back(std::string(field.substr(0, colon)), std::string(value));
    const std::string_view name = field.substr(0, colon);
    if (HeaderNameEquals(name, "Content-Length")) {
      size_t n = 0;
      const auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
      if (value.empty() || ec != std::errc() || p != value.data() + value.size()) {
        return Fail(400, "malformed Content-Length");
      }
      if (have_length && n != content_length_) return Fail(400, "conflicting Content-Length fields");
      have_length = true;
      content_length_ = n;
    } else if (HeaderNameEquals(name, "Transfer-Encoding")) {
      // Only chunked is served, alone (compressed request bodies are not
      // sent by the SDKs); twice is malformed (RFC 9112 6.1).
      if (!HeaderNameEquals(value, "chunked")) return Fail(501, "only the chunked transfer coding is served");
      if (chunked_) return Fail(400, "chunked applied twice");
      chunked_ = true;
    } else if (HeaderNameEquals(name, "Connection")) {
      if (ListHas(value, "close")) req->keep_alive = false;
      else if (ListHas(value, "keep-alive")) req->keep_alive = true;
    } else if (HeaderNameEquals(name, "Expect")) {
      if (!HeaderNameEquals(value, "100-continue")) return Fail(417, "only Expect: 100-continue is served");
      expect_continue_ = true;
    }
  }
  if (req->minor_version == 0) {
    req->keep_alive = ListHas(req->Header("Connection"), "keep-alive");
    expect_continue_ = false;  // HTTP/1.0 clients never wait for it
    if (chunked_) return Fail(400, "Transfer-Encoding in an HTTP/1.0 request");
  } else if (std::none_of(req->headers.begin(), req->headers.end(),
                          [](const auto& h) { return HeaderNameEquals(h.first, "Host"); })) {
    return Fail(400, "an HTTP/1.1 request without Host");
  }
  // Both framings at once is how requests are smuggled past proxies.
  if (chunked_ && have_length) return Fail(400, "both Content-Length and Transfer-Encoding");
  if (content_length_ > limits_.max_body_bytes) {
    return Fail(413, "the body of " + std::to_string(content_length_) + " bytes exceeds " +
                         std::to_string(limits_.max_body_bytes));
  }
  return Outcome::kNeedMore;
}

HttpRequestReader::Outcome HttpRequestReader::ReadChunks(std::string_view buf, HttpRequest* req, size_t* consumed) {
  // A chunk-size line or a trailer field longer than this is not a client.
  constexpr size_t kMaxLine = 4096;
  // The end of the line at pos_ (npos: not all here yet); *too_long when
  // it is over kMaxLine, complete or still arriving.
  auto line_end = [&](bool* too_long) {
    const size_t eol = buf.find("\r\n", pos_);
    *too_long = (eol == std::string_view::npos ? buf.size() : eol) - pos_ > kMaxLine;
    return eol;
  };
  bool too_long = false;
  while (true) {
    switch (chunk_state_) {
      case ChunkState::kSize: {
        const size_t eol = line_end(&too_long);
        if (too_long) return Fail(400, "malformed chunk size");
        if (eol == std::string_view::npos) return Outcome::kNeedMore;
        const std::string_view line = buf.substr(pos_, eol - pos_);
        size_t size = 0;
        const auto [p, ec] = std::from_chars(line.data(), line.data() + line.size(), size, 16);
        const std::string_view rest = line.substr(static_cast<size_t>(p - line.data()));
        if (ec != std::errc() || p == line.data() || (!rest.empty() && rest[0] != ';' && rest[0] != ' ' && rest[0] != '\t')) {
          return Fail(400, "malformed chunk size");
        }
        if (size > limits_.max_body_bytes - body_.size()) {
          return Fail(413, "the chunked body exceeds " + std::to_string(limits_.max_body_bytes) + " bytes");
        }
        pos_ = eol + 2;
        chunk_left_ = size;
        chunk_state_ = size == 0 ? ChunkState::kTrailer : ChunkState::kData;
        break;
      }
      case ChunkState::kData: {
        const size_t n = std::min(chunk_left_, buf.size() - pos_);
        body_.append(buf.data() + pos_, n);
        pos_ += n;
        chunk_left_ -= n;
        if (chunk_left_ > 0) return Outcome::kNeedMore;
        chunk_state_ = ChunkState::kDataEnd;
        break;
      }
      case ChunkState::kDataEnd:
        if (buf.size() - pos_ < 2) return Outcome::kNeedMore;
        if (buf[pos_] != '\r' || buf[pos_ + 1] != '\n') return Fail(400, "malformed chunk: no CRLF after its data");
        pos_ += 2;
        chunk_state_ = ChunkState::kSize;
        break;
      case ChunkState::kTrailer: {
        const size_t eol = line_end(&too_long);
        if (too_long) return Fail(431, "a trailer field is too long");
        if (eol == std::string_view::npos) return Outcome::kNeedMore;
        if (eol == pos_) {  // the blank line: the request is complete
          *consumed = pos_ + 2;
          req->body = std::move(body_);
          Reset();
          return Outcome::kRequest;
        }
        trailer_bytes_ += eol - pos_ + 2;
        if (trailer_bytes_ > limits_.max_head_bytes) return Fail(431, "the trailer section is too large");
        pos_ = eol + 2;  // trailer fields are read and dropped
        break;
      }
    }
  }
}

}  // namespace sidetable::sidecar::rest
