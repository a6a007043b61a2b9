// gtest assertions that two sets of change records are the same, field by
// field, images included: for the tests that read the change log two ways
// (raw pages and MessagePack pages, the engine and the sidecar). Tests only.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "engine/change_record.h"

namespace sidetable::testing {

inline void ExpectSameRecords(const std::vector<ChangeRecord>& a, const std::vector<ChangeRecord>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); i++) {
    const ChangeRecord &x = a[i], &y = b[i];
    SCOPED_TRACE("LSN " + std::to_string(x.lsn));
    EXPECT_EQ(x.lsn, y.lsn);
    EXPECT_EQ(x.kind, y.kind);
    EXPECT_EQ(x.commit_time, y.commit_time);
    EXPECT_EQ(x.table, y.table);
    EXPECT_EQ(x.table_id, y.table_id);
    EXPECT_EQ(x.partition_key, y.partition_key);
    EXPECT_EQ(x.caller, y.caller);
    EXPECT_EQ(x.client_request_id, y.client_request_id);
    EXPECT_EQ(x.target_table, y.target_table);
    ASSERT_EQ(x.ops.size(), y.ops.size());
    for (size_t k = 0; k < x.ops.size(); k++) {
      const ChangeOp &p = x.ops[k], &q = y.ops[k];
      EXPECT_EQ(p.row_key, q.row_key);
      EXPECT_EQ(p.kind, q.kind);
      EXPECT_EQ(p.version, q.version);
      EXPECT_EQ(p.etag, q.etag);
      for (auto [e, f] : {std::pair{&p.before, &q.before}, std::pair{&p.after, &q.after}}) {
        ASSERT_EQ(e->has_value(), f->has_value());
        if (!e->has_value()) continue;
        EXPECT_EQ((*e)->partition_key, (*f)->partition_key);
        EXPECT_EQ((*e)->row_key, (*f)->row_key);
        EXPECT_EQ((*e)->timestamp, (*f)->timestamp);
        EXPECT_EQ((*e)->etag, (*f)->etag);
        EXPECT_EQ((*e)->properties, (*f)->properties);
      }
    }
  }
}

inline void ExpectSameChanges(const ChangeBatch& a, const ChangeBatch& b) {
  EXPECT_EQ(a.first_available_lsn, b.first_available_lsn);
  EXPECT_EQ(a.last_lsn, b.last_lsn);
  ExpectSameRecords(a.records, b.records);
}

}  // namespace sidetable::testing
