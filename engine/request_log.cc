#include "engine/internal/request_log.h"

#include <rocksdb/write_batch.h>
#include <xxhash.h>

#include <cstring>

#include "engine/etag.h"
#include "engine/internal/codec.h"

namespace sidetable {
namespace {

// Format 2 adds the version (epoch-stamped under scale-out) and flags after
// the marks; format 3 is format 2 with RequestFingerprint's value, which
// covers numeric values (formats 1 and 2 carry LegacyRequestFingerprint's).
// Formats 1 (version = lsn) and 2 are still read.
constexpr uint8_t kOutcomeFormatV1 = 1;
constexpr uint8_t kOutcomeFormatV2 = 2;
constexpr uint8_t kOutcomeFormat = 3;
constexpr uint8_t kFlagAnyFingerprint = 1;

std::string GenKey(uint64_t gen) {
  std::string k(1, 'g');
  codec::PutFixed64BE(&k, gen);
  return k;
}

// An id key is GenKey, '\x01', then the id's name in its generation:
// caller '\0' id.
constexpr size_t kIdNameOffset = 10;

std::string IdKey(uint64_t gen, std::string_view caller, std::string_view id) {
  std::string k = GenKey(gen);
  k.push_back('\x01');
  k.append(caller);
  k.push_back('\0');
  k.append(id);
  return k;
}

// What the generations' filters hold: XXH3 of the id's name, as an id key
// spells it after kIdNameOffset.
uint64_t IdNameHash(std::string_view name) { return XXH3_64bits(name.data(), name.size()); }

// The name in a stored id key (longer than kIdNameOffset).
std::string_view IdNameOf(const rocksdb::Slice& key) {
  return std::string_view(key.data() + kIdNameOffset, key.size() - kIdNameOffset);
}

uint64_t IdHash(std::string_view caller, std::string_view id) {
  // On the stack for the usual sizes: this runs for every write with an id.
  char stack[256];
  std::string heap;
  const size_t n = caller.size() + 1 + id.size();
  char* buf = stack;
  if (n > sizeof stack) {
    heap.resize(n);
    buf = heap.data();
  }
  std::memcpy(buf, caller.data(), caller.size());
  buf[caller.size()] = '\0';
  std::memcpy(buf + caller.size() + 1, id.data(), id.size());
  return IdNameHash(std::string_view(buf, n));
}

// The fingerprint's bytes, in the order the first implementation fed them
// to one XXH3 state field by field: XXH3 of their concatenation is the same
// value, for a fraction of the cost (one call instead of thousands for an
// EGT of 100 entities). Measured first, then written through a pointer into
// space sized once: a capacity check and a call per field cost more than
// the bytes (EncodeRow does the same, codec.cc).
bool HasScalar(EdmType t) {
  return t != EdmType::kString && t != EdmType::kBinary && t != EdmType::kGuid;
}

char* WriteU64(char* p, uint64_t v) {
  std::memcpy(p, &v, sizeof v);
  return p + sizeof v;
}

char* WriteString(char* p, std::string_view s) {
  p = WriteU64(p, s.size());
  if (!s.empty()) std::memcpy(p, s.data(), s.size());
  return p + s.size();
}

// The 8 bytes of a value without bytes (Int32, Int64, Boolean, DateTime as
// their integer, Double as its bits); nothing for String, Binary and Guid,
// whose bytes are fed already.
char* WriteScalar(char* p, const Value& v) {
  if (!HasScalar(v.type())) return p;
  uint64_t bits;
  if (v.type() == EdmType::kDouble) {
    const double d = v.as_double();
    std::memcpy(&bits, &d, sizeof bits);
  } else {
    bits = static_cast<uint64_t>(v.as_int64());
  }
  return WriteU64(p, bits);
}

size_t FingerprintBytes(const Batch& batch, bool with_scalars) {
  size_t n = 8 + batch.table().size();
  for (const Operation& op : batch.operations()) {
    n += 1 + 8 + op.entity.partition_key.size() + 8 + op.entity.row_key.size() + 8 +
         op.if_match.size() + sizeof op.fence;
    for (const Property& p : op.entity.properties) {
      n += 8 + p.name.size() + 1 + 8 + p.value.bytes().size();
      if (with_scalars && HasScalar(p.value.type())) n += 8;
    }
  }
  return n;
}

uint64_t Fingerprint(const Batch& batch, bool with_scalars) {
  // Reused per thread: an EGT's bytes are up to 4 MiB, and a fresh buffer
  // of that size would be an mmap and its page faults per request.
  thread_local std::string buf;
  const size_t size = FingerprintBytes(batch, with_scalars);
  if (buf.size() < size) buf.resize(size);
  char* const begin = buf.data();
  char* p = WriteString(begin, batch.table());
  for (const Operation& op : batch.operations()) {
    *p++ = static_cast<char>(static_cast<uint8_t>(op.kind));
    p = WriteString(p, op.entity.partition_key);
    p = WriteString(p, op.entity.row_key);
    p = WriteString(p, op.if_match);
    std::memcpy(p, &op.fence, sizeof op.fence);
    p += sizeof op.fence;
    for (const Property& prop : op.entity.properties) {
      p = WriteString(p, prop.name);
      *p++ = static_cast<char>(static_cast<uint8_t>(prop.value.type()));
      p = WriteString(p, prop.value.bytes());
      if (with_scalars) p = WriteScalar(p, prop.value);
    }
  }
  const uint64_t h = XXH3_64bits(begin, static_cast<size_t>(p - begin));
  // A buffer grown by one huge request is not kept for good.
  if (buf.capacity() > (1u << 20)) std::string().swap(buf);
  return h;
}

}  // namespace

void EncodeOutcome(const RememberedOutcome& o, std::string* dst) {
  // Always format 3: only it says which fingerprint the value is.
  dst->push_back(static_cast<char>(kOutcomeFormat));
  codec::PutFixed64(dst, o.fingerprint);
  codec::PutVarint64(dst, o.lsn);
  codec::PutFixed64(dst, static_cast<uint64_t>(o.time));
  codec::PutLengthPrefixed(dst, std::string_view(reinterpret_cast<const char*>(o.marks.data()),
                                                 o.marks.size()));
  codec::PutVarint64(dst, o.version);
  dst->push_back(static_cast<char>(o.any_fingerprint ? kFlagAnyFingerprint : 0));
}

Status DecodeOutcome(std::string_view v, RememberedOutcome* o) {
  codec::Reader r(v);
  uint8_t format, flags = 0;
  uint64_t time;
  std::string_view marks;
  if (!r.Byte(&format) || (format != kOutcomeFormat && format != kOutcomeFormatV2 && format != kOutcomeFormatV1) ||
      !r.Fixed64(&o->fingerprint) || !r.Varint64(&o->lsn) || !r.Fixed64(&time) ||
      !r.LengthPrefixed(&marks)) {
    return Status(Code::kInternal, "corrupt request outcome");
  }
  o->version = o->lsn;
  if (format != kOutcomeFormatV1 && (!r.Varint64(&o->version) || !r.Byte(&flags))) {
    return Status(Code::kInternal, "corrupt request outcome");
  }
  if (!r.empty()) return Status(Code::kInternal, "corrupt request outcome");
  o->any_fingerprint = (flags & kFlagAnyFingerprint) != 0;
  o->legacy_fingerprint = format != kOutcomeFormat;
  o->time = static_cast<int64_t>(time);
  o->marks.assign(marks.begin(), marks.end());
  return Status::OK();
}

uint64_t RequestFingerprint(const Batch& batch) { return Fingerprint(batch, /*with_scalars=*/true); }

uint64_t LegacyRequestFingerprint(const Batch& batch) { return Fingerprint(batch, /*with_scalars=*/false); }

WriteResult RememberedOutcome::ToResult() const {
  WriteResult r;
  r.lsn = lsn;
  r.timestamp = time;
  r.replayed = true;
  const std::string etag = MakeETag(version);
  r.etags.reserve(marks.size());
  for (uint32_t i = 0; i < marks.size(); i++) {
    r.etags.push_back(marks[i] == kWritten ? etag : std::string());
    if (marks[i] == kSkipped) r.skipped.push_back(i);
  }
  return r;
}

RequestLog::RequestLog(rocksdb::DB* db, rocksdb::ColumnFamilyHandle* cf, RequestWindow window)
    : db_(db),
      cf_(cf),
      window_(window),
      current_ids_(std::make_unique<internal::IdFilter>(window.count)),
      previous_ids_(std::make_unique<internal::IdFilter>(window.count)) {}

Status RequestLog::Load(int64_t now) {
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions(), cf_));
  it->SeekToLast();
  std::lock_guard lock(mu_);
  gen_ = 1;
  gen_start_ = now;
  gen_count_ = 0;
  header_stored_ = false;
  current_ids_ = std::make_unique<internal::IdFilter>(window_.count);
  previous_ids_ = std::make_unique<internal::IdFilter>(window_.count);
  if (!it->status().ok()) return Status(Code::kInternal, "request log: " + it->status().ToString());
  if (!it->Valid()) return Status::OK();
  const rocksdb::Slice last = it->key();
  if (last.size() < 9 || last[0] != 'g') return Status(Code::kInternal, "request log: bad key");
  gen_ = codec::DecodeFixed64BE(last.data() + 1);
  // The previous generation's ids, for its filter (a lookup still reads it).
  if (gen_ > 1) {
    const std::string previous = GenKey(gen_ - 1);
    for (it->Seek(previous); it->Valid() && it->key().starts_with(previous); it->Next()) {
      if (it->key().size() > kIdNameOffset) {
        previous_ids_->Add(IdNameHash(IdNameOf(it->key())));
      }
    }
  }
  // The generation's header may be missing when the group that started it
  // failed to write; then it counts as starting now.
  const std::string header = GenKey(gen_);
  it->Seek(header);
  if (it->Valid() && it->key() == header && it->value().size() == 8) {
    gen_start_ = static_cast<int64_t>(codec::DecodeFixed64BE(it->value().data()));
    header_stored_ = true;
  }
  for (; it->Valid() && it->key().starts_with(header); it->Next()) {
    if (it->key().size() > kIdNameOffset) {
      gen_count_++;
      current_ids_->Add(IdNameHash(IdNameOf(it->key())));
    }
  }
  if (!it->status().ok()) return Status(Code::kInternal, "request log: " + it->status().ToString());
  return Status::OK();
}

Result<std::optional<RememberedOutcome>> RequestLog::Lookup(std::string_view caller,
                                                            std::string_view id) const {
  const uint64_t hash = IdHash(caller, id);
  uint64_t gen;
  bool maybe[2];  // in gen, in gen - 1
  {
    std::lock_guard lock(mu_);
    gen = gen_;
    maybe[0] = current_ids_->MayContain(hash);
    maybe[1] = previous_ids_->MayContain(hash);
  }
  // Newest first: an id is recorded at most once, but read the likelier one first.
  for (uint64_t g = gen; g + 1 >= gen && g >= 1; g--) {
    if (!maybe[gen - g]) continue;  // certainly not recorded there
    std::string value;
    rocksdb::Status s = db_->Get(rocksdb::ReadOptions(), cf_, IdKey(g, caller, id), &value);
    if (s.IsNotFound()) continue;
    if (!s.ok()) return Status(Code::kInternal, "request log: " + s.ToString());
    RememberedOutcome o;
    ST_RETURN_IF_ERROR(DecodeOutcome(value, &o));
    return std::optional<RememberedOutcome>(std::move(o));
  }
  return std::optional<RememberedOutcome>();
}

void RequestLog::Record(std::string_view caller, std::string_view id,
                        const RememberedOutcome& outcome, int64_t now, rocksdb::WriteBatch* wb) {
  const uint64_t hash = IdHash(caller, id);
  uint64_t gen;
  {
    std::lock_guard lock(mu_);
    const bool full = gen_count_ >= window_.count;
    const bool old = now - gen_start_ >= window_.seconds * kTicksPerSecond;
    if (full || old) {
      gen_++;
      gen_start_ = now;
      gen_count_ = 0;
      header_stored_ = false;
      // Everything below the previous generation; a range that also covers
      // what an earlier, failed roll meant to delete.
      wb->DeleteRange(cf_, GenKey(0), GenKey(gen_ - 1));
      previous_ids_ = std::move(current_ids_);
      current_ids_ = std::make_unique<internal::IdFilter>(window_.count);
    }
    if (!header_stored_) {
      // The start time, so that age counts from it across restarts.
      std::string start;
      codec::PutFixed64BE(&start, static_cast<uint64_t>(gen_start_));
      wb->Put(cf_, GenKey(gen_), start);
      header_stored_ = true;
    }
    gen_count_++;
    // Before the write: a lookup that sees the write must see the id here.
    current_ids_->Add(hash);
    gen = gen_;
  }
  std::string value;
  EncodeOutcome(outcome, &value);
  wb->Put(cf_, IdKey(gen, caller, id), value);
}

const std::string* InflightRequestIds::Claim(std::string_view caller, std::string_view id,
                                             uint64_t fingerprint) {
  // Callers hold no '\0' (ValidateCaller refuses control characters).
  std::string key;
  key.reserve(caller.size() + 1 + id.size());
  key.append(caller);
  key.push_back('\0');
  key.append(id);
  std::lock_guard lock(mu_);
  auto [it, inserted] = held_.try_emplace(std::move(key));
  if (!inserted && it->second.fingerprint != fingerprint) return nullptr;
  it->second.fingerprint = fingerprint;
  it->second.claims++;
  return &it->first;
}

void InflightRequestIds::Release(const std::string* key) {
  std::lock_guard lock(mu_);
  auto it = held_.find(*key);
  if (it == held_.end()) return;
  if (--it->second.claims == 0) held_.erase(it);
}

}  // namespace sidetable
