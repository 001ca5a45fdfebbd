#include "hotkey/aggregate/storage.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "byte_codec.h"
#include "hotkey/aggregate/episodes.h"
#include "hotkey/aggregate/history.h"

namespace hotkey::aggregate {

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

// The stamped file's first bytes: format 1 (the tracker after the stamp) and 2 (sections).
constexpr std::string_view kMagic = "HKSTATE1";
constexpr std::string_view kMagic2 = "HKSTATE2";
constexpr size_t kHeaderBytes = kMagic.size() + sizeof(int64_t);
constexpr size_t kSectionHeaderBytes = 4 + sizeof(uint64_t);
constexpr std::string_view kTrackerTag = "TRKR";
constexpr std::string_view kHistoryTag = "HIST";
constexpr std::string_view kEpisodesTag = "EPIS";

// The options a saved tracker must share with the daemon's to be restored.
bool SameOptions(const sketch::HeavyHittersOptions& a, const sketch::HeavyHittersOptions& b) {
  return a.candidates == b.candidates && a.sketch_bytes == b.sketch_bytes &&
         a.sketch_depth == b.sketch_depth && a.max_key_bytes == b.max_key_bytes &&
         a.half_life == b.half_life && a.seed == b.seed;
}

}  // namespace

std::string StateStore::Stamped(std::string_view tracker, absl::Time wall, std::string_view history,
                                std::string_view episodes) {
  std::string out;
  out.reserve(kHeaderBytes + 3 * kSectionHeaderBytes + tracker.size() + history.size() +
              episodes.size());
  internal::ByteWriter w(&out);
  w.Bytes(kMagic2);
  w.Put<int64_t>(absl::ToUnixNanos(wall));
  const auto section = [&w](std::string_view tag, std::string_view bytes) {
    w.Bytes(tag);
    w.Put<uint64_t>(bytes.size());
    w.Bytes(bytes);
  };
  section(kTrackerTag, tracker);
  if (!history.empty()) section(kHistoryTag, history);
  if (!episodes.empty()) section(kEpisodesTag, episodes);
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

uint64_t StateStore::MaxFileBytes(const sketch::HeavyHittersOptions& o) {
  // The current format (HeavyHitters::Serialize) holds at most sketch_bytes of sketch cells
  // and, per candidate, kEntryBytes of fixed fields plus its key, besides a fixed header.
  // Twice that, plus kSlackBytes (the header, and small trackers), leaves room for what an
  // older format of the same options held besides (a version 3 or 4 lobby, 16 bytes a way).
  // A larger file cannot be a tracker of these options: Load() would refuse it after
  // reading it anyway, so refusing it first loses nothing and bounds the memory a load
  // takes by the tracker's own size.
  constexpr uint64_t kEntryBytes = 8 + 8 + 2 * 8 + 2 * 8 + 8 + 1 + 4;  // see Serialize()
  constexpr uint64_t kSlackBytes = uint64_t{1} << 20;
  const uint64_t tracker =
      uint64_t{o.sketch_bytes} + uint64_t{o.candidates} * (kEntryBytes + o.max_key_bytes);
  return kHeaderBytes + 2 * tracker + kSlackBytes + 3 * kSectionHeaderBytes +
         aggregate::History::MaxSerializedBytes() +
         aggregate::EpisodeLog::MaxSerializedBytes(aggregate::EpisodeLog::kDefaultCapacity);
}

StateStore::Loaded StateStore::Load(const sketch::HeavyHittersOptions& expected, absl::Time mono,
                                    absl::Time wall, const RestoreSections& restore) const {
  Loaded out;
  // A temporary file left by a crash mid-write is never the state: remove it.
  std::error_code ec;
  std::filesystem::remove(absl::StrCat(path_, ".tmp"), ec);
  const auto move_aside = [&](std::string problem) {
    out.problem = std::move(problem);
    out.moved_to = absl::StrCat(path_, ".bad-", absl::ToUnixSeconds(wall));
    if (::rename(path_.c_str(), out.moved_to.c_str()) != 0) {
      out.moved_to.clear();
      out.problem += absl::StrCat(" (and it could not be moved aside: ", std::strerror(errno), ")");
    }
    return out;
  };
  // O_NONBLOCK: opening a FIFO with no writer, or a device, must not wait. The file is
  // checked on the descriptor it is read from, so it cannot change in between.
  const int fd = ::open(path_.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    const int open_errno = errno;
    struct stat st;
    if (open_errno == ENOENT) return out;  // first start
    if (::stat(path_.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
      return move_aside("not a regular file");  // a socket cannot even be opened
    }
    out.problem = absl::StrCat("cannot read ", path_, ": ", std::strerror(open_errno));
    return out;
  }
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    out.problem = absl::StrCat("cannot stat ", path_, ": ", std::strerror(errno));
    return out;
  }
  if (!S_ISREG(st.st_mode)) return move_aside("not a regular file");
  const uint64_t max_bytes = MaxFileBytes(expected);
  const auto too_large = [&] {
    return move_aside(absl::StrCat("larger than ", max_bytes,
                                   " bytes, the most a tracker of these --track.* options saves"));
  };
  if (static_cast<uint64_t>(st.st_size) > max_bytes) return too_large();
  // Read up to one byte past the cap: a file that grew since fstat() is refused too.
  std::string file(static_cast<size_t>(st.st_size) + 1, '\0');
  size_t got = 0;
  for (;;) {
    if (got == file.size()) {
      if (file.size() > max_bytes) return too_large();
      file.resize(std::min<uint64_t>(2 * file.size(), max_bytes + 1));
    }
    const ssize_t n = ::read(fd, file.data() + got, file.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      out.problem = absl::StrCat("cannot read ", path_, ": ", std::strerror(errno));
      return out;
    }
    if (n == 0) break;
    got += static_cast<size_t>(n);
  }
  file.resize(got);
  std::string_view data = file;
  absl::Duration downtime = absl::ZeroDuration();  // unknown without a stamp
  absl::Time saved = absl::InfinitePast();
  std::string_view history, episodes;
  const bool v1 = data.substr(0, kMagic.size()) == kMagic;
  const bool v2 = data.substr(0, kMagic2.size()) == kMagic2;
  if ((v1 || v2) && data.size() >= kHeaderBytes) {
    internal::ByteReader header(data.substr(kMagic.size()));
    saved = absl::FromUnixNanos(header.Get<int64_t>());
    downtime = std::max(wall - saved, absl::ZeroDuration());  // a clock stepped back: none
    data.remove_prefix(kHeaderBytes);
  }
  if (v2) {
    internal::ByteReader rest(data);
    std::string_view tracker;
    bool has_tracker = false;
    while (rest.remaining() > 0) {
      if (rest.remaining() < kSectionHeaderBytes) return move_aside("a section header is cut");
      const std::string_view tag = rest.Bytes(4);
      const uint64_t n = rest.Get<uint64_t>();
      if (n > rest.remaining()) return move_aside("a section is cut");
      const std::string_view bytes = rest.Bytes(n);
      if (tag == kTrackerTag) {
        tracker = bytes;
        has_tracker = true;
      } else if (tag == kHistoryTag) {
        history = bytes;
      } else if (tag == kEpisodesTag) {
        episodes = bytes;
      }  // else a later format's section: skipped
    }
    if (!has_tracker) return move_aside("no tracker section");
    data = tracker;
  }
  absl::StatusOr<sketch::HeavyHitters> hh =
      sketch::HeavyHitters::Deserialize(data, mono - downtime);
  if (hh.ok() && !SameOptions(hh->options(), expected)) {
    hh = absl::FailedPreconditionError(
        "saved with other tracker options (--track.candidates, --track.sketch-bytes, "
        "--track.sketch-depth, --key.max-bytes or --track.half-life)");
  }
  if (!hh.ok()) return move_aside(std::string(hh.status().message()));
  if (restore) {
    if (absl::Status r = restore(history, episodes, saved); !r.ok()) {
      return move_aside(std::string(r.message()));
    }
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

}  // namespace hotkey::aggregate
