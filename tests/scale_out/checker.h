// Checker: what every member of the cluster must show after the workload,
// given the Ledger (ledger.h). Reading (ReadView) and judging (Check) are
// apart, so the checker's own test can feed it a corrupted ledger.
//
// The rule for one key, whose writes (one writer, in send order) are
// w_1..w_n, and a = the last acknowledged one (0 when none; "w_0" is the
// initial state, absent):
//
//   the state read must be the state after w_a, or after some w_u with
//   u > a whose outcome is unknown.
//
// Why these and only these: a write is sent only once the previous one's
// outcome is final, and a write of unknown outcome that is applied at all
// is applied before the next write of its key (the same partition, the
// same owner's queue; after a hand-over, a late record of an old owner is
// fenced, docs/scale-out.md "The claim"). So w_a, acknowledged, is applied
// after every earlier write; only unknown writes after it may cover it.
// Refused writes are never applied (and are wrong answers in themselves:
// the workload sends only writes that must succeed). A put shows which
// write it is by its tag W; its N and C must be that write's, and when
// that write was acknowledged, the ETag must be the acknowledged one. An
// absent entity is the state after a delete or the initial state.
//
// Across members: every member reads the same thing for every key
// (properties, ETag, Timestamp): one logical store.
//
// EGTs are all-or-nothing: if any row shows a put of EGT E, every row of E
// must show E or a later write of that row (never an earlier one).
//
// Queries: a query without PartitionKey through each member, in pages of
// `page` with continuations, returns exactly the entities the point reads
// found there, in key order (PartitionKey, then RowKey), nothing twice.
#pragma once

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "client/client.h"
#include "tests/scale_out/ledger.h"

namespace sidetable::scale_out {

struct MemberView {
  std::string member;
  std::map<EntityKey, std::optional<Entity>> gets;  // nullopt: ResourceNotFound
  std::map<std::string, std::vector<Entity>> queries;  // per table, as the pages came
  std::vector<std::string> errors;                  // reads that failed
};

// Reads every key and queries every table through `client` (which may retry
// ServerBusy itself: a busy answer is not a wrong one).
inline MemberView ReadView(client::Client& client, const std::string& member, const std::vector<EntityKey>& keys,
                           const std::vector<std::string>& tables, int page = 7) {
  MemberView v;
  v.member = member;
  for (const EntityKey& k : keys) {
    auto r = client.Get(k.table, k.pk, k.rk);
    if (r.ok()) {
      v.gets[k] = *r;
    } else if (r.status().code() == Code::kResourceNotFound) {
      v.gets[k] = std::nullopt;
    } else {
      v.errors.push_back(member + ": Get " + k.ToString() + ": " + r.status().ToString());
    }
  }
  for (const std::string& t : tables) {
    client::QueryOptions q;
    q.table = t;
    q.top = page;
    std::optional<client::Continuation> next;
    for (int pages = 0; pages < 10000; pages++) {
      auto p = client.QueryPage(q, next);
      if (!p.ok()) {
        v.errors.push_back(member + ": query " + t + " page " + std::to_string(pages) + ": " + p.status().ToString());
        break;
      }
      if (static_cast<int>(p->entities.size()) > page) {
        v.errors.push_back(member + ": query " + t + " page of " + std::to_string(p->entities.size()) + " > $top");
      }
      for (auto& e : p->entities) v.queries[t].push_back(std::move(e));
      if (!p->next) break;
      next = p->next;
    }
  }
  return v;
}

namespace internal {

inline std::string Describe(const std::optional<Entity>& e) {
  if (!e) return "absent";
  std::string s = "{etag " + e->etag;
  for (const auto& p : e->properties) s += ", " + p.name + "=" + p.value.ToString();
  return s + "}";
}

inline std::string PropertyText(const Entity& e, const char* name) {
  const Value* v = e.Find(name);
  return v ? v->ToString() : "<none>";
}

inline bool HasTag(const Entity& e, const std::string& tag) {
  const Value* v = e.Find("W");
  return v != nullptr && *v == Value::String(tag);
}

inline bool SameEntity(const std::optional<Entity>& a, const std::optional<Entity>& b) {
  if (a.has_value() != b.has_value()) return false;
  if (!a) return true;
  if (a->etag != b->etag || a->timestamp != b->timestamp) return false;
  std::map<std::string, Value> pa, pb;
  for (const auto& p : a->properties) pa[p.name] = p.value;
  for (const auto& p : b->properties) pb[p.name] = p.value;
  return pa == pb;
}

}  // namespace internal

// Every violation found, one line each; empty when the views are right.
inline std::vector<std::string> Check(const LedgerSnapshot& ledger, const std::vector<MemberView>& views,
                                      const std::vector<EntityKey>& universe) {
  using internal::Describe;
  std::vector<std::string> bad;
  for (size_t wi = 0; wi < ledger.writes.size(); wi++) {
    const WriteRecord& w = ledger.writes[wi];
    if (w.outcome == Outcome::kRefused) {
      bad.push_back("wrong answer: " + w.request_id + " (" + w.ops[0].kind + " " + w.ops[0].key.ToString() +
                    (w.ops.size() > 1 ? " in an EGT of " + std::to_string(w.ops.size()) : "") + ") refused: " + w.error);
    }
    if (w.outcome == Outcome::kAcked && w.etags.size() != w.ops.size()) {
      bad.push_back("acknowledged " + w.request_id + " with " + std::to_string(w.etags.size()) + " ETags for " +
                    std::to_string(w.ops.size()) + " operations");
    }
  }
  for (const MemberView& v : views) bad.insert(bad.end(), v.errors.begin(), v.errors.end());

  // Position of each key's write in its history: history index + 1 (0 is
  // the initial state).
  auto history_of = [&](const EntityKey& k) -> const std::vector<HistoryEntry>& {
    static const std::vector<HistoryEntry> kNone;
    auto it = ledger.history.find(k);
    return it == ledger.history.end() ? kNone : it->second;
  };
  // Positions (1-based) the observed state can be: a put names exactly one;
  // absence is any delete or the initial state.
  auto positions = [&](const EntityKey& k, const std::optional<Entity>& seen, std::string* unknown_tag) {
    std::vector<size_t> out;
    const auto& h = history_of(k);
    if (!seen) {
      out.push_back(0);
      for (size_t i = 0; i < h.size(); i++)
        if (ledger.writes[h[i].write].ops[h[i].op].is_delete) out.push_back(i + 1);
      return out;
    }
    for (size_t i = 0; i < h.size(); i++) {
      const OpRecord& op = ledger.writes[h[i].write].ops[h[i].op];
      if (!op.is_delete && internal::HasTag(*seen, op.tag)) out.push_back(i + 1);
    }
    if (out.empty()) *unknown_tag = internal::PropertyText(*seen, "W");
    return out;
  };

  for (const EntityKey& k : universe) {
    const auto& h = history_of(k);
    size_t last_ack = 0;
    for (size_t i = 0; i < h.size(); i++)
      if (ledger.writes[h[i].write].outcome == Outcome::kAcked) last_ack = i + 1;
    const std::optional<Entity>* first = nullptr;
    std::string first_member;
    for (const MemberView& v : views) {
      auto it = v.gets.find(k);
      if (it == v.gets.end()) continue;  // its read failed: reported above
      const std::optional<Entity>& seen = it->second;
      if (first == nullptr) {
        first = &seen;
        first_member = v.member;
      } else if (!internal::SameEntity(*first, seen)) {
        bad.push_back("members disagree on " + k.ToString() + ": " + first_member + " reads " + Describe(*first) +
                      ", " + v.member + " reads " + Describe(seen));
      }
      std::string stray;
      const std::vector<size_t> pos = positions(k, seen, &stray);
      if (!stray.empty()) {
        bad.push_back(v.member + " reads " + k.ToString() + " written by " + stray + ", a write never sent to it: " +
                      Describe(seen));
        continue;
      }
      // Admissible: last_ack, or any unknown write after it.
      bool ok = false;
      for (size_t p : pos) {
        if (p < last_ack) continue;
        if (p > last_ack && ledger.writes[h[p - 1].write].outcome != Outcome::kUnknown) continue;
        if (seen && p > 0) {
          const WriteRecord& w = ledger.writes[h[p - 1].write];
          const OpRecord& op = w.ops[h[p - 1].op];
          const Value* n = seen->Find("N");
          const Value* c = seen->Find("C");
          if (n == nullptr || *n != Value::Int64(op.n) || c == nullptr || *c != Value::String(op.color)) {
            bad.push_back(v.member + " reads " + k.ToString() + " with the tag of " + op.tag +
                          " but not its content: " + Describe(seen));
          }
          if (w.outcome == Outcome::kAcked && h[p - 1].op < w.etags.size() && w.etags[h[p - 1].op] != seen->etag) {
            bad.push_back(v.member + " reads " + k.ToString() + " at acknowledged " + op.tag + " with ETag " +
                          seen->etag + ", acknowledged as " + w.etags[h[p - 1].op]);
          }
        }
        ok = true;
        break;
      }
      if (!ok) {
        std::string expect = last_ack == 0 ? "absent (nothing acknowledged)" : "";
        if (last_ack > 0) {
          const WriteRecord& w = ledger.writes[h[last_ack - 1].write];
          const OpRecord& op = w.ops[h[last_ack - 1].op];
          const size_t oi = h[last_ack - 1].op;
          expect = op.is_delete ? "absent (acknowledged delete " + w.request_id + ")"
                                : op.tag + " (acknowledged, ETag " + (oi < w.etags.size() ? w.etags[oi] : "?") + ")";
        }
        bad.push_back(v.member + " reads " + k.ToString() + " as " + Describe(seen) + "; expected " + expect +
                      " or a later unknown write (" + std::to_string(h.size() - last_ack) + " writes after it)");
      }
    }
  }

  // EGTs: all or nothing.
  for (size_t wi = 0; wi < ledger.writes.size(); wi++) {
    const WriteRecord& w = ledger.writes[wi];
    if (w.ops.size() < 2 || w.outcome == Outcome::kRefused) continue;
    for (const MemberView& v : views) {
      auto index_in_history = [&](const OpRecord& op) -> size_t {
        const auto& h = history_of(op.key);
        for (size_t i = 0; i < h.size(); i++)
          if (h[i].write == wi) return i + 1;
        return 0;
      };
      bool applied = false;
      for (const OpRecord& op : w.ops) {
        auto it = v.gets.find(op.key);
        if (!op.is_delete && it != v.gets.end() && it->second && internal::HasTag(*it->second, op.tag)) {
          applied = true;
        }
      }
      if (!applied) continue;
      for (const OpRecord& op : w.ops) {
        auto it = v.gets.find(op.key);
        if (it == v.gets.end()) continue;
        std::string stray;
        const auto pos = positions(op.key, it->second, &stray);
        const size_t mine = index_in_history(op);
        if (stray.empty() && (pos.empty() || *std::max_element(pos.begin(), pos.end()) < mine)) {
          bad.push_back("partial EGT " + w.request_id + " (" + OutcomeName(w.outcome) + ") on " + v.member + ": " +
                        op.key.ToString() + " reads " + Describe(it->second) + ", from before the EGT");
        }
      }
    }
  }

  // Queries: the point reads' entities, in key order, once each.
  for (const MemberView& v : views) {
    std::set<std::string> tables;
    for (const EntityKey& k : universe) tables.insert(k.table);
    for (const std::string& t : tables) {
      std::vector<std::pair<std::string, std::string>> expected;  // (pk, rk) present by Get
      std::map<std::pair<std::string, std::string>, std::string> etags;
      for (const auto& [k, e] : v.gets) {
        if (k.table == t && e) {
          expected.push_back({k.pk, k.rk});
          etags[{k.pk, k.rk}] = e->etag;
        }
      }
      std::sort(expected.begin(), expected.end());
      std::vector<std::pair<std::string, std::string>> got;
      auto q = v.queries.find(t);
      if (q != v.queries.end()) {
        for (const Entity& e : q->second) {
          got.push_back({e.partition_key, e.row_key});
          auto et = etags.find({e.partition_key, e.row_key});
          if (et != etags.end() && et->second != e.etag) {
            bad.push_back(v.member + ": query " + t + " returns " + e.partition_key + "/" + e.row_key + " with ETag " +
                          e.etag + ", the point read " + et->second);
          }
        }
      }
      for (size_t i = 1; i < got.size(); i++) {
        if (!(got[i - 1] < got[i])) {
          bad.push_back(v.member + ": query " + t + " out of key order or repeated at " + got[i].first + "/" +
                        got[i].second + " after " + got[i - 1].first + "/" + got[i - 1].second);
          break;
        }
      }
      std::vector<std::pair<std::string, std::string>> sorted_got = got;
      std::sort(sorted_got.begin(), sorted_got.end());
      if (sorted_got != expected) {
        bad.push_back(v.member + ": query " + t + " returns " + std::to_string(got.size()) + " entities, point reads find " +
                      std::to_string(expected.size()));
      }
    }
  }
  return bad;
}

// The first `n` violations, one a line, for a failure message.
inline std::string First(const std::vector<std::string>& bad, size_t n = 30) {
  std::string out;
  for (size_t i = 0; i < bad.size() && i < n; i++) out += "  " + bad[i] + "\n";
  if (bad.size() > n) out += "  ... and " + std::to_string(bad.size() - n) + " more\n";
  return out;
}

}  // namespace sidetable::scale_out
