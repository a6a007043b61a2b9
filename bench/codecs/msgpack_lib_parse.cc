// msgpack_lib.h's decoders: msgpack-cxx's visitor parser filling our types.
#include <msgpack.hpp>

#include <cstring>
#include <vector>

#include "bench/codecs/msgpack_lib.h"

namespace sidetable::bench::codecs {
namespace {

uint64_t FromBe8(const char* s) {
  uint64_t v = 0;
  for (int i = 0; i < 8; i++) v = v << 8 | static_cast<uint8_t>(s[i]);
  return v;
}

// Where the value under the current key goes.
enum class Slot : uint8_t {
  kIgnore, kFail, kTable, kCaller, kOps, kOpItem, kOpKind, kIfMatch, kEntity, kPk, kRk, kEtag,
  kTs, kProps, kProperty, kEntities, kEntityItem, kPlan, kNpk, kNrk, kExamined
};

enum class Ctx : uint8_t { kBody, kOps, kOp, kEntity, kProps, kEntities, kSkip };

struct Frame {
  Ctx ctx;
  std::string_view key;
  bool want_key = false;
  bool has_a = false, has_b = false;  // kOp: op, entity; kEntity: pk, rk
};

// A SAX-style state machine over msgpack-cxx's parse events that fills a
// Request (kWrite) or a QueryReply directly, as wire.cc's pull reader does.
class WireVisitor : public ::msgpack::null_visitor {
 public:
  WireVisitor(wire::Request* req, wire::QueryReply* reply, size_t input_size)
      : req_(req), reply_(reply), input_size_(input_size) {
    stack_.reserve(8);
  }
  const std::string& error() const { return error_; }

  bool visit_nil() {
    if (InSkip()) return true;
    if (stack_.empty() || stack_.back().want_key) return Fail("unexpected nil");
    const Slot s = SlotFor(stack_.back());
    // Like wire::DecodeRequest: nil in the request body means "absent".
    if (s == Slot::kIgnore || (stack_.back().ctx == Ctx::kBody && req_ != nullptr)) return true;
    return Fail("null is not a value");
  }
  bool visit_boolean(bool b) {
    return Scalar([&](Slot s) { return s == Slot::kProperty && AddProperty(Value::Boolean(b)); });
  }
  bool visit_positive_integer(uint64_t v) {
    return Scalar([&](Slot s) {
      if (s == Slot::kExamined) return (reply_->examined = v, true);
      return s == Slot::kProperty && v <= INT32_MAX &&
             AddProperty(Value::Int32(static_cast<int32_t>(v)));
    });
  }
  bool visit_negative_integer(int64_t v) {
    return Scalar([&](Slot s) {
      return s == Slot::kProperty && v >= INT32_MIN &&
             AddProperty(Value::Int32(static_cast<int32_t>(v)));
    });
  }
  bool visit_float32(float f) { return visit_float64(f); }
  bool visit_float64(double d) {
    return Scalar([&](Slot s) { return s == Slot::kProperty && AddProperty(Value::Double(d)); });
  }
  bool visit_str(const char* p, uint32_t n) {
    const std::string_view v(p, n);
    if (InSkip()) return true;
    if (stack_.empty()) return Fail("the body must be a map");
    Frame& f = stack_.back();
    if (f.want_key) {
      f.key = v;
      f.want_key = false;
      return true;
    }
    switch (SlotFor(f)) {
      case Slot::kIgnore: return true;
      case Slot::kTable: req_->table.assign(v); return true;
      case Slot::kCaller: req_->caller.assign(v); return true;
      case Slot::kOpKind:
        f.has_a = ParseOpKind(v, &req_->ops.back().kind);
        return f.has_a || Fail("unknown operation kind");
      case Slot::kIfMatch: req_->ops.back().if_match.assign(v); return true;
      case Slot::kPk: entity_->partition_key.assign(v); f.has_a = true; return true;
      case Slot::kRk: entity_->row_key.assign(v); f.has_b = true; return true;
      case Slot::kEtag: entity_->etag.assign(v); return true;
      case Slot::kProperty: return AddProperty(Value::String(std::string(v)));
      case Slot::kPlan: reply_->plan.assign(v); return true;
      case Slot::kNpk: reply_->next_pk = std::string(v); return true;
      case Slot::kNrk: reply_->next_rk = std::string(v); return true;
      default: return Fail("unexpected string");
    }
  }
  bool visit_bin(const char* p, uint32_t n) {
    return Scalar([&](Slot s) {
      return s == Slot::kProperty && AddProperty(Value::Binary(std::string(p, n)));
    });
  }
  bool visit_ext(const char* p, uint32_t n) {
    // p[0] is the ext type; n counts it.
    return Scalar([&](Slot s) {
      const int8_t type = static_cast<int8_t>(p[0]);
      const char* data = p + 1;
      const uint32_t size = n - 1;
      if (s == Slot::kTs) {
        if (type != wire::kExtDateTime || size != 8) return false;
        entity_->timestamp = static_cast<int64_t>(FromBe8(data));
        return true;
      }
      if (s != Slot::kProperty) return false;
      if (type == wire::kExtInt64 && size == 8) {
        return AddProperty(Value::Int64(static_cast<int64_t>(FromBe8(data))));
      }
      if (type == wire::kExtDateTime && size == 8) {
        return AddProperty(Value::DateTime(static_cast<int64_t>(FromBe8(data))));
      }
      if (type == wire::kExtGuid && size == 16) {
        Guid g;
        std::memcpy(g.data(), data, 16);
        return AddProperty(Value::MakeGuid(g));
      }
      return false;
    });
  }
  bool start_array(uint32_t n) {
    if (InSkip()) return Push(Ctx::kSkip);
    if (stack_.empty() || stack_.back().want_key) return Fail("unexpected array");
    switch (SlotFor(stack_.back())) {
      case Slot::kIgnore: return Push(Ctx::kSkip);
      case Slot::kOps:
        if (n > input_size_ / 4) return Fail("truncated 'ops'");
        req_->ops.reserve(n);
        return Push(Ctx::kOps);
      case Slot::kEntities:
        if (n > input_size_) return Fail("truncated entities");
        reply_->entities.reserve(n);
        return Push(Ctx::kEntities);
      default: return Fail("unexpected array");
    }
  }
  bool start_map(uint32_t n) {
    if (stack_.empty()) return Push(Ctx::kBody);
    if (InSkip()) return Push(Ctx::kSkip);
    Frame& f = stack_.back();
    if (f.want_key) return Fail("keys must be strings");
    switch (SlotFor(f)) {
      case Slot::kIgnore: return Push(Ctx::kSkip);
      case Slot::kOpItem: req_->ops.emplace_back(); return Push(Ctx::kOp);
      case Slot::kEntity:
        f.has_b = true;
        entity_ = &req_->ops.back().entity;
        return Push(Ctx::kEntity);
      case Slot::kEntityItem:
        entity_ = &reply_->entities.emplace_back();
        return Push(Ctx::kEntity);
      case Slot::kProps:
        if (n > input_size_ / 2) return Fail("truncated props");
        entity_->properties.reserve(n);
        return Push(Ctx::kProps);
      default: return Fail("unexpected map");
    }
  }
  bool start_map_key() {
    stack_.back().want_key = true;
    return true;
  }
  bool end_array() { return Pop(); }
  bool end_map() { return Pop(); }
  void parse_error(size_t, size_t) { error_ = "malformed MessagePack"; }
  void insufficient_bytes(size_t, size_t) { error_ = "truncated MessagePack"; }

 private:
  Slot SlotFor(const Frame& f) const {
    const std::string_view k = f.key;
    switch (f.ctx) {
      case Ctx::kSkip: return Slot::kIgnore;
      case Ctx::kBody:
        if (req_ != nullptr) {
          if (k == "table") return Slot::kTable;
          if (k == "caller") return Slot::kCaller;
          if (k == "ops") return Slot::kOps;
          return Slot::kIgnore;
        }
        if (k == "entities") return Slot::kEntities;
        if (k == "plan") return Slot::kPlan;
        if (k == "npk") return Slot::kNpk;
        if (k == "nrk") return Slot::kNrk;
        if (k == "examined") return Slot::kExamined;
        return Slot::kIgnore;
      case Ctx::kOps: return Slot::kOpItem;
      case Ctx::kEntities: return Slot::kEntityItem;
      case Ctx::kOp:
        if (k == "op") return Slot::kOpKind;
        if (k == "entity") return Slot::kEntity;
        if (k == "ifMatch") return Slot::kIfMatch;
        return Slot::kIgnore;
      case Ctx::kEntity:
        if (k == "pk") return Slot::kPk;
        if (k == "rk") return Slot::kRk;
        if (k == "etag") return Slot::kEtag;
        if (k == "ts") return Slot::kTs;
        if (k == "props") return Slot::kProps;
        return Slot::kIgnore;
      case Ctx::kProps: return Slot::kProperty;
    }
    return Slot::kFail;
  }

  // A non-string scalar: never a key; fn(slot) says whether it fits there.
  template <typename Fn>
  bool Scalar(Fn&& fn) {
    if (InSkip()) return true;
    if (stack_.empty() || stack_.back().want_key) return Fail("unexpected scalar");
    const Slot s = SlotFor(stack_.back());
    if (s == Slot::kIgnore) return true;
    return fn(s) || Fail("value of the wrong kind");
  }
  // Inside a value being skipped anything goes, keys of any kind included.
  bool InSkip() const { return !stack_.empty() && stack_.back().ctx == Ctx::kSkip; }
  bool AddProperty(Value v) {
    entity_->properties.push_back({std::string(stack_.back().key), std::move(v)});
    return true;
  }
  bool Push(Ctx ctx) {
    stack_.push_back(Frame{ctx});
    return true;
  }
  bool Pop() {
    const Frame f = stack_.back();
    stack_.pop_back();
    if (f.ctx == Ctx::kEntity && !(f.has_a && f.has_b)) return Fail("an entity needs pk and rk");
    if (f.ctx == Ctx::kOp && !(f.has_a && f.has_b)) return Fail("an operation needs 'op' and 'entity'");
    return true;
  }
  bool Fail(const char* what) {
    if (error_.empty()) error_ = what;
    return false;
  }

  wire::Request* req_;
  wire::QueryReply* reply_;
  size_t input_size_;
  Entity* entity_ = nullptr;
  std::vector<Frame> stack_;
  std::string error_;
};

// Runs the parser over one value; msgpack-cxx may throw (allocation, sizes
// it refuses), which must not leave this function.
Status ParseBody(std::string_view body, WireVisitor& v, bool whole) {
  try {
    size_t off = 0;
    if (!::msgpack::parse(body.data(), body.size(), off, v)) {
      return Status(Code::kInvalidInput, v.error().empty() ? "malformed body" : v.error());
    }
    if (whole && off != body.size()) {
      return Status(Code::kInvalidInput, "trailing bytes after the request body");
    }
    return Status::OK();
  } catch (const std::exception& e) {
    return Status(Code::kInvalidInput, e.what());
  }
}

}  // namespace

Status LibDecodeWriteRequest(std::string_view frame, wire::Request* q) {
  wire::Header h;
  if (!wire::ParseHeader(frame, &h)) return Status(Code::kInvalidInput, "short frame");
  q->id = h.request_id;
  if (h.version != wire::kVersion || h.op != static_cast<uint8_t>(wire::Op::kWrite) || h.status != 0) {
    return Status(Code::kInvalidInput, "not a version 1 Write request");
  }
  q->op = wire::Op::kWrite;
  WireVisitor v(q, nullptr, frame.size());
  ST_RETURN_IF_ERROR(ParseBody(frame.substr(wire::kHeaderBytes), v, true));
  if (q->table.empty()) return Status(Code::kInvalidInput, "Write needs 'table'");
  return Status::OK();
}

Status LibDecodeQuery(std::string_view body, wire::QueryReply* r) {
  WireVisitor v(nullptr, r, body.size());
  return ParseBody(body, v, false);
}

bool LibUnpackTree(std::string_view body) {
  try {
    ::msgpack::object_handle oh = ::msgpack::unpack(body.data(), body.size());
    return oh.get().type == ::msgpack::type::MAP;
  } catch (const std::exception&) {
    return false;
  }
}

}  // namespace sidetable::bench::codecs
