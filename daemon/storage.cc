#include "storage.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
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

// The stamped file's first bytes.
constexpr std::string_view kMagic = "HKSTATE1";
constexpr size_t kHeaderBytes = kMagic.size() + sizeof(int64_t);

// The options a saved tracker must share with the daemon's to be restored.
bool SameOptions(const sketch::HeavyHittersOptions& a, const sketch::HeavyHittersOptions& b) {
  return a.candidates == b.candidates && a.sketch_bytes == b.sketch_bytes &&
         a.sketch_depth == b.sketch_depth && a.max_key_bytes == b.max_key_bytes &&
         a.half_life == b.half_life && a.seed == b.seed;
}

}  // namespace

std::string StateStore::Stamped(std::string_view tracker, absl::Time wall) {
  std::string out(kMagic);
  const int64_t ns = absl::ToUnixNanos(wall);
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((ns >> (8 * i)) & 0xff));
  out.append(tracker);
  return out;
}

absl::Status StateStore::SaveBytes(const std::string& data) const {
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

StateStore::Loaded StateStore::Load(const sketch::HeavyHittersOptions& expected, absl::Time mono,
                                    absl::Time wall) const {
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
  const std::string file = ss.str();
  std::string_view data = file;
  absl::Duration downtime = absl::ZeroDuration();  // unknown without a stamp
  if (data.substr(0, kMagic.size()) == kMagic && data.size() >= kHeaderBytes) {
    uint64_t ns = 0;
    for (int i = 0; i < 8; ++i) {
      ns |= uint64_t{static_cast<unsigned char>(data[kMagic.size() + i])} << (8 * i);
    }
    const absl::Time saved = absl::FromUnixNanos(static_cast<int64_t>(ns));
    downtime = std::max(wall - saved, absl::ZeroDuration());  // a clock stepped back: none
    data.remove_prefix(kHeaderBytes);
  }
  absl::StatusOr<sketch::HeavyHitters> hh =
      sketch::HeavyHitters::Deserialize(data, mono - downtime);
  if (hh.ok() && !SameOptions(hh->options(), expected)) {
    hh = absl::FailedPreconditionError(
        "saved with other tracker options (--track.candidates, --track.sketch-bytes, "
        "--key.max-bytes or --track.half-life)");
  }
  if (!hh.ok()) {
    out.problem = std::string(hh.status().message());
    out.moved_to = absl::StrCat(path_, ".bad-", absl::ToUnixSeconds(wall));
    if (::rename(path_.c_str(), out.moved_to.c_str()) != 0) {
      out.moved_to.clear();
      out.problem += absl::StrCat(" (and it could not be moved aside: ", std::strerror(errno), ")");
    }
    return out;
  }
  hh->Advance(mono);  // the downtime decays its weights like any other time
  out.tracker = *std::move(hh);
  return out;
}

StateWriter::StateWriter(const StateStore& store, Done done, std::function<void()> before_write)
    : store_(store),
      done_(std::move(done)),
      before_write_(std::move(before_write)),
      thread_([this] { Loop(); }) {}

StateWriter::~StateWriter() { Finish(); }

void StateWriter::Submit(std::string data) {
  {
    std::lock_guard<std::mutex> l(mu_);
    if (finishing_) return;
    if (pending_) ++replaced_;
    pending_ = std::move(data);
  }
  cv_.notify_one();
}

void StateWriter::Finish() {
  {
    std::lock_guard<std::mutex> l(mu_);
    finishing_ = true;
  }
  cv_.notify_one();
  if (thread_.joinable()) thread_.join();
}

uint64_t StateWriter::writes() const {
  std::lock_guard<std::mutex> l(mu_);
  return writes_;
}

uint64_t StateWriter::replaced() const {
  std::lock_guard<std::mutex> l(mu_);
  return replaced_;
}

void StateWriter::Loop() {
  std::unique_lock<std::mutex> l(mu_);
  for (;;) {
    cv_.wait(l, [this] { return pending_.has_value() || finishing_; });
    if (!pending_) return;  // finishing, nothing waits
    std::string data = std::move(*pending_);
    pending_.reset();
    l.unlock();
    if (before_write_) before_write_();
    const absl::Status s = store_.SaveBytes(data);
    if (done_) done_(s);
    l.lock();
    ++writes_;
  }
}

}  // namespace hotkey::daemon
