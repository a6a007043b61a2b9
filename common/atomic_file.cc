#include "common/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace sidetable::common {
namespace {

Status FileErrno(int err, const std::string& what, const std::string& path) {
  const Code code = err == ENOSPC || err == EDQUOT ? Code::kInsufficientStorage : Code::kInternal;
  return Status(code, what + " " + path + ": " + std::strerror(err));
}

// Writes all of `text` to `fd`; 0 or the errno.
int WriteAll(int fd, const std::string& text) {
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno;
    done += static_cast<size_t>(n);
  }
  return 0;
}

}  // namespace

Status WriteFileAtomically(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return FileErrno(errno, "creating", tmp);
  Status s;
  if (const int err = WriteAll(fd, text); err != 0) {
    s = FileErrno(err, "writing", tmp);
  } else if (::fsync(fd) != 0) {
    s = FileErrno(errno, "syncing", tmp);
  }
  if (::close(fd) != 0 && s.ok()) s = FileErrno(errno, "closing", tmp);
  if (s.ok() && ::rename(tmp.c_str(), path.c_str()) != 0)
    s = FileErrno(errno, "renaming over", path);
  if (!s.ok()) {
    ::unlink(tmp.c_str());  // a failed write leaves nothing beside the file
    return s;
  }
  const size_t slash = path.rfind('/');
  return SyncDirectory(slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash));
}

Status SyncDirectory(const std::string& dir) {
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) return FileErrno(errno, "opening the directory", dir);
  const int synced = ::fsync(dfd) == 0 ? 0 : errno;
  ::close(dfd);
  if (synced != 0) return FileErrno(synced, "syncing the directory", dir);
  return Status::OK();
}

}  // namespace sidetable::common
