#include "protocol/curve_keys.h"

#include "protocol/key_file.h"

#include <fcntl.h>
#include <sodium.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>

namespace sidetable::curve {
namespace {

constexpr char kZ85[] =
    "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#";

int Z85Digit(char c) {
  for (int i = 0; i < 85; i++) {
    if (kZ85[i] == c) return i;
  }
  return -1;
}

Status Bad(const std::string& path, const std::string& message) {
  return Status(Code::kInvalidInput, "key file " + path + ": " + message);
}

// The whole file (at most 1 MiB); secret key files must be owner-only.
Result<std::string> ReadKeyText(const std::string& path, bool secret) {
  return keyfile::Read(path, /*owner_only=*/secret, 1 << 20);
}

// The key lines of a key file: (line number, key, label).
struct KeyLine {
  int line;
  std::string key, label;
};

Result<std::vector<KeyLine>> KeyLines(const std::string& path, const std::string& text) {
  std::vector<KeyLine> out;
  size_t pos = 0;
  int number = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    std::string_view line(text.data() + pos, end - pos);
    pos = end + 1;
    number++;
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t')) line.remove_suffix(1);
    while (!line.empty() && (line.front() == ' ' || line.front() == '\t')) line.remove_prefix(1);
    if (line.empty() || line.front() == '#') continue;
    const size_t space = line.find_first_of(" \t");
    std::string_view key = line.substr(0, space);
    std::string_view label = space == std::string_view::npos ? std::string_view() : line.substr(space);
    while (!label.empty() && (label.front() == ' ' || label.front() == '\t')) label.remove_prefix(1);
    if (!IsZ85Key(key)) {
      // Never echo the text: it may be a mistyped secret key.
      return Bad(path, "line " + std::to_string(number) + ": not a Z85 key (" + std::to_string(kZ85KeyChars) +
                           " characters of ZeroMQ's Z85 alphabet, as zmq_curve_keypair and "
                           "`sidetable-cli curve keygen` write them)");
    }
    out.push_back({number, std::string(key), std::string(label)});
  }
  return out;
}

}  // namespace

std::string Z85Encode(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size() / 4 * 5);
  for (size_t i = 0; i + 4 <= bytes.size(); i += 4) {
    uint32_t v = 0;
    for (size_t j = 0; j < 4; j++) v = (v << 8) | static_cast<unsigned char>(bytes[i + j]);
    char chunk[5];
    for (int j = 4; j >= 0; j--) {
      chunk[j] = kZ85[v % 85];
      v /= 85;
    }
    out.append(chunk, 5);
  }
  return out;
}

Result<std::string> Z85Decode(std::string_view text) {
  if (text.size() % 5 != 0) return Status(Code::kInvalidInput, "Z85 text length is not a multiple of 5");
  std::string out;
  out.reserve(text.size() / 5 * 4);
  for (size_t i = 0; i < text.size(); i += 5) {
    uint64_t v = 0;
    for (size_t j = 0; j < 5; j++) {
      const int d = Z85Digit(text[i + j]);
      if (d < 0) return Status(Code::kInvalidInput, "not a Z85 character at offset " + std::to_string(i + j));
      v = v * 85 + static_cast<uint64_t>(d);
    }
    if (v > 0xffffffffu) return Status(Code::kInvalidInput, "Z85 group out of range at offset " + std::to_string(i));
    for (int j = 3; j >= 0; j--) out.push_back(static_cast<char>((v >> (8 * j)) & 0xff));
  }
  return out;
}

bool IsZ85Key(std::string_view text) {
  if (text.size() != kZ85KeyChars) return false;
  Result<std::string> bytes = Z85Decode(text);
  return bytes.ok() && bytes->size() == kKeyBytes;
}

Result<KeyPair> GenerateKeyPair() {
  if (sodium_init() < 0) return Status(Code::kInternal, "libsodium could not start (no entropy source)");
  unsigned char pub[crypto_box_PUBLICKEYBYTES], sec[crypto_box_SECRETKEYBYTES];
  static_assert(crypto_box_PUBLICKEYBYTES == kKeyBytes && crypto_box_SECRETKEYBYTES == kKeyBytes);
  crypto_box_keypair(pub, sec);
  KeyPair pair;
  pair.public_key = Z85Encode(std::string_view(reinterpret_cast<char*>(pub), sizeof pub));
  pair.secret_key = Z85Encode(std::string_view(reinterpret_cast<char*>(sec), sizeof sec));
  sodium_memzero(sec, sizeof sec);
  return pair;
}

Result<std::string> PublicKeyOf(const std::string& secret_z85) {
  if (sodium_init() < 0) return Status(Code::kInternal, "libsodium could not start (no entropy source)");
  if (!IsZ85Key(secret_z85)) return Status(Code::kInvalidInput, "not a Z85 key");
  std::string sec = std::move(Z85Decode(secret_z85)).value();
  unsigned char pub[crypto_scalarmult_BYTES];
  // As zmq_curve_public: the Curve25519 base-point multiple of the secret.
  const int rc = crypto_scalarmult_base(pub, reinterpret_cast<const unsigned char*>(sec.data()));
  sodium_memzero(sec.data(), sec.size());
  if (rc != 0) return Status(Code::kInvalidInput, "not a usable Curve25519 secret key");
  return Z85Encode(std::string_view(reinterpret_cast<char*>(pub), sizeof pub));
}

Result<KeyPair> LoadSecretKeyFile(const std::string& path) {
  Result<std::string> text = ReadKeyText(path, /*secret=*/true);
  if (!text.ok()) return text.status();
  Result<std::vector<KeyLine>> lines = KeyLines(path, *text);
  sodium_memzero(text->data(), text->size());
  if (!lines.ok()) return lines.status();
  if (lines->size() != 1) return Bad(path, "holds " + std::to_string(lines->size()) + " keys, a secret key file holds one");
  KeyPair pair;
  pair.secret_key = std::move((*lines)[0].key);
  Result<std::string> pub = PublicKeyOf(pair.secret_key);
  if (!pub.ok()) return Bad(path, pub.status().message());
  pair.public_key = std::move(pub).value();
  return pair;
}

Result<std::string> LoadPublicKeyFile(const std::string& path) {
  Result<std::string> text = ReadKeyText(path, /*secret=*/false);
  if (!text.ok()) return text.status();
  Result<std::vector<KeyLine>> lines = KeyLines(path, *text);
  if (!lines.ok()) return lines.status();
  if (lines->size() != 1) return Bad(path, "holds " + std::to_string(lines->size()) + " keys, a public key file holds one");
  return std::move((*lines)[0].key);
}

Result<std::vector<AllowedKey>> LoadAllowList(const std::string& path) {
  Result<std::string> text = ReadKeyText(path, /*secret=*/false);
  if (!text.ok()) return text.status();
  Result<std::vector<KeyLine>> lines = KeyLines(path, *text);
  if (!lines.ok()) return lines.status();
  std::vector<AllowedKey> out;
  for (auto& l : *lines) out.push_back({std::move(l.key), std::move(l.label)});
  return out;
}

Status WriteKeyPair(const std::string& prefix, const KeyPair& pair) {
  auto write = [](const std::string& path, mode_t mode, const std::string& body) -> Status {
    // O_EXCL: never overwrite a key (a lost secret key locks its owner out).
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
    if (fd < 0) {
      return Status(Code::kInvalidInput,
                    errno == EEXIST ? path + " already exists: not overwritten" : "cannot create " + path);
    }
    // The umask may have narrowed the mode; the secret file must be exactly 0600.
    const bool ok = ::fchmod(fd, mode) == 0 && ::write(fd, body.data(), body.size()) == static_cast<ssize_t>(body.size()) &&
                    ::fsync(fd) == 0;
    ::close(fd);
    if (!ok) return Status(Code::kInvalidInput, "cannot write " + path);
    return Status::OK();
  };
  std::string secret = "# sidetable CURVE secret key (Z85); keep it private. Public key: " + pair.public_key +
                       "\n" + pair.secret_key + "\n";
  Status s = write(prefix + ".key", 0600, secret);
  sodium_memzero(secret.data(), secret.size());
  if (!s.ok()) return s;
  return write(prefix + ".pub", 0644, "# sidetable CURVE public key (Z85)\n" + pair.public_key + "\n");
}

}  // namespace sidetable::curve
