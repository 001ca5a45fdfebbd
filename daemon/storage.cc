#include "storage.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"

namespace hotkey::daemon {

namespace {

absl::Status Errno(std::string_view what, const std::string& path) {
  return absl::InternalError(
      absl::StrCat(std::string(what), " ", path, ": ", std::strerror(errno)));
}

// Writes all of `data` to `fd`, retrying short writes and EINTR.
bool WriteAll(int fd, const std::string& data) {
  size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    done += static_cast<size_t>(n);
  }
  return true;
}

bool SameOptions(const sketch::HeavyHittersOptions& a, const sketch::HeavyHittersOptions& b) {
  return a.candidates == b.candidates && a.sketch_bytes == b.sketch_bytes &&
         a.sketch_depth == b.sketch_depth && a.max_key_bytes == b.max_key_bytes &&
         a.half_life == b.half_life && a.seed == b.seed;
}

}  // namespace

absl::Status StateStore::Save(const sketch::HeavyHitters& tracker) const {
  const std::string data = tracker.Serialize();
  const std::string tmp = absl::StrCat(path_, ".tmp");
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return Errno("cannot create", tmp);
  if (!WriteAll(fd, data) || ::fsync(fd) != 0) {
    const absl::Status s = Errno("cannot write", tmp);
    ::close(fd);
    ::unlink(tmp.c_str());
    return s;
  }
  ::close(fd);
  if (::rename(tmp.c_str(), path_.c_str()) != 0) {
    const absl::Status s = Errno("cannot rename onto", path_);
    ::unlink(tmp.c_str());
    return s;
  }
  // The rename is durable only once the directory entry is on disk.
  const std::string dir = std::filesystem::path(path_).parent_path().string();
  const int dfd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
  return absl::OkStatus();
}

StateStore::Loaded StateStore::Load(const sketch::HeavyHittersOptions& expected,
                                    absl::Time now) const {
  Loaded out;
  // A temporary file left by a crash mid-write is never the state: remove it.
  std::error_code ec;
  std::filesystem::remove(absl::StrCat(path_, ".tmp"), ec);
  std::ifstream f(path_, std::ios::binary);
  if (!f) {
    if (std::filesystem::exists(path_, ec)) {
      out.problem = absl::StrCat("cannot read ", path_, ": ", std::strerror(errno));
    }
    return out;
  }
  std::stringstream ss;
  ss << f.rdbuf();
  const std::string data = ss.str();
  absl::StatusOr<sketch::HeavyHitters> hh = sketch::HeavyHitters::Deserialize(data);
  if (hh.ok() && !SameOptions(hh->options(), expected)) {
    hh = absl::FailedPreconditionError(
        "saved with other --track options (candidates, sketch bytes, stored key bytes or "
        "half-life)");
  }
  if (!hh.ok()) {
    out.problem = std::string(hh.status().message());
    out.moved_to = absl::StrCat(path_, ".bad-", absl::ToUnixSeconds(now));
    if (::rename(path_.c_str(), out.moved_to.c_str()) != 0) {
      out.moved_to.clear();
      out.problem += absl::StrCat(" (and it could not be moved aside: ", std::strerror(errno), ")");
    }
    return out;
  }
  hh->Advance(now);  // the downtime decays its weights like any other time
  out.tracker = *std::move(hh);
  return out;
}

}  // namespace hotkey::daemon
