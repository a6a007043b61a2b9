#include "sidecar/rest/multipart.h"

#include <algorithm>

namespace sidetable::sidecar::rest {
namespace {

Status InvalidBatch(std::string m) {
  return Status(Code::kInvalidInput, "$batch: " + std::move(m));
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

// Reads one line (without its CRLF or LF) at *pos; false at the end.
bool NextLine(std::string_view s, size_t* pos, std::string_view* line) {
  if (*pos >= s.size()) return false;
  size_t eol = s.find('\n', *pos);
  if (eol == std::string_view::npos) eol = s.size();
  std::string_view l = s.substr(*pos, eol - *pos);
  if (!l.empty() && l.back() == '\r') l.remove_suffix(1);
  *line = l;
  *pos = eol + 1;
  return true;
}

// Header lines up to the first empty line.
Status Headers(std::string_view s, size_t* pos, HeaderList* out) {
  std::string_view line;
  for (size_t n = 0;; n++) {
    if (n > 100) return InvalidBatch("too many header lines");
    if (!NextLine(s, pos, &line)) return Status::OK();  // no body
    if (line.empty()) return Status::OK();
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos) return InvalidBatch("malformed header line");
    out->emplace_back(LowerAscii(Trim(line.substr(0, colon))),
                      std::string(Trim(line.substr(colon + 1))));
  }
}

std::string_view Find(const HeaderList& h, std::string_view name) {
  for (const auto& [k, v] : h) {
    if (k == name) return v;
  }
  return {};
}

// The parts between "--boundary" delimiters, each without the line break
// before the next delimiter. At most `max_parts`.
Status Split(std::string_view body, std::string_view boundary, size_t max_parts, std::vector<std::string_view>* out) {
  if (boundary.empty()) return InvalidBatch("the multipart boundary is missing");
  const std::string delim = "--" + std::string(boundary);
  size_t pos = body.find(delim);
  if (pos == std::string_view::npos) return InvalidBatch("no part starts with the boundary");
  pos += delim.size();
  for (;;) {
    if (body.substr(pos, 2) == "--") return Status::OK();  // the close delimiter
    const size_t eol = body.find('\n', pos);
    if (eol == std::string_view::npos) return InvalidBatch("unterminated multipart body");
    const size_t start = eol + 1;
    const size_t next = body.find(delim, start);
    if (next == std::string_view::npos)
      return InvalidBatch("the multipart body has no close delimiter");
    std::string_view part = body.substr(start, next - start);
    if (!part.empty() && part.back() == '\n') part.remove_suffix(1);
    if (!part.empty() && part.back() == '\r') part.remove_suffix(1);
    if (out->size() >= max_parts)
      return InvalidBatch("too many parts (at most " + std::to_string(max_parts) + ")");
    out->push_back(part);
    pos = next + delim.size();
  }
}

Status ParseOperation(std::string_view part, BatchRequest* op) {
  size_t pos = 0;
  HeaderList mime;
  ST_RETURN_IF_ERROR(Headers(part, &pos, &mime));
  const std::string ct = LowerAscii(Find(mime, "content-type"));
  if (ct.find("application/http") == std::string::npos) {
    return InvalidBatch("each changeset part must be Content-Type: application/http");
  }
  // The SDKs send "binary"; 7bit and 8bit are the same bytes. Anything else
  // (base64, quoted-printable) would need decoding we do not do, so it is
  // refused by name rather than parsed as a garbled request line.
  const std::string cte = LowerAscii(Trim(Find(mime, "content-transfer-encoding")));
  if (!cte.empty() && cte != "binary" && cte != "7bit" && cte != "8bit") {
    return InvalidBatch("Content-Transfer-Encoding '" + cte.substr(0, 40) +
                        "' is not supported in a changeset part (send binary)");
  }
  std::string_view line;
  if (!NextLine(part, &pos, &line)) return InvalidBatch("a changeset part has no request line");
  const size_t sp1 = line.find(' ');
  const size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  // An empty method or URL (a line starting with a blank, two blanks) is
  // malformed too: found by the fuzz target's invariants.
  if (sp1 == std::string_view::npos || sp1 == 0 || sp2 == std::string_view::npos || sp2 == sp1 + 1 ||
      line.substr(sp2 + 1).substr(0, 5) != "HTTP/") {
    return InvalidBatch("malformed request line '" + std::string(line.substr(0, 200)) + "'");
  }
  op->method = std::string(line.substr(0, sp1));
  std::transform(op->method.begin(), op->method.end(), op->method.begin(), [](unsigned char c) { return std::toupper(c); });
  op->url = std::string(line.substr(sp1 + 1, sp2 - sp1 - 1));
  ST_RETURN_IF_ERROR(Headers(part, &pos, &op->headers));
  if (pos < part.size()) op->body = std::string(part.substr(pos));
  return Status::OK();
}

}  // namespace

std::string_view BatchRequest::Header(std::string_view lower_name) const { return Find(headers, lower_name); }

std::string BoundaryOf(std::string_view content_type) {
  const std::string lower = LowerAscii(content_type);
  const size_t at = lower.find("boundary=");
  if (at == std::string::npos) return "";
  std::string_view b = content_type.substr(at + 9);
  const size_t end = b.find(';');
  if (end != std::string_view::npos) b = b.substr(0, end);
  b = Trim(b);
  if (b.size() >= 2 && b.front() == '"' && b.back() == '"') b = b.substr(1, b.size() - 2);
  return std::string(b.substr(0, 200));
}

Result<std::vector<BatchRequest>> ParseBatch(std::string_view content_type, std::string_view body) {
  if (LowerAscii(content_type).find("multipart/mixed") == std::string::npos) {
    return InvalidBatch("the Content-Type must be multipart/mixed; boundary=...");
  }
  std::vector<std::string_view> outer;
  ST_RETURN_IF_ERROR(Split(body, BoundaryOf(content_type), 1, &outer));
  if (outer.empty()) return InvalidBatch("the batch holds no changeset");
  size_t pos = 0;
  HeaderList headers;
  ST_RETURN_IF_ERROR(Headers(outer[0], &pos, &headers));
  const std::string_view inner_type = Find(headers, "content-type");
  if (LowerAscii(inner_type).find("multipart/mixed") == std::string::npos) {
    return InvalidBatch(
        "the batch's part must be a changeset (multipart/mixed); queries in a batch are not "
        "supported");
  }
  std::vector<std::string_view> parts;
  ST_RETURN_IF_ERROR(Split(outer[0].substr(std::min(pos, outer[0].size())), BoundaryOf(inner_type),
                           kMaxBatchOperations, &parts));
  if (parts.empty()) return InvalidBatch("the changeset holds no operation");
  std::vector<BatchRequest> ops(parts.size());
  for (size_t i = 0; i < parts.size(); i++) {
    Status s = ParseOperation(parts[i], &ops[i]);
    if (!s.ok()) return Status(s.code(), s.message(), static_cast<int>(i));
  }
  return ops;
}

std::string WriteBatchResponse(std::string_view id, const std::vector<BatchResponsePart>& parts) {
  std::string out;
  const std::string cs = "changesetresponse_" + std::string(id);
  out += "--batchresponse_" + std::string(id) + "\r\n";
  out += "Content-Type: multipart/mixed; boundary=" + cs + "\r\n\r\n";
  for (const auto& p : parts) {
    out += "--" + cs + "\r\n";
    out += "Content-Type: application/http\r\nContent-Transfer-Encoding: binary\r\n\r\n";
    out += "HTTP/1.1 " + std::to_string(p.status) + " " + std::string(ReasonPhrase(p.status)) + "\r\n";
    for (const auto& [k, v] : p.headers) out += k + ": " + v + "\r\n";
    out += "\r\n";
    out += p.body;
    out += "\r\n";
  }
  out += "--" + cs + "--\r\n";
  out += "--batchresponse_" + std::string(id) + "--\r\n";
  return out;
}

}  // namespace sidetable::sidecar::rest
