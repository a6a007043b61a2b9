// JsonWriter: a small writer for the CLI's JSON output.
//
// Appends compact JSON (no blanks) to a string. Strings are escaped per RFC
// 8259: `"` `\` and control characters, and also, as \uXXXX, the characters
// a terminal or an editor acts on instead of showing (C1 controls, U+2028,
// U+2029, bidirectional controls: json_writer.cc); other bytes, including
// UTF-8 sequences, are copied as they are (the engine stores valid UTF-8
// only).
// Commas are placed by the writer; the caller pairs Begin/End and puts a
// Key() before each value inside an object.
//
// Thread safety: a value; use from one thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace sidetable::json {

class JsonWriter {
 public:
  JsonWriter& BeginObject();
  JsonWriter& EndObject();
  JsonWriter& BeginArray();
  JsonWriter& EndArray();
  JsonWriter& Key(std::string_view key);
  JsonWriter& String(std::string_view s);
  JsonWriter& Int(int64_t v);
  JsonWriter& UInt(uint64_t v);
  JsonWriter& Bool(bool b);
  JsonWriter& Null();
  // A finite double in the shortest text that reads back to the same value,
  // always with a '.' or an exponent so a reader sees a Double, not an integer.
  JsonWriter& Double(double d);

  const std::string& str() const { return out_; }
  std::string Take() { return std::move(out_); }

 private:
  void Separate();  // writes the comma before a value or key when needed
  std::string out_;
  std::vector<bool> first_;  // per open container: nothing written yet
  bool after_key_ = false;
};

// Appends `s` as a quoted JSON string.
void AppendJsonString(std::string_view s, std::string* out);
// The text JsonWriter::Double() writes (finite values only).
std::string FormatDouble(double d);

}  // namespace sidetable::json
