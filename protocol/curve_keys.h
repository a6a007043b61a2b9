// CURVE key files (docs/security.md, "Transport"): the sidecar's key pair,
// the clients' key pairs and the sidecar's allow-list of client keys, in the
// text form ZeroMQ uses (Z85, ZeroMQ RFC 32: 40 characters for a 32-byte
// Curve25519 key, as zmq_curve_keypair writes them).
//
// A key file is text: blank lines and lines starting with '#' are ignored;
// every other line is a Z85 key, optionally followed by whitespace and a
// label. A secret key file (PREFIX.key) holds one secret key and must not be
// accessible by group or others (refused otherwise, as ssh refuses a private
// key); the public key is derived from it. A public key file (PREFIX.pub)
// holds one public key. An allow-list holds any number of public keys, one a
// line, so `cat alice.pub bob.pub > clients` makes one.
//
// Shared by the sidecar (its key pair, the allow-list) and the clients (their
// key pair, the sidecar's public key); no ZeroMQ here: libsodium makes and
// derives the keys, as libzmq does with it.
//
// Thread safety: stateless functions over values and files.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "engine/status.h"

namespace sidetable::curve {

inline constexpr size_t kKeyBytes = 32;
inline constexpr size_t kZ85KeyChars = 40;

// Z85 of bytes whose length is a multiple of 4, and back (text whose length
// is a multiple of 5, only Z85 characters).
std::string Z85Encode(std::string_view bytes);
Result<std::string> Z85Decode(std::string_view text);

// Both keys in Z85 text.
struct KeyPair {
  std::string public_key;
  std::string secret_key;
};

// A fresh Curve25519 key pair (libsodium's crypto_box_keypair).
Result<KeyPair> GenerateKeyPair();
// The public key (Z85) of a secret key (Z85).
Result<std::string> PublicKeyOf(const std::string& secret_z85);
// True when `text` is a Z85 key (40 Z85 characters).
bool IsZ85Key(std::string_view text);

// PREFIX.key: one secret key, the file readable by its owner only.
Result<KeyPair> LoadSecretKeyFile(const std::string& path);
// PREFIX.pub: one public key.
Result<std::string> LoadPublicKeyFile(const std::string& path);

// One allowed client key and its label ("" when the line has none).
struct AllowedKey {
  std::string public_key;  // Z85
  std::string label;
};
// Any number of public keys, one a line (an empty list is allowed: it
// refuses every client).
Result<std::vector<AllowedKey>> LoadAllowList(const std::string& path);

// Writes PREFIX.key (mode 0600, the secret key) and PREFIX.pub (0644, the
// public key), each with a comment line naming what it is. Refuses to
// overwrite either file.
Status WriteKeyPair(const std::string& prefix, const KeyPair& pair);

}  // namespace sidetable::curve
