// CURVE in a cluster, the parts that need no network (docs/security.md,
// "CURVE in a cluster"): the member record's published key
// (sidecar/cluster/records.h) and the start-up warning about a sidecar's own
// key missing from its allow-list (sidecar/security_config.h).
#include <gtest/gtest.h>

#include "protocol/curve_keys.h"
#include "sidecar/cluster/records.h"
#include "sidecar/security_config.h"

namespace sidetable {
namespace {

using cluster::DecodeMember;
using cluster::EncodeMember;
using cluster::MemberRecord;

std::string NewPublicKey() { return curve::GenerateKeyPair().value().public_key; }

TEST(ClusterCurveRecords, AMemberRecordCarriesItsCurveKey) {
  const std::string key = NewPublicKey();
  const std::string json = EncodeMember(MemberRecord{"tcp://10.0.0.5:7400", key, 42});
  EXPECT_NE(json.find("\"curveKey\":"), std::string::npos) << json;
  MemberRecord back;
  ASSERT_TRUE(DecodeMember(json, &back).ok()) << json;
  EXPECT_EQ(back.endpoint, "tcp://10.0.0.5:7400");
  EXPECT_EQ(back.curve_public_key, key);
  EXPECT_EQ(back.started_ms, 42);
}

// A member without CURVE writes exactly what sidecars before the key wrote,
// and the records they wrote (still on the compacted cluster topic after an
// upgrade) decode, with no key.
TEST(ClusterCurveRecords, ARecordWithoutAKeyIsTheOldFormatAndStillDecodes) {
  EXPECT_EQ(EncodeMember(MemberRecord{"tcp://x:1", "", 5}), "{\"endpoint\":\"tcp://x:1\",\"started\":5}");
  MemberRecord old;
  old.curve_public_key = "left over";  // decoding replaces the whole record
  ASSERT_TRUE(DecodeMember("{\"endpoint\":\"tcp://10.0.0.6:7400\",\"started\":1733100000000}", &old).ok());
  EXPECT_EQ(old.endpoint, "tcp://10.0.0.6:7400");
  EXPECT_EQ(old.curve_public_key, "");
  EXPECT_EQ(old.started_ms, 1733100000000);
  // Older still: no start time either.
  ASSERT_TRUE(DecodeMember("{\"endpoint\":\"tcp://y:2\"}", &old).ok());
  EXPECT_EQ(old.endpoint, "tcp://y:2");
  EXPECT_EQ(old.started_ms, 0);
}

// A key that is not a Z85 public key would only fail every handshake
// later: the record is refused whole (the reader logs and skips it).
TEST(ClusterCurveRecords, AMalformedKeyRefusesTheRecord) {
  MemberRecord r;
  r.endpoint = "unchanged";
  for (const char* json : {"{\"endpoint\":\"tcp://x:1\",\"curveKey\":\"short\"}",
                           "{\"endpoint\":\"tcp://x:1\",\"curveKey\":7}",
                           // 40 characters, but `~` is not in Z85's alphabet
                           "{\"endpoint\":\"tcp://x:1\",\"curveKey\":\"~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~\"}",
                           "{\"curveKey\":\"rq]8...Z@h\"}"}) {
    EXPECT_EQ(DecodeMember(json, &r).code(), Code::kInvalidInput) << json;
  }
  EXPECT_EQ(r.endpoint, "unchanged") << "a refused record leaves the output alone";
}

sidecar::SecurityConfig CurveOn(const curve::KeyPair& own, std::vector<std::string> allowed) {
  sidecar::SecurityConfig c;
  c.curve_secret_key_file = "/etc/sidetable/sidecar.key";
  c.curve_clients_file = "/etc/sidetable/clients";
  c.server_keys = own;
  for (auto& k : allowed) c.clients.push_back(curve::AllowedKey{std::move(k), ""});
  return c;
}

TEST(ClusterCurveStartup, OwnKeyMissingFromTheAllowListIsWarnedAbout) {
  const curve::KeyPair own = curve::GenerateKeyPair().value();
  const std::string app = NewPublicKey();

  EXPECT_TRUE(sidecar::ClusterCurveWarnings(sidecar::SecurityConfig()).empty()) << "CURVE off: nothing to say";
  EXPECT_TRUE(sidecar::ClusterCurveWarnings(CurveOn(own, {app, own.public_key})).empty());

  const auto warnings = sidecar::ClusterCurveWarnings(CurveOn(own, {app}));
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_EQ(warnings[0],
            "security.curve_clients_file /etc/sidetable/clients does not list this sidecar's own public key " +
                own.public_key +
                ": members sharing this key pair cannot forward to it (their handshakes are refused); list the key "
                "unless every member has a key pair of its own on the others' allow-lists");
  EXPECT_EQ(sidecar::ClusterCurveWarnings(CurveOn(own, {})).size(), 1u) << "an empty list refuses every peer";
}

}  // namespace
}  // namespace sidetable
