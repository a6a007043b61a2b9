// MessagePack: protocol/msgpack.h (through wire.h, as the server and
// clients use it) vs msgpack-cxx's packer and visitor parser.
#include <memory>

#include "bench/codecs/cases.h"
#include "bench/codecs/msgpack_lib.h"
#include "bench/codecs/shapes.h"
#include "bench/harness.h"

namespace sidetable::bench::codecs {
namespace {

struct MsgpackData {
  wire::Request request = SampleWriteRequest();
  wire::QueryReply reply;
  std::string frame;  // the encoded request
  std::string body;   // the encoded reply body
  std::string scratch;
};

bool SameEntities(const std::vector<Entity>& a, const std::vector<Entity>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); i++) {
    if (a[i].partition_key != b[i].partition_key || a[i].row_key != b[i].row_key ||
        a[i].timestamp != b[i].timestamp || a[i].etag != b[i].etag ||
        !(a[i].properties == b[i].properties)) {
      return false;
    }
  }
  return true;
}

// Both encoders write the same bytes, both decoders read back what was
// written and reject every truncated request frame.
void CheckMsgpack(const MsgpackData& d) {
  std::string ours, lib, hand;
  wire::EncodeRequest(d.request, &ours);
  LibEncodeWriteRequest(d.request, &lib);
  HandWrittenEncodeWriteRequest(d.request, &hand);
  if (ours != lib || ours != hand) Die("msgpack: request encodings differ");
  ours.clear();
  lib.clear();
  hand.clear();
  wire::EncodeQuery(d.reply, &ours);
  LibEncodeQuery(d.reply, &lib);
  HandWrittenEncodeQuery(d.reply, &hand);
  if (ours != lib || ours != hand) Die("msgpack: query reply encodings differ");

  wire::Request a, b;
  if (!wire::DecodeRequest(d.frame, &a).ok()) Die("msgpack: ours rejects the request");
  Status s = LibDecodeWriteRequest(d.frame, &b);
  if (!s.ok()) Die("msgpack: msgpack-cxx rejects the request: " + s.message());
  if (a.table != b.table || a.caller != b.caller || a.ops.size() != 1 || b.ops.size() != 1 ||
      a.ops[0].kind != b.ops[0].kind || !SameEntities({a.ops[0].entity}, {b.ops[0].entity}) ||
      !SameEntities({a.ops[0].entity}, {d.request.ops[0].entity})) {
    Die("msgpack: decoded requests differ");
  }
  wire::QueryReply qa, qb;
  if (!wire::DecodeQuery(d.body, &qa).ok()) Die("msgpack: ours rejects the reply");
  if (!LibDecodeQuery(d.body, &qb).ok()) Die("msgpack: msgpack-cxx rejects the reply");
  if (!SameEntities(qa.entities, d.reply.entities) || !SameEntities(qb.entities, d.reply.entities) ||
      qa.plan != qb.plan || qa.examined != qb.examined || qa.next_rk != qb.next_rk) {
    Die("msgpack: decoded replies differ");
  }
  for (size_t n = wire::kHeaderBytes; n < d.frame.size(); n++) {
    wire::Request x, y;
    const std::string_view prefix(d.frame.data(), n);
    if (wire::DecodeRequest(prefix, &x).ok()) Die("msgpack: ours accepts a truncated request");
    if (LibDecodeWriteRequest(prefix, &y).ok()) Die("msgpack: msgpack-cxx accepts a truncated request");
  }
}

// msgpack::packer::pack_double writes a double that holds an integer (2.0,
// -0.0) as a MessagePack integer, which our reader (and every client) takes
// for an Int32: the Edm type would change on the wire. Reports whether the
// mirror's bytes differ from ours for such values.
bool PackDoubleChangesIntegralDoubles() {
  wire::Request r = SampleWriteRequest();
  r.ops[0].entity.properties.clear();
  r.ops[0].entity.Set("Two", Value::Double(2.0));
  r.ops[0].entity.Set("MinusZero", Value::Double(-0.0));
  std::string ours, lib;
  wire::EncodeRequest(r, &ours);
  LibEncodeWriteRequest(r, &lib);
  wire::Request back;
  if (!wire::DecodeRequest(ours, &back).ok() || !(back.ops[0].entity.properties == r.ops[0].entity.properties)) {
    Die("msgpack: ours does not round-trip integral doubles");
  }
  return ours != lib;
}

}  // namespace

std::vector<Group> MsgpackGroups(const Sizes& sizes) {
  auto d = std::make_shared<MsgpackData>();
  d->reply = SampleQueryReply(sizes.reply_entities);
  wire::EncodeRequest(d->request, &d->frame);
  wire::EncodeQuery(d->reply, &d->body);
  CheckMsgpack(*d);

  const std::string n = WithCommas(static_cast<double>(sizes.reply_entities));
  Group enc;
  enc.title = "MessagePack encoding: protocol/msgpack.h vs msgpack-cxx 4.1 (msgpack::packer)";
  enc.labels = {"wire.h (now)", "hand-written (before)", "msgpack-cxx"};
  enc.library = 2;
  auto encode = [d](auto fn, const auto& value) {
    return [d, fn, &value] {
      d->scratch.clear();
      fn(value, &d->scratch);
      Keep(d->scratch);
    };
  };
  enc.rows.push_back({"encode Write request (1 entity, 12 props, " + std::to_string(d->frame.size()) + " B)", 1,
                      {encode(wire::EncodeRequest, d->request), encode(HandWrittenEncodeWriteRequest, d->request),
                       encode(LibEncodeWriteRequest, d->request)}});
  enc.rows.push_back({"encode query reply (" + n + " entities, " + WithCommas(static_cast<double>(d->body.size())) + " B)", 1,
                      {encode(wire::EncodeQuery, d->reply), encode(HandWrittenEncodeQuery, d->reply),
                       encode(LibEncodeQuery, d->reply)}});
  enc.notes.push_back(
      "The three write identical bytes (checked before timing). \"wire.h (now)\" is the real "
      "`wire::EncodeRequest` / `wire::EncodeQuery`; the other two run the same encoding code "
      "(bench/codecs/msgpack_lib_pack.cc) on the hand-written writer wire.h had before issue 11 and "
      "on `msgpack::packer` directly.");
  if (PackDoubleChangesIntegralDoubles()) {
    enc.notes.push_back(
        "msgpack-cxx's `pack_double` writes a Double holding an integer (2.0, -0.0) as a "
        "MessagePack integer, which reads back as Int32 (and loses -0.0): the sample entity's "
        "Double is 1234.5678, and the Writer writes every Double as float64 itself.");
  }

  Group dec;
  dec.title = "MessagePack decoding: protocol/msgpack.h vs msgpack-cxx 4.1 (visitor parser)";
  dec.labels = {"ours", "msgpack-cxx"};
  dec.rows.push_back({"decode Write request", 1,
                      {[d] { wire::Request r; Keep(wire::DecodeRequest(d->frame, &r)); Keep(r); },
                       [d] { wire::Request r; Keep(LibDecodeWriteRequest(d->frame, &r)); Keep(r); }}});
  dec.rows.push_back({"decode query reply (" + n + " entities)", 1,
                      {[d] { wire::QueryReply q; Keep(wire::DecodeQuery(d->body, &q)); Keep(q); },
                       [d] { wire::QueryReply q; Keep(LibDecodeQuery(d->body, &q)); Keep(q); }}});
  const size_t prefixes = d->frame.size() - wire::kHeaderBytes;
  auto truncations = [d](auto decode) {
    return [d, decode] {
      for (size_t n = wire::kHeaderBytes; n < d->frame.size(); n++) {
        wire::Request r;
        Keep(decode(std::string_view(d->frame.data(), n), &r));
      }
    };
  };
  dec.rows.push_back({"reject a truncated Write request (each of " + std::to_string(prefixes) +
                          " prefixes; per prefix)", prefixes,
                      {truncations([](std::string_view f, wire::Request* r) { return wire::DecodeRequest(f, r); }),
                       truncations([](std::string_view f, wire::Request* r) { return LibDecodeWriteRequest(f, r); })}});
  dec.rows.push_back({"decode query reply vs msgpack::unpack into its object tree only (no conversion)", 1,
                      {[d] { wire::QueryReply q; Keep(wire::DecodeQuery(d->body, &q)); Keep(q); },
                       [d] { Keep(LibUnpackTree(d->body)); }}});
  dec.notes.push_back(
      "Both decoders fill the same `wire::Request` / `wire::QueryReply` with the same checks "
      "(bench/codecs/msgpack_lib.h) and both reject every truncation of the request (checked "
      "before timing).");
  dec.notes.push_back(
      "The last row times only msgpack::unpack building msgpack-cxx's object tree; a decoder "
      "through the tree would then convert it into our types, with the allocations our "
      "decoder makes, so the row bounds that path from below and decides nothing.");
  return {enc, dec};
}

}  // namespace sidetable::bench::codecs
