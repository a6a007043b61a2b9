// TablePrinter: entities as an aligned text table, for people.
//
// Columns are PartitionKey, RowKey, then the union of the property names in
// the order first seen. Cells show values as text (Binary as base64,
// DateTime as ISO 8601, control characters escaped); a missing property is
// an empty cell. Widths count UTF-8 code points. Timestamp and ETag are left
// out: use the JSON output for them.
//
// Thread safety: a value; use from one thread.
#pragma once

#include <string>
#include <vector>

#include "engine/edm.h"

namespace sidetable::cli {


class TablePrinter {
 public:
  void Add(const Entity& e);
  // Header, a rule of dashes, one line per entity; columns two blanks apart.
  std::string Render() const;

 private:
  std::vector<std::string> columns_ = {"PartitionKey", "RowKey"};
  std::vector<std::vector<std::string>> rows_;  // cells by column index
};

// The text of one value in a cell.
std::string CellText(const Value& v);

}  // namespace sidetable::cli
