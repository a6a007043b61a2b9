// ReadChanges with "raw": the request flag, the raw reply (a page of the
// change log's own records, docs/storage-format.md) against the MessagePack
// form of the same records, and every truncated or corrupt page answered
// with an error. The change page fuzz target's corpus is replayed at the end.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>

#include "engine/internal/codec.h"
#include "protocol/msgpack.h"
#include "protocol/wire.h"
#include "testing/change_records.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace sidetable::wire {
namespace {
using ::sidetable::testing::ExpectSameChanges;

Entity Image(const std::string& rk, int n) {
  Entity e;
  e.partition_key = "p\xC3\xA9";
  e.row_key = rk;
  e.Set("s", Value::String("text " + std::to_string(n)))
      .Set("b", Value::Binary(std::string("\0\xFF", 2)))
      .Set("i", Value::Int32(n))
      .Set("l", Value::Int64(INT64_MIN))
      .Set("d", Value::DateTime(kMaxDateTimeTicks))
      .Set("g", Value::MakeGuid(*ParseGuid("c9da6455-213d-42c9-9a79-3e9149a57833")))
      .Set("x", Value::Double(-0.0))
      .Set("t", Value::Boolean(true));
  return e;
}

// A record as the engine stores it, and the ChangeRecord it stands for.
std::string StoredRecord(uint64_t lsn, ChangeKind kind, ChangeRecord* as_record) {
  const int64_t time = 638000000000000000LL + static_cast<int64_t>(lsn);
  const std::string pk = kind == ChangeKind::kTableCreated ? "" : "p\xC3\xA9";
  const std::string target = kind == ChangeKind::kArchiveRequested ? "Archive" : "";
  const std::string crid = lsn % 2 ? "req-" + std::to_string(lsn) : "";
  std::vector<std::string> befores, afters;
  std::vector<codec::ChangeOpImages> ops;
  const int n = kind == ChangeKind::kTableCreated ? 0 : 3;
  befores.resize(n);
  afters.resize(n);
  std::vector<std::string> rks(n);
  for (int i = 0; i < n; i++) {
    rks[i] = "r" + std::to_string(i);
    if (kind == ChangeKind::kEntities) {
      if (i > 0) codec::EncodeRow(Image(rks[i], i), lsn - 1, time - 1, &befores[i]);
      if (i < 2) codec::EncodeRow(Image(rks[i], i + 10), lsn, time, &afters[i]);
    }
    ops.push_back({rks[i], i == 2 ? OpKind::kDelete : OpKind::kInsertOrMerge, befores[i], afters[i]});
  }
  std::string value;
  codec::EncodeChangeHeader(lsn, kind, time, "Table", 3, pk, "caller", ops.size(), &value, target, crid);
  for (const auto& op : ops) codec::EncodeChangeOp(op, &value);
  EXPECT_TRUE(codec::DecodeChange(value, as_record).ok());
  return value;
}

// The raw reply the sidecar writes for these records.
std::string RawReply(const std::vector<std::string>& stored, uint64_t first, uint64_t last) {
  std::string body = "HDR";  // what the server wrote before the body stays
  const size_t begin = BeginRawChanges(&body);
  for (const auto& v : stored) codec::PutLengthPrefixed(&body, v);
  RawChangePage page;
  page.records = stored.size();
  page.first_available_lsn = first;
  page.last_lsn = last;
  FinishRawChanges(page, begin, &body);
  EXPECT_EQ(body.substr(0, 3), "HDR");
  return body.substr(3);
}


struct Page {
  std::vector<std::string> stored;
  ChangeBatch batch;
};

Page SomePage() {
  Page p;
  p.batch.first_available_lsn = 7;
  p.batch.last_lsn = 99;
  const ChangeKind kinds[] = {ChangeKind::kTableCreated, ChangeKind::kEntities, ChangeKind::kArchiveRequested,
                              ChangeKind::kEntities, ChangeKind::kTableDeleted};
  uint64_t lsn = 7;
  for (ChangeKind k : kinds) p.stored.push_back(StoredRecord(lsn++, k, &p.batch.records.emplace_back()));
  return p;
}

TEST(ChangePage, RequestFlagRoundTripsAndOldRequestsLackIt) {
  Request r;
  r.op = Op::kReadChanges;
  r.from_lsn = 5;
  r.raw_changes = true;
  std::string frame;
  EncodeRequest(r, &frame);
  Request back;
  ASSERT_TRUE(DecodeRequest(frame, &back).ok());
  EXPECT_TRUE(back.raw_changes);
  EXPECT_EQ(back.from_lsn, 5u);
  r.raw_changes = false;
  frame.clear();
  EncodeRequest(r, &frame);
  EXPECT_EQ(frame.find("raw"), std::string::npos) << "no flag: the request of old clients, byte for byte";
  Request plain;
  ASSERT_TRUE(DecodeRequest(frame, &plain).ok());
  EXPECT_FALSE(plain.raw_changes);
  // A flag that is not a boolean is refused.
  std::string bad;
  AppendHeader(&bad, Header{kVersion, static_cast<uint8_t>(Op::kReadChanges), 0, 1});
  msgpack::Writer w(&bad);
  w.MapHeader(1);
  w.Str("raw");
  w.Uint(1);
  Request refused;
  Status s = DecodeRequest(bad, &refused);
  EXPECT_EQ(s.code(), Code::kInvalidInput);
  EXPECT_NE(s.message().find("'raw'"), std::string::npos) << s.ToString();
}

TEST(ChangePage, RawRepliesDecodeAsTheMessagePackFormOfTheSameRecords) {
  Page p = SomePage();
  const std::string raw = RawReply(p.stored, 7, 99);
  ChangeBatch from_raw;
  Status s = DecodeChanges(raw, &from_raw);
  ASSERT_TRUE(s.ok()) << s.ToString();
  std::string packed;
  EncodeChanges(p.batch, &packed);
  ChangeBatch from_packed;
  ASSERT_TRUE(DecodeChanges(packed, &from_packed).ok());
  ExpectSameChanges(from_raw, from_packed);
  ExpectSameChanges(from_raw, p.batch);
  EXPECT_EQ(from_raw.records[2].target_table, "Archive");
  EXPECT_EQ(from_raw.records[1].client_request_id, "");
  EXPECT_EQ(from_raw.records[0].client_request_id, "req-7");
  EXPECT_LT(raw.size(), packed.size()) << "the stored encoding is the smaller";
  // An empty page.
  ChangeBatch none;
  ASSERT_TRUE(DecodeChanges(RawReply({}, 3, 2), &none).ok());
  EXPECT_TRUE(none.records.empty());
  EXPECT_EQ(none.first_available_lsn, 3u);
  EXPECT_EQ(none.last_lsn, 2u);
  // A page longer than 64 KiB (the bin 32 length is patched in).
  std::vector<std::string> many;
  ChangeBatch want;
  for (uint64_t lsn = 1; lsn <= 300; lsn++) many.push_back(StoredRecord(lsn, ChangeKind::kEntities, &want.records.emplace_back()));
  want.first_available_lsn = 1;
  want.last_lsn = 300;
  ChangeBatch big;
  const std::string big_raw = RawReply(many, 1, 300);
  ASSERT_GT(big_raw.size(), 65536u);
  ASSERT_TRUE(DecodeChanges(big_raw, &big).ok());
  ExpectSameChanges(big, want);
}

TEST(ChangePage, TruncatedOrCorruptPagesFailWithAClearError) {
  Page p = SomePage();
  std::string page;
  for (const auto& v : p.stored) codec::PutLengthPrefixed(&page, v);
  // The page cut short anywhere, inside a well-formed reply.
  for (size_t cut = 0; cut < page.size(); cut++) {
    std::string body;
    msgpack::Writer w(&body);
    w.MapHeader(4);
    w.Str("raw");
    w.Bin(std::string_view(page).substr(0, cut));
    w.Str("n");
    w.Uint(p.stored.size());
    w.Str("first");
    w.Uint(7);
    w.Str("last");
    w.Uint(99);
    ChangeBatch b;
    Status s = DecodeChanges(body, &b);
    ASSERT_FALSE(s.ok()) << "cut at " << cut;
    EXPECT_EQ(s.code(), Code::kInternal);
    EXPECT_TRUE(s.message().find("change page") != std::string::npos ||
                s.message().find("change record") != std::string::npos)
        << s.ToString();
  }
  // The reply itself cut short: malformed, as any reply.
  const std::string raw = RawReply(p.stored, 7, 99);
  for (size_t cut = 0; cut < raw.size(); cut++) {
    ChangeBatch b;
    EXPECT_FALSE(DecodeChanges(std::string_view(raw).substr(0, cut), &b).ok()) << "cut at " << cut;
  }
  // A raw page without its count, and both forms at once.
  {
    std::string body;
    msgpack::Writer w(&body);
    w.MapHeader(1);
    w.Str("raw");
    w.Bin(page);
    ChangeBatch b;
    Status s = DecodeChanges(body, &b);
    EXPECT_EQ(s.code(), Code::kInternal);
    EXPECT_NE(s.message().find("'n'"), std::string::npos) << s.ToString();
  }
  {
    std::string packed;
    EncodeChanges(p.batch, &packed);  // {"records", "first", "last"}
    std::string body;
    msgpack::Writer w(&body);
    w.MapHeader(3);
    w.Str("raw");
    w.Bin(page);
    w.Str("n");
    w.Uint(p.stored.size());
    w.Str("records");
    w.ArrayHeader(0);
    ChangeBatch b;
    EXPECT_TRUE(DecodeChanges(body, &b).ok()) << "an empty 'records' beside 'raw' is harmless";
    EXPECT_EQ(b.records.size(), p.stored.size());
  }
  // A corrupt record names its place in the page.
  std::string first, length;
  codec::PutLengthPrefixed(&first, p.stored[0]);
  codec::PutVarint64(&length, p.stored[1].size());
  std::string bad = page;
  bad[first.size() + length.size()] = 9;  // the second record's format byte
  std::string body;
  msgpack::Writer w(&body);
  w.MapHeader(2);
  w.Str("raw");
  w.Bin(bad);
  w.Str("n");
  w.Uint(p.stored.size());
  ChangeBatch b;
  Status s = DecodeChanges(body, &b);
  EXPECT_EQ(s.code(), Code::kInternal);
  EXPECT_NE(s.message().find("change page record 1: corrupt change record"), std::string::npos) << s.ToString();
}

// The seed corpus: raw replies written by the code above.
std::vector<std::string> Seeds() {
  std::vector<std::string> seeds;
  for (const auto& f : std::filesystem::directory_iterator(ST_CHANGE_PAGE_CORPUS_DIR)) {
    std::ifstream in(f.path(), std::ios::binary);
    seeds.emplace_back((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  }
  return seeds;
}

TEST(ChangePageFuzzReplay, SeedsAndMutationsNeverCrash) {
  if (std::getenv("ST_WRITE_CHANGE_PAGE_CORPUS")) {
    // Regenerates the seeds (tests/fuzz/corpus/change_page).
    Page p = SomePage();
    std::ofstream(std::string(ST_CHANGE_PAGE_CORPUS_DIR) + "/raw_page", std::ios::binary) << RawReply(p.stored, 7, 99);
    std::ofstream(std::string(ST_CHANGE_PAGE_CORPUS_DIR) + "/raw_one", std::ios::binary)
        << RawReply({p.stored[1]}, 1, 9);
    std::string packed;
    EncodeChanges(p.batch, &packed);
    std::ofstream(std::string(ST_CHANGE_PAGE_CORPUS_DIR) + "/msgpack_page", std::ios::binary) << packed;
  }
  const auto seeds = Seeds();
  ASSERT_GE(seeds.size(), 3u);
  std::mt19937 rng(5);
  size_t accepted = 0;
  for (const auto& seed : seeds) {
    ChangeBatch b;
    ASSERT_TRUE(DecodeChanges(seed, &b).ok()) << "seed must be valid";
    ASSERT_FALSE(b.records.empty());
    for (int i = 0; i < 3000; i++) {
      std::string f = seed;
      for (int k = 0; k < 1 + static_cast<int>(rng() % 3); k++) f[rng() % f.size()] = static_cast<char>(rng());
      LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(f.data()), f.size());
      ChangeBatch out;
      accepted += DecodeChanges(f, &out).ok();
    }
  }
  EXPECT_GT(accepted, 0u);
}

}  // namespace
}  // namespace sidetable::wire
