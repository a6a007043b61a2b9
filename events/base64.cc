#include "events/base64.h"

#include <array>

namespace sidetable::json {
namespace {

constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

constexpr std::array<int8_t, 256> MakeDecodeTable() {
  std::array<int8_t, 256> t{};
  for (auto& v : t) v = -1;
  for (int i = 0; i < 64; i++) t[static_cast<unsigned char>(kAlphabet[i])] = static_cast<int8_t>(i);
  return t;
}
constexpr auto kDecode = MakeDecodeTable();

}  // namespace

// Both directions size their output once and write through a pointer:
// appending a character at a time (std::string's capacity check and
// terminator per byte) cost about half of a decode of the typical binary
// property (codec_bench, change events).
std::string Base64Encode(std::string_view bytes) {
  std::string out((bytes.size() + 2) / 3 * 4, '\0');
  char* o = out.data();
  const auto* in = reinterpret_cast<const unsigned char*>(bytes.data());
  size_t i = 0;
  for (; i + 3 <= bytes.size(); i += 3) {
    const uint32_t v = (uint32_t{in[i]} << 16) | (uint32_t{in[i + 1]} << 8) | in[i + 2];
    *o++ = kAlphabet[v >> 18];
    *o++ = kAlphabet[(v >> 12) & 63];
    *o++ = kAlphabet[(v >> 6) & 63];
    *o++ = kAlphabet[v & 63];
  }
  const size_t rest = bytes.size() - i;
  if (rest > 0) {
    const uint32_t v = (uint32_t{in[i]} << 16) | (rest == 2 ? uint32_t{in[i + 1]} << 8 : 0);
    *o++ = kAlphabet[v >> 18];
    *o++ = kAlphabet[(v >> 12) & 63];
    *o++ = rest == 2 ? kAlphabet[(v >> 6) & 63] : '=';
    *o++ = '=';
  }
  return out;
}

std::optional<std::string> Base64Decode(std::string_view text) {
  if (text.size() % 4 != 0) return std::nullopt;
  if (text.empty()) return std::string();
  // Padding only at the very end: "x===" and "=" anywhere else fail below,
  // as characters outside the alphabet.
  const size_t n = text.size();
  const int pad = text[n - 1] != '=' ? 0 : (text[n - 2] == '=' ? 2 : 1);
  std::string out(n / 4 * 3 - static_cast<size_t>(pad), '\0');
  char* o = out.data();
  const auto* in = reinterpret_cast<const unsigned char*>(text.data());
  const size_t full = pad == 0 ? n : n - 4;  // quads without padding
  for (size_t i = 0; i < full; i += 4) {
    const int32_t a = kDecode[in[i]], b = kDecode[in[i + 1]], c = kDecode[in[i + 2]],
                  d = kDecode[in[i + 3]];
    if ((a | b | c | d) < 0) return std::nullopt;  // any of them -1
    const uint32_t v = (uint32_t(a) << 18) | (uint32_t(b) << 12) | (uint32_t(c) << 6) | uint32_t(d);
    *o++ = static_cast<char>(v >> 16);
    *o++ = static_cast<char>((v >> 8) & 255);
    *o++ = static_cast<char>(v & 255);
  }
  if (pad > 0) {
    const size_t i = n - 4;
    const int32_t a = kDecode[in[i]], b = kDecode[in[i + 1]], c = pad == 1 ? kDecode[in[i + 2]] : 0;
    if ((a | b | c) < 0) return std::nullopt;
    const uint32_t v = (uint32_t(a) << 18) | (uint32_t(b) << 12) | (uint32_t(c) << 6);
    // The bits the padding leaves unused must be zero (one text per value).
    if ((pad == 1 && (v & 0xff) != 0) || (pad == 2 && (v & 0xffff) != 0)) return std::nullopt;
    *o++ = static_cast<char>(v >> 16);
    if (pad == 1) *o++ = static_cast<char>((v >> 8) & 255);
  }
  return out;
}

}  // namespace sidetable::json
