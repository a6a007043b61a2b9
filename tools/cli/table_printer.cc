#include "tools/cli/table_printer.h"

#include <algorithm>
#include <cmath>

#include "events/base64.h"
#include "events/json_writer.h"

namespace sidetable::cli {

using namespace ::sidetable::json;  // the JSON entity format (events/)
namespace {

// Control characters would break the layout, and some are terminal
// commands: write them as escapes. The C1 controls U+0080..U+009F too (in
// UTF-8 0xC2 0x80..0x9F): U+009B is a one-character CSI that terminals
// reading C1 controls obey, and they went through as they were.
std::string Printable(const std::string& s) {
  static const char* kHex = "0123456789abcdef";
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c < 0x20 || c == 0x7f) {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    } else if (c == 0xC2 && i + 1 < s.size() && static_cast<unsigned char>(s[i + 1]) >= 0x80 &&
               static_cast<unsigned char>(s[i + 1]) <= 0x9F) {
      const auto c1 = static_cast<unsigned char>(s[++i]);  // a continuation byte: 0x80..0x9F
      out += "\\u00";
      out += kHex[c1 >> 4];
      out += kHex[c1 & 15];
    } else {
      out += s[i];
    }
  }
  return out;
}

size_t Width(const std::string& s) {
  return static_cast<size_t>(std::count_if(s.begin(), s.end(), [](char c) {
    return (static_cast<unsigned char>(c) & 0xC0) != 0x80;  // not a continuation byte
  }));
}

}  // namespace

std::string CellText(const Value& v) {
  switch (v.type()) {
    case EdmType::kString: return Printable(v.bytes());
    case EdmType::kBinary: return Base64Encode(v.bytes());
    case EdmType::kDouble: {
      const double d = v.as_double();
      if (std::isnan(d)) return "NaN";
      if (std::isinf(d)) return d > 0 ? "Infinity" : "-Infinity";
      return FormatDouble(d);
    }
    default: return v.ToString();
  }
}

void TablePrinter::Add(const Entity& e) {
  std::vector<std::string> row(columns_.size());
  row[0] = Printable(e.partition_key);
  row[1] = Printable(e.row_key);
  for (const auto& p : e.properties) {
    auto it = std::find(columns_.begin(), columns_.end(), p.name);
    size_t col = static_cast<size_t>(it - columns_.begin());
    if (it == columns_.end()) {
      columns_.push_back(p.name);
      row.resize(columns_.size());
    }
    row[col] = CellText(p.value);
  }
  rows_.push_back(std::move(row));
}

std::string TablePrinter::Render() const {
  std::vector<size_t> width(columns_.size());
  for (size_t c = 0; c < columns_.size(); c++) width[c] = Width(Printable(columns_[c]));
  for (const auto& row : rows_) {
    for (size_t c = 0; c < row.size(); c++) width[c] = std::max(width[c], Width(row[c]));
  }
  std::string out;
  auto line = [&](auto cell) {
    std::string l;
    for (size_t c = 0; c < columns_.size(); c++) {
      std::string text = cell(c);
      l += text;
      if (c + 1 < columns_.size()) l.append(width[c] - Width(text) + 2, ' ');
    }
    while (!l.empty() && l.back() == ' ') l.pop_back();
    out += l;
    out += '\n';
  };
  line([&](size_t c) { return Printable(columns_[c]); });
  line([&](size_t c) { return std::string(width[c], '-'); });
  for (const auto& row : rows_) line([&](size_t c) { return c < row.size() ? row[c] : std::string(); });
  return out;
}

}  // namespace sidetable::cli
