// Table names compare case-insensitively, as in Azure Table storage
// ("Orders" and "orders" are one table), and keep the case they were created
// with for display. Valid names are ASCII letters and digits
// (engine/limits.h), so case folding is ASCII: other bytes are kept as they
// are and never equal a letter.
//
// TableKey is the one canonical form: use it (or TableNameEquals) wherever a
// table name is a key, compared, hashed or written into a continuation, so
// every part folds case the same way.
//
// Thread safety: value type and pure functions.
#pragma once

#include <compare>
#include <string>
#include <string_view>

namespace sidetable {

class TableKey {
 public:
  TableKey() = default;
  explicit TableKey(std::string_view name);

  // The lower-case form, e.g. for a map key or a continuation token.
  const std::string& str() const { return key_; }

  friend bool operator==(const TableKey&, const TableKey&) = default;
  friend std::strong_ordering operator<=>(const TableKey&, const TableKey&) = default;

 private:
  std::string key_;
};

// TableKey(a) == TableKey(b), without allocating.
bool TableNameEquals(std::string_view a, std::string_view b);
// Appends TableKey(name).str() to *out (hot paths that build composite keys).
void AppendTableKey(std::string_view name, std::string* out);

}  // namespace sidetable
