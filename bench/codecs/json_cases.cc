// JSON writing: events/json_writer.h (through
// events::EncodeEvent, as the publisher uses it) vs rapidjson's
// Writer<StringBuffer> writing the same document.
//
// rapidjson is given its best portable setting (SSE2 scanning of strings,
// baseline on x86-64) and a StringBuffer reused across events, with no copy
// out; ours allocates the event string per call, as the publisher does.
#define RAPIDJSON_SSE2
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <simdjson.h>

#include <charconv>
#include <cmath>
#include <memory>

#include "bench/codecs/cases.h"
#include "bench/codecs/json_escape_before.h"
#include "bench/codecs/shapes.h"
#include "bench/harness.h"
#include "events/event.h"
#include "events/base64.h"
#include "events/entity_json.h"
#include "events/json_writer.h"

namespace sidetable::bench::codecs {
namespace {

using RapidWriter = rapidjson::Writer<rapidjson::StringBuffer>;

void Str(RapidWriter& w, std::string_view s) {
  w.String(s.data(), static_cast<rapidjson::SizeType>(s.size()));
}
void Key(RapidWriter& w, std::string_view s) {
  w.Key(s.data(), static_cast<rapidjson::SizeType>(s.size()));
}

// The Edm value mapping of entity_json_write.cc, on rapidjson.
void RapidValue(RapidWriter& w, std::string_view key, const Value& v) {
  Key(w, key);
  switch (v.type()) {
    case EdmType::kString: Str(w, v.bytes()); break;
    case EdmType::kBoolean: w.Bool(v.as_bool()); break;
    case EdmType::kInt32: w.Int(v.as_int32()); break;
    case EdmType::kDouble:
      if (std::isfinite(v.as_double())) w.Double(v.as_double());
      else Str(w, std::isnan(v.as_double()) ? "NaN" : v.as_double() > 0 ? "Infinity" : "-Infinity");
      break;
    case EdmType::kInt64: {
      char buf[24];
      auto res = std::to_chars(buf, buf + sizeof buf, v.as_int64());
      Str(w, std::string_view(buf, static_cast<size_t>(res.ptr - buf)));
      break;
    }
    case EdmType::kDateTime: Str(w, FormatDateTime(v.as_ticks())); break;
    case EdmType::kGuid: Str(w, FormatGuid(v.as_guid())); break;
    case EdmType::kBinary: Str(w, json::Base64Encode(v.bytes())); break;
  }
  if (json::NeedsTypeAnnotation(v)) {
    std::string annotation(key);
    annotation += "@odata.type";
    Key(w, annotation);
    Str(w, EdmTypeName(v.type()));
  }
}

void RapidEntity(RapidWriter& w, const Entity& e) {
  w.StartObject();
  if (!e.etag.empty()) { Key(w, "odata.etag"); Str(w, e.etag); }
  Key(w, "PartitionKey"); Str(w, e.partition_key);
  Key(w, "RowKey"); Str(w, e.row_key);
  if (e.timestamp != 0) { Key(w, "Timestamp"); Str(w, FormatDateTime(e.timestamp)); }
  for (const auto& p : e.properties) RapidValue(w, p.name, p.value);
  w.EndObject();
}

// events::EncodeEvent's document (an Entities record).
void RapidEvent(RapidWriter& w, const ChangeRecord& r, std::string_view source) {
  w.StartObject();
  Key(w, "schema"); w.Int(events::kEventSchema);
  Key(w, "source"); Str(w, source);
  Key(w, "lsn"); w.Uint64(r.lsn);
  Key(w, "kind"); Str(w, ChangeKindName(r.kind));
  Key(w, "time"); Str(w, FormatDateTime(r.commit_time));
  Key(w, "table"); Str(w, r.table);
  Key(w, "tableId"); w.Uint(r.table_id);
  Key(w, "pk"); Str(w, r.partition_key);
  Key(w, "caller"); Str(w, r.caller);
  Key(w, "ops");
  w.StartArray();
  for (const auto& op : r.ops) {
    w.StartObject();
    Key(w, "rk"); Str(w, op.row_key);
    Key(w, "op"); Str(w, OpKindName(op.kind));
    Key(w, "version"); w.Uint64(op.version);
    Key(w, "etag"); Str(w, op.etag);
    if (op.before) { Key(w, "before"); RapidEntity(w, *op.before); }
    if (op.after) { Key(w, "after"); RapidEntity(w, *op.after); }
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
}

struct Rapid {
  rapidjson::StringBuffer buffer;
  RapidWriter writer{buffer};
  // Clears the buffer for the next document, keeping its memory.
  RapidWriter& Fresh() {
    buffer.Clear();
    writer.Reset(buffer);
    return writer;
  }
  std::string_view text() const { return {buffer.GetString(), buffer.GetSize()}; }
};

struct EventData {
  ChangeRecord record = SampleChangeRecord();
  std::string source = "orders-sidecar-1";
  Rapid rapid;
};

struct StringData {
  std::string s;
  std::string out;
  Rapid rapid;
};

std::string Repeat(std::string_view piece, size_t bytes) {
  std::string s;
  while (s.size() + piece.size() <= bytes) s += piece;
  return s;
}

}  // namespace

std::vector<Group> JsonGroups(const Sizes&) {
  const std::string version = RAPIDJSON_VERSION_STRING;
  Group ev;
  ev.title = "JSON change events: events/json_writer.h vs rapidjson " + version;
  ev.labels = {"ours", "rapidjson"};
  auto d = std::make_shared<EventData>();
  const std::string ours = events::EncodeEvent(d->record, d->source);
  RapidEvent(d->rapid.Fresh(), d->record, d->source);
  ev.rows.push_back({"change event (1 Merge, before + after, 12 props each, " +
                         std::to_string(ours.size()) + " B)", 1,
                     {[d] { Keep(events::EncodeEvent(d->record, d->source)); },
                      [d] { RapidEvent(d->rapid.Fresh(), d->record, d->source); Keep(d->rapid.buffer); }}});
  ev.notes.push_back(std::string("Same bytes: ") + (ours == d->rapid.text() ? "yes" : "no") +
                     " for this event. In general no: rapidjson writes doubles with its own "
                     "shortest-digits code (`1e21` where ours writes `1e+21`), escapes control "
                     "characters with upper-case hex and leaves DEL (0x7F) raw.");

  Group str;
  str.title = "JSON string escaping: json::AppendJsonString vs rapidjson " + version;
  str.labels = {"ours (now)", "byte at a time (before)", "rapidjson"};
  str.library = 2;
  struct Case { const char* name; std::string text; };
  const Case strings[] = {
      {"string 44 B with escapes and non-ASCII", "line one\nline \"two\"\ttabbed \\ path, 价格 €12"},
      {"string 1 KiB ASCII, no escapes", Repeat("ordinary text ", 1024)},
      {"string 1 KiB mixed scripts, a newline per 64 B", Repeat("Zürich 价格 naïve line of text, more text!\n", 1024)},
  };
  for (const Case& c : strings) {
    auto s = std::make_shared<StringData>();
    s->s = c.text;
    json::AppendJsonString(s->s, &s->out);
    std::string before;
    ByteAtATimeJsonString(s->s, &before);
    Str(s->rapid.Fresh(), s->s);
    if (s->out != before || s->out != s->rapid.text()) Die(std::string("json: escapes differ for ") + c.name);
    str.rows.push_back({c.name, 1,
                        {[s] { s->out.clear(); json::AppendJsonString(s->s, &s->out); Keep(s->out); },
                         [s] { s->out.clear(); ByteAtATimeJsonString(s->s, &s->out); Keep(s->out); },
                         [s] { Str(s->rapid.Fresh(), s->s); Keep(s->rapid.buffer); }}});
  }
  str.notes.push_back("The three write the same bytes for these strings (checked before timing).");

  // Reading the same event back, as the Kafka replay source and the workers
  // do: the whole decode into a ChangeRecord against simdjson's parse of
  // the document alone (stage 1 and 2, no walk, no allocation of ours),
  // the floor any decoder on simdjson's DOM starts from.
  Group dec;
  dec.title = "JSON change events, reading: events::EventDecoder vs simdjson's DOM parse alone";
  dec.labels = {"EventDecoder::Decode", "simdjson parse only", "Decode into a reused Event"};
  struct DecodeData {
    std::string text;
    events::EventDecoder decoder;
    simdjson::dom::parser parser;
    simdjson::padded_string padded;
    events::Event reused;
  };
  auto dd = std::make_shared<DecodeData>();
  dd->text = ours;
  dd->padded = simdjson::padded_string(dd->text);
  {
    events::Event back;
    if (!dd->decoder.Decode(dd->text, &back).ok() || back.record.lsn != d->record.lsn ||
        back.record.ops.size() != d->record.ops.size()) {
      Die("json: the event does not read back");
    }
  }
  dec.rows.push_back({"change event (1 Merge, before + after, 12 props each, " +
                          std::to_string(ours.size()) + " B)",
                      1,
                      {[dd] {
                         events::Event e;
                         if (!dd->decoder.Decode(dd->text, &e).ok()) Die("json: decode failed");
                         Keep(e.record.lsn);
                       },
                       [dd] {
                         simdjson::dom::element doc;
                         if (dd->parser.parse(dd->padded).get(doc) != simdjson::SUCCESS)
                           Die("json: parse failed");
                         Keep(doc.type());
                       },
                       [dd] {
                         // As the Kafka replay source decodes: into the
                         // storage of an event decoded before.
                         if (!dd->decoder.Decode(dd->text, &dd->reused).ok())
                           Die("json: decode failed");
                         Keep(dd->reused.record.lsn);
                       }}});
  dec.notes.push_back(
      "The decoder copies the text into its own padded buffer per event, as it must for "
      "a Kafka message; the parse-only contender parses an already padded copy. The reused "
      "Event keeps its strings, operations and images between calls, as the Kafka replay "
      "source's recycled records do.");
  return {ev, str, dec};
}

}  // namespace sidetable::bench::codecs
