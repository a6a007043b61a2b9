// Base64: events/base64.h vs libsodium's sodium_bin2base64 /
// sodium_base642bin (standard alphabet with padding).
#include <sodium.h>

#include <memory>
#include <optional>

#include "bench/codecs/cases.h"
#include "bench/harness.h"
#include "events/base64.h"

namespace sidetable::bench::codecs {
namespace {

constexpr int kVariant = sodium_base64_VARIANT_ORIGINAL;

std::string SodiumEncode(std::string_view bytes) {
  std::string out(sodium_base64_ENCODED_LEN(bytes.size(), kVariant), '\0');
  sodium_bin2base64(out.data(), out.size(), reinterpret_cast<const unsigned char*>(bytes.data()),
                    bytes.size(), kVariant);
  out.pop_back();  // the terminating NUL it writes
  return out;
}

// No ignored characters and no end pointer: the whole text must decode.
std::optional<std::string> SodiumDecode(std::string_view text) {
  std::string out(text.size() / 4 * 3 + 3, '\0');
  size_t len = 0;
  if (sodium_base642bin(reinterpret_cast<unsigned char*>(out.data()), out.size(), text.data(),
                        text.size(), nullptr, &len, nullptr, kVariant) != 0) {
    return std::nullopt;
  }
  out.resize(len);
  return out;
}

std::string Bytes(size_t n) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; i++) s[i] = static_cast<char>(i * 131 + 7);
  return s;
}

struct Data {
  std::string bytes, text;
};

}  // namespace

Group Base64Group(const Sizes&) {
  // Same text out, and the same verdict on the edges json/base64.h pins
  // (tests/tools/entity_json_test.cc).
  const char* edges[] = {"", "Zg==", "Zg=", "Zg", "Z===", "Zh==", "Zm9=", "Zm8=", "Zg==Zg==",
                         "Zm9v\n", " Zm9v", "Zm 9v", "Zm9v====", "====", "Zm-_", "Zm9vYg=="};
  for (const char* e : edges) {
    if (json::Base64Decode(e) != SodiumDecode(e)) Die(std::string("base64: verdicts differ on '") + e + "'");
  }
  Group g;
  g.title = std::string("Base64: events/base64.h vs libsodium ") + sodium_version_string();
  g.labels = {"ours", "libsodium"};
  for (size_t n : {16, 32, 1024, 64 * 1024}) {
    auto d = std::make_shared<Data>();
    d->bytes = Bytes(n);
    d->text = json::Base64Encode(d->bytes);
    if (SodiumEncode(d->bytes) != d->text || SodiumDecode(d->text) != d->bytes) Die("base64: outputs differ");
    const std::string size = n < 1024 ? std::to_string(n) + " B" : std::to_string(n / 1024) + " KiB";
    g.rows.push_back({"encode " + size, 1,
                      {[d] { Keep(json::Base64Encode(d->bytes)); }, [d] { Keep(SodiumEncode(d->bytes)); }}});
    g.rows.push_back({"decode " + size, 1,
                      {[d] { Keep(json::Base64Decode(d->text)); }, [d] { Keep(SodiumDecode(d->text)); }}});
  }
  g.notes.push_back(
      "libsodium's codec is constant-time (it never branches or indexes on the data, because it "
      "is meant for secrets). Both agree on output and on every rejection in the edge list "
      "(bad characters, blanks, missing or extra padding, non-zero unused bits).");
  return g;
}

}  // namespace sidetable::bench::codecs
