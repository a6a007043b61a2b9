// `curve keygen` (curve_commands.h).
#include "client/curve.h"
#include "tools/cli/curve_commands.h"

namespace sidetable::cli {

CLI::App* AddCurveCommands(CLI::App& app, std::string& prefix) {
  CLI::App* curve = app.add_subcommand("curve", "CURVE key pairs for encrypted, authenticated connections");
  curve->require_subcommand(1);
  CLI::App* keygen = curve->add_subcommand(
      "keygen", "write a new key pair: PREFIX.key (secret, mode 0600) and PREFIX.pub (public); prints the public key");
  keygen->add_option("--out", prefix, "path prefix of the two files (never overwritten)")->required();
  return curve;
}

int RunCurveKeygen(Session& s, const std::string& prefix) {
  Result<client::curve_keys::KeyPair> pair = client::curve_keys::GenerateKeyPair();
  if (!pair.ok()) return s.Usage(pair.status().message());
  Status written = client::curve_keys::WriteKeyPair(prefix, *pair);
  if (!written.ok()) return s.Usage("curve keygen: " + written.message());
  s.out = pair->public_key + "\n";
  return s.Finish();
}

}  // namespace sidetable::cli
