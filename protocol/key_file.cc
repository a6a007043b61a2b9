#include "protocol/key_file.h"

#include <fcntl.h>
#include <sodium.h>
#include <sys/stat.h>
#include <unistd.h>

namespace sidetable::keyfile {

Result<std::string> Read(const std::string& path, bool owner_only, size_t max_bytes) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status(Code::kInvalidInput, "cannot open key file " + path);
  struct stat st;
  std::string text;
  Status s;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    s = Status(Code::kInvalidInput, "key file " + path + " is not a regular file");
  } else if (owner_only && (st.st_mode & (S_IRWXG | S_IRWXO))) {
    s = Status(Code::kInvalidInput,
               "key file " + path + " is accessible by group or others: chmod 600 " + path);
  } else if (static_cast<size_t>(st.st_size) > max_bytes) {
    s = Status(Code::kInvalidInput, "key file " + path + " is larger than " + std::to_string(max_bytes) +
                                        " bytes: not a key file");
  } else {
    char buf[4096];
    ssize_t n;
    // Sized once: a growing string would leave copies of the key in the
    // buffers it frees.
    text.reserve(static_cast<size_t>(st.st_size) + sizeof buf);
    while ((n = ::read(fd, buf, sizeof buf)) > 0 && text.size() <= max_bytes) {
      text.append(buf, static_cast<size_t>(n));
    }
    if (n < 0) s = Status(Code::kInvalidInput, "cannot read key file " + path);
    sodium_memzero(buf, sizeof buf);
  }
  ::close(fd);
  if (!s.ok()) {
    sodium_memzero(text.data(), text.size());
    return s;
  }
  return text;
}

void Wipe(std::string* bytes) { sodium_memzero(bytes->data(), bytes->size()); }

}  // namespace sidetable::keyfile
