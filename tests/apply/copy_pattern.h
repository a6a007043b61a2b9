// CopyPattern: a test pattern that copies every written entity of "Src" into
// "Derived" under the same keys (deletes follow), optionally failing.
#pragma once

#include <string>
#include <vector>

#include "patterns/pattern.h"

namespace sidetable::apply::testing {

class CopyPattern : public patterns::Pattern {
 public:
  explicit CopyPattern(Status fail = Status::OK()) : fail_(std::move(fail)) {}
  const std::string& name() const override { return name_; }
  bool Wants(const ChangeRecord& r) const override { return r.table == "Src"; }
  std::vector<Derivation> Derivations() const override { return {{"Src", "Derived"}}; }
  Status Apply(const ChangeRecord& r, std::vector<patterns::TableOp>* out) const override {
    if (!fail_.ok()) return fail_;
    for (const auto& op : r.ops) {
      patterns::TableOp t;
      t.table = "Derived";
      t.version = op.version;
      if (op.after) {
        t.kind = patterns::TableOp::Kind::kFencedUpsert;
        t.entity = *op.after;
      } else {
        t.kind = patterns::TableOp::Kind::kFencedDelete;
        t.entity.partition_key = r.partition_key;
        t.entity.row_key = op.row_key;
      }
      out->push_back(std::move(t));
    }
    return Status::OK();
  }

 private:
  std::string name_ = "copy";
  Status fail_;
};

}  // namespace sidetable::apply::testing
