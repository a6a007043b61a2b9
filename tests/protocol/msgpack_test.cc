// The MessagePack writer's bytes at every encoding boundary, pinned: the
// wire format (docs/protocol.md) must not move whoever implements the
// writer (msgpack-cxx's packer since issue 11). Each value reads back.
#include "protocol/msgpack.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <string>

namespace sidetable::msgpack {
namespace {

std::string Hex(std::string_view bytes, size_t limit) {
  static const char* kHex = "0123456789abcdef";
  std::string out;
  for (size_t i = 0; i < bytes.size() && i < limit; i++) {
    if (i > 0) out += ' ';
    out += kHex[static_cast<uint8_t>(bytes[i]) >> 4];
    out += kHex[static_cast<uint8_t>(bytes[i]) & 15];
  }
  return out;
}

std::string Written(const std::function<void(Writer&)>& write) {
  std::string out;
  Writer w(&out);
  write(w);
  return out;
}

TEST(MsgpackWriter, IntegersTakeTheSmallestEncoding) {
  const std::pair<int64_t, const char*> kInts[] = {
      {0, "00"}, {127, "7f"}, {128, "cc 80"}, {255, "cc ff"}, {256, "cd 01 00"},
      {65535, "cd ff ff"}, {65536, "ce 00 01 00 00"}, {4294967295LL, "ce ff ff ff ff"},
      {4294967296LL, "cf 00 00 00 01 00 00 00 00"}, {INT64_MAX, "cf 7f ff ff ff ff ff ff ff"},
      {-1, "ff"}, {-32, "e0"}, {-33, "d0 df"}, {-128, "d0 80"}, {-129, "d1 ff 7f"},
      {-32768, "d1 80 00"}, {-32769, "d2 ff ff 7f ff"}, {INT32_MIN, "d2 80 00 00 00"},
      {INT32_MIN - 1LL, "d3 ff ff ff ff 7f ff ff ff"}, {INT64_MIN, "d3 80 00 00 00 00 00 00 00"}};
  for (const auto& [v, hex] : kInts) {
    const std::string bytes = Written([v = v](Writer& w) { w.Int(v); });
    EXPECT_EQ(Hex(bytes, 16), hex) << v;
    Reader r(bytes);
    int64_t back = 0;
    EXPECT_TRUE(r.Int(&back) && r.empty());
    EXPECT_EQ(back, v);
  }
  const std::string max = Written([](Writer& w) { w.Uint(UINT64_MAX); });
  EXPECT_EQ(Hex(max, 16), "cf ff ff ff ff ff ff ff ff");
  uint64_t u = 0;
  Reader r(max);
  EXPECT_TRUE(r.Uint(&u));
  EXPECT_EQ(u, UINT64_MAX);
}

// A Double is float64 even when it holds an integer, so it never reads back
// as an Int32 (msgpack-cxx's pack_double would write 2.0 as an integer).
TEST(MsgpackWriter, DoublesAreAlwaysFloat64) {
  const std::pair<double, const char*> kDoubles[] = {
      {2.0, "cb 40 00 00 00 00 00 00 00"}, {-0.0, "cb 80 00 00 00 00 00 00 00"},
      {0.0, "cb 00 00 00 00 00 00 00 00"}, {1.5, "cb 3f f8 00 00 00 00 00 00"}};
  for (const auto& [d, hex] : kDoubles) {
    const std::string bytes = Written([d = d](Writer& w) { w.Double(d); });
    EXPECT_EQ(Hex(bytes, 16), hex) << d;
    Reader r(bytes);
    EXPECT_EQ(r.Peek(), Kind::kDouble);
  }
  EXPECT_EQ(Hex(Written([](Writer& w) { w.Nil(); w.Bool(true); w.Bool(false); }), 16), "c0 c3 c2");
}

TEST(MsgpackWriter, LengthsTakeTheSmallestHeader) {
  struct Case {
    size_t n;
    const char* str;
    const char* bin;
  };
  const Case kCases[] = {{0, "a0", "c4 00"},           {31, "bf", "c4 1f"},
                         {32, "d9 20", "c4 20"},       {255, "d9 ff", "c4 ff"},
                         {256, "da 01 00", "c5 01 00"}, {65535, "da ff ff", "c5 ff ff"},
                         {65536, "db 00 01 00 00", "c6 00 01 00 00"}};
  for (const Case& c : kCases) {
    const std::string payload(c.n, 'x');
    const std::string str = Written([&](Writer& w) { w.Str(payload); });
    const std::string bin = Written([&](Writer& w) { w.Bin(payload); });
    const size_t str_header = str.size() - c.n, bin_header = bin.size() - c.n;
    EXPECT_EQ(Hex(str, str_header), c.str) << c.n;
    EXPECT_EQ(Hex(bin, bin_header), c.bin) << c.n;
    std::string_view s, b;
    Reader rs(str), rb(bin);
    EXPECT_TRUE(rs.Str(&s) && rs.empty() && s == payload) << c.n;
    EXPECT_TRUE(rb.Bin(&b) && rb.empty() && b == payload) << c.n;
  }
  const std::pair<uint32_t, const char*> kContainers[] = {
      {0, "90 80"}, {15, "9f 8f"}, {16, "dc 00 10 de 00 10"}, {65535, "dc ff ff de ff ff"},
      {65536, "dd 00 01 00 00 df 00 01 00 00"}};
  for (const auto& [n, hex] : kContainers) {
    const std::string bytes = Written([n = n](Writer& w) { w.ArrayHeader(n); w.MapHeader(n); });
    EXPECT_EQ(Hex(bytes, 16), hex) << n;
    uint32_t a = 0, m = 0;
    Reader r(bytes);
    EXPECT_TRUE(r.ArrayHeader(&a) && r.MapHeader(&m) && r.empty());
    EXPECT_EQ(a, n);
    EXPECT_EQ(m, n);
  }
}

TEST(MsgpackWriter, ExtUsesFixextForItsSizes) {
  const std::pair<size_t, const char*> kExts[] = {
      {1, "d4 07"}, {2, "d5 07"}, {4, "d6 07"}, {8, "d7 07"}, {16, "d8 07"}, {0, "c7 00 07"},
      {3, "c7 03 07"}, {17, "c7 11 07"}, {255, "c7 ff 07"}, {256, "c8 01 00 07"},
      {65536, "c9 00 01 00 00 07"}};
  for (const auto& [n, hex] : kExts) {
    const std::string payload(n, '\x5A');
    const std::string bytes = Written([&](Writer& w) { w.Ext(7, payload); });
    EXPECT_EQ(Hex(bytes, bytes.size() - n), hex) << n;
    int8_t type = 0;
    std::string_view data;
    Reader r(bytes);
    EXPECT_TRUE(r.Ext(&type, &data) && r.empty()) << n;
    EXPECT_EQ(type, 7);
    EXPECT_EQ(data, payload);
  }
}

}  // namespace
}  // namespace sidetable::msgpack
