#include "engine/edm.h"

#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>

namespace sidetable {
namespace {

constexpr std::string_view kTypeNames[] = {
    "", "Edm.String", "Edm.Binary", "Edm.Boolean", "Edm.DateTime",
    "Edm.Double", "Edm.Guid", "Edm.Int32", "Edm.Int64"};

// Days from 0001-01-01 to year-month-day in the proleptic Gregorian calendar.
int64_t DaysFromCivil(int64_t y, unsigned m, unsigned d) {
  // Howard Hinnant's days_from_civil, shifted to the 0001-01-01 epoch.
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const unsigned yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  const int64_t days_since_unix = era * 146097 + static_cast<int64_t>(doe) - 719468;
  return days_since_unix + 719162;  // 0001-01-01 is 719162 days before 1970
}

void CivilFromDays(int64_t days_since_0001, int64_t* y, unsigned* m, unsigned* d) {
  int64_t z = days_since_0001 - 719162 + 719468;
  const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const unsigned doe = static_cast<unsigned>(z - era * 146097);
  const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const unsigned mp = (5 * doy + 2) / 153;
  *d = doy - (153 * mp + 2) / 5 + 1;
  *m = mp < 10 ? mp + 3 : mp - 9;
  *y = static_cast<int64_t>(yoe) + era * 400 + (*m <= 2);
}

bool Digits(std::string_view s, size_t pos, size_t n, int64_t* out) {
  if (pos + n > s.size()) return false;
  int64_t v = 0;
  for (size_t i = pos; i < pos + n; i++) {
    if (s[i] < '0' || s[i] > '9') return false;
    v = v * 10 + (s[i] - '0');
  }
  *out = v;
  return true;
}

constexpr std::array<int8_t, 256> MakeHexTable() {
  std::array<int8_t, 256> t{};
  for (auto& v : t) v = -1;
  for (int i = 0; i < 10; i++) t['0' + i] = static_cast<int8_t>(i);
  for (int i = 0; i < 6; i++) {
    t['a' + i] = static_cast<int8_t>(10 + i);
    t['A' + i] = static_cast<int8_t>(10 + i);
  }
  return t;
}
constexpr auto kHexValue = MakeHexTable();

// The value of a hex digit, or -1.
int HexDigit(char c) { return kHexValue[static_cast<unsigned char>(c)]; }

}  // namespace

std::string_view EdmTypeName(EdmType type) {
  auto i = static_cast<size_t>(type);
  return i < std::size(kTypeNames) ? kTypeNames[i] : "";
}

std::optional<EdmType> ParseEdmType(std::string_view name) {
  if (name.substr(0, 4) == "Edm.") name.remove_prefix(4);
  for (size_t i = 1; i < std::size(kTypeNames); i++) {
    if (kTypeNames[i].substr(4) == name) return static_cast<EdmType>(i);
  }
  return std::nullopt;
}

Guid Value::as_guid() const {
  Guid g{};
  if (bytes_.size() == g.size()) std::memcpy(g.data(), bytes_.data(), g.size());
  return g;
}

bool Value::operator==(const Value& o) const {
  if (type_ != o.type_) return false;
  switch (type_) {
    case EdmType::kString:
    case EdmType::kBinary:
    case EdmType::kGuid:
      return bytes_ == o.bytes_;
    case EdmType::kDouble:
      return std::memcmp(&double_, &o.double_, sizeof(double)) == 0;
    default:
      return int_ == o.int_;
  }
}

std::string Value::ToString() const {
  switch (type_) {
    case EdmType::kString:
      return bytes_;
    case EdmType::kBinary: {
      static const char* kHex = "0123456789ABCDEF";
      std::string out = "X'";
      for (unsigned char c : bytes_) {
        out += kHex[c >> 4];
        out += kHex[c & 15];
      }
      return out + "'";
    }
    case EdmType::kBoolean:
      return int_ ? "true" : "false";
    case EdmType::kDateTime:
      return FormatDateTime(int_);
    case EdmType::kDouble: {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.17g", double_);
      return buf;
    }
    case EdmType::kGuid:
      return FormatGuid(as_guid());
    case EdmType::kInt32:
    case EdmType::kInt64:
      return std::to_string(int_);
  }
  return {};
}

const Value* Entity::Find(std::string_view name) const {
  for (const auto& p : properties) {
    if (p.name == name) return &p.value;
  }
  return nullptr;
}

Entity& Entity::Set(std::string name, Value value) {
  for (auto& p : properties) {
    if (p.name == name) {
      p.value = std::move(value);
      return *this;
    }
  }
  properties.push_back({std::move(name), std::move(value)});
  return *this;
}

bool Entity::Remove(std::string_view name) {
  for (auto it = properties.begin(); it != properties.end(); ++it) {
    if (it->name == name) {
      properties.erase(it);
      return true;
    }
  }
  return false;
}

std::optional<int64_t> ParseDateTime(std::string_view s) {
  // YYYY-MM-DDTHH:MM[:SS[.fffffff]](Z|+00:00|-00:00)
  int64_t y, mo, d, h, mi, sec = 0, frac = 0;
  if (!Digits(s, 0, 4, &y) || s.size() < 16 || s[4] != '-' || !Digits(s, 5, 2, &mo) ||
      s[7] != '-' || !Digits(s, 8, 2, &d) || (s[10] != 'T' && s[10] != 't') ||
      !Digits(s, 11, 2, &h) || s[13] != ':' || !Digits(s, 14, 2, &mi)) {
    return std::nullopt;
  }
  size_t pos = 16;
  if (pos < s.size() && s[pos] == ':') {
    if (!Digits(s, pos + 1, 2, &sec)) return std::nullopt;
    pos += 3;
    if (pos < s.size() && s[pos] == '.') {
      pos++;
      size_t n = 0;
      while (pos < s.size() && s[pos] >= '0' && s[pos] <= '9') {
        if (n < 7) frac = frac * 10 + (s[pos] - '0');
        else if (s[pos] != '0') return std::nullopt;  // finer than 100 ns
        n++;
        pos++;
      }
      if (n == 0) return std::nullopt;
      for (size_t k = n; k < 7; k++) frac *= 10;
    }
  }
  std::string_view zone = s.substr(pos);
  if (zone != "Z" && zone != "z" && zone != "+00:00" && zone != "-00:00") return std::nullopt;
  if (y < 1 || mo < 1 || mo > 12 || d < 1 || h > 23 || mi > 59 || sec > 59) return std::nullopt;
  static const int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
  if (d > kDays[mo - 1] + (mo == 2 && leap ? 1 : 0)) return std::nullopt;
  int64_t days = DaysFromCivil(y, static_cast<unsigned>(mo), static_cast<unsigned>(d));
  return ((days * 24 + h) * 60 + mi) * 60 * kTicksPerSecond + sec * kTicksPerSecond + frac;
}

std::string FormatDateTime(int64_t ticks) {
  if (ticks < 0) ticks = 0;
  int64_t days = ticks / (86400 * kTicksPerSecond);
  int64_t rem = ticks % (86400 * kTicksPerSecond);
  int64_t y;
  unsigned m, d;
  CivilFromDays(days, &y, &m, &d);
  int64_t secs = rem / kTicksPerSecond;
  int64_t frac = rem % kTicksPerSecond;
  if (y > 9999) {  // beyond Azure's range: no fixed width
    char buf[48];
    std::snprintf(buf, sizeof buf, "%lld-%02u-%02uT%02lld:%02lld:%02lld.%07lldZ", static_cast<long long>(y), m, d,
                  static_cast<long long>(secs / 3600), static_cast<long long>(secs / 60 % 60),
                  static_cast<long long>(secs % 60), static_cast<long long>(frac));
    return buf;
  }
  // Digits by hand: this runs for every change record an audit or replay
  // writes, and snprintf was a visible share of that.
  std::string out = "0000-00-00T00:00:00.0000000Z";
  auto put = [&](size_t end, int64_t v, int width) {
    for (int i = 0; i < width; i++, v /= 10) out[end - i] = static_cast<char>('0' + v % 10);
  };
  put(3, y, 4);
  put(6, m, 2);
  put(9, d, 2);
  put(12, secs / 3600, 2);
  put(15, secs / 60 % 60, 2);
  put(18, secs % 60, 2);
  put(26, frac, 7);
  return out;
}

int64_t NowTicks() {
  auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                std::chrono::system_clock::now().time_since_epoch())
                .count();
  return kUnixEpochTicks + ns / 100;
}

std::optional<Guid> ParseGuid(std::string_view s) {
  // Where each byte's two hex digits start in 8-4-4-4-12 (a fixed layout,
  // read without a branch per character: this runs for every Edm.Guid of
  // every change event a worker or replay reads).
  static constexpr uint8_t kAt[16] = {0, 2, 4, 6, 9, 11, 14, 16, 19, 21, 24, 26, 28, 30, 32, 34};
  if (s.size() != 36 || s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-')
    return std::nullopt;
  Guid g{};
  int bad = 0;
  for (size_t i = 0; i < 16; i++) {
    const int hi = HexDigit(s[kAt[i]]), lo = HexDigit(s[kAt[i] + 1]);
    bad |= hi | lo;  // negative if either is not a hex digit
    g[i] = static_cast<uint8_t>(hi << 4 | lo);
  }
  if (bad < 0) return std::nullopt;
  return g;
}

std::string FormatGuid(const Guid& g) {
  static const char* kHex = "0123456789abcdef";
  std::string out;
  out.reserve(36);
  for (size_t i = 0; i < g.size(); i++) {
    if (i == 4 || i == 6 || i == 8 || i == 10) out += '-';
    out += kHex[g[i] >> 4];
    out += kHex[g[i] & 15];
  }
  return out;
}

}  // namespace sidetable
