#include "sidecar/cluster/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace sidetable::cluster {
namespace {

Status FileErrno(const std::string& what, const std::string& path) {
  return Status(Code::kInternal, "cluster: " + what + " " + path + ": " + std::strerror(errno));
}

}  // namespace

Status WriteFileAtomically(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return FileErrno("creating", tmp);
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      Status s = FileErrno("writing", tmp);
      ::close(fd);
      return s;
    }
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0) {
    Status s = FileErrno("syncing", tmp);
    ::close(fd);
    return s;
  }
  if (::close(fd) != 0) return FileErrno("closing", tmp);
  if (::rename(tmp.c_str(), path.c_str()) != 0) return FileErrno("renaming over", path);
  const size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "."
                          : slash == 0               ? "/"
                                                     : path.substr(0, slash);
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) return FileErrno("opening the directory of", path);
  const int synced = ::fsync(dfd);
  ::close(dfd);
  if (synced != 0) return FileErrno("syncing the directory of", path);
  return Status::OK();
}

}  // namespace sidetable::cluster
