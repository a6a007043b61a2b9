#include "engine/table_name.h"

namespace sidetable {
namespace {

char Fold(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

}  // namespace

TableKey::TableKey(std::string_view name) { AppendTableKey(name, &key_); }

bool TableNameEquals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); i++) {
    if (Fold(a[i]) != Fold(b[i])) return false;
  }
  return true;
}

void AppendTableKey(std::string_view name, std::string* out) {
  out->reserve(out->size() + name.size());
  for (char c : name) out->push_back(Fold(c));
}

}  // namespace sidetable
