// Tests of StateStore and StateWriter (daemon/program/daemon/storage.h): atomic saves, a restored
// tracker placed on the loading process's monotonic clock by the wall time between save and load,
// and writes that run on the writer's own thread, newest first.

#include "hotkey/aggregate/storage.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include "absl/strings/str_cat.h"
#include "hotkey/aggregate/episodes.h"
#include "hotkey/aggregate/history.h"
#include "hotkey/sketch/heavy_hitters.h"

namespace hotkey::aggregate {
namespace {

// A fresh directory under the test's temporary directory, removed at the end.
class TempDir {
 public:
  TempDir() {
    path_ = std::filesystem::temp_directory_path() /
            absl::StrCat("hotkey_storage_test_", ::getpid(), "_", counter_++);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  std::string File(std::string_view name) const { return (path_ / std::string(name)).string(); }

 private:
  static inline int counter_ = 0;
  std::filesystem::path path_;
};

std::string Read(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

sketch::HeavyHittersOptions Tracker() {
  sketch::HeavyHittersOptions o;
  o.candidates = 16;
  o.half_life = absl::Seconds(1);
  return o;
}

TEST_CASE(
    "StateStore: a restored tracker decays over the wall time since the save, on this "
    "process's monotonic clock",
    "[daemon][storage]") {
  TempDir dir;
  StateStore store(dir.File("state"));
  // The saving process: its monotonic clock read 1000 s; the wall clock 1,800,000,000 s.
  const absl::Time saved_mono = absl::FromUnixSeconds(1000);
  const absl::Time saved_wall = absl::FromUnixSeconds(1'800'000'000);
  sketch::HeavyHitters t = *sketch::HeavyHitters::Create(Tracker(), saved_mono);
  for (int i = 0; i < 64; ++i) t.Update("k", sketch::Op::kRead);
  REQUIRE(store.Save(t, saved_wall).ok());
  // The loading process's monotonic clock reads 5 s (a reboot); 3 s of wall time passed.
  const absl::Time mono = absl::FromUnixSeconds(5);
  StateStore::Loaded l = store.Load(Tracker(), mono, saved_wall + absl::Seconds(3));
  INFO(l.problem);
  REQUIRE(l.tracker);
  CHECK(l.tracker->now() == mono);
  CHECK(l.tracker->Estimate("k") == Approx(64.0 / 8));  // three half-lives
  // Updates go on from there: one more event now weighs 1 against the 8 restored.
  l.tracker->Update("k", sketch::Op::kRead);
  CHECK(l.tracker->Estimate("k") == Approx(9));

  SECTION("a wall clock stepped back past the save counts as no downtime") {
    StateStore::Loaded back = store.Load(Tracker(), mono, saved_wall - absl::Hours(1));
    REQUIRE(back.tracker);
    CHECK(back.tracker->now() == mono);
    CHECK(back.tracker->Estimate("k") == Approx(64));
  }
  SECTION("a file without the stamp (an older daemon's) is restored with no downtime") {
    std::ofstream(dir.File("state"), std::ios::binary | std::ios::trunc) << t.Serialize();
    StateStore::Loaded old = store.Load(Tracker(), mono, saved_wall + absl::Seconds(3));
    REQUIRE(old.tracker);
    CHECK(old.tracker->now() == mono);
    CHECK(old.tracker->Estimate("k") == Approx(64));
  }
  SECTION("a file cut inside its tracker is moved aside, named by the wall clock") {
    const std::string bytes = Read(dir.File("state"));
    std::ofstream(dir.File("state"), std::ios::binary | std::ios::trunc)
        << bytes.substr(0, bytes.size() / 2);
    StateStore::Loaded cut = store.Load(Tracker(), mono, saved_wall + absl::Seconds(3));
    CHECK_FALSE(cut.tracker);
    CHECK_FALSE(cut.problem.empty());
    CHECK(cut.moved_to == dir.File("state") + ".bad-1800000003");
  }
}

// A history of a few windows and an episode log of two episodes, the second open.
struct Recorded {
  aggregate::History history{aggregate::HistoryOptions{}};
  aggregate::EpisodeLog episodes{10, 128};
  Recorded() {
    const absl::Time wall = absl::FromUnixSeconds(1'800'000'000);
    for (int i = 0; i <= 25; ++i) {
      aggregate::Snapshot s;
      s.time = wall + absl::Seconds(i);
      s.ops_per_second[0] = 1000;
      aggregate::KeySnapshot k;
      k.hash = 1;
      k.label = "user:42";
      k.ops_per_second[0] = 300;
      k.share = 0.3;
      s.keys.push_back(k);
      history.Record(s, absl::FromUnixSeconds(1000 + i));
      episodes.Begin(s.time);
      if (i < 5 || i > 20) {
        episodes.Hot(aggregate::EpisodeLog::Kind::kKey, 1, "user:42", 0.3, 300, 0.1, "cache");
      }
      episodes.Finish();
    }
  }
};

// Restores into `r`, as the daemon does.
StateStore::RestoreSections Into(Recorded* r) {
  return [r](std::string_view h, std::string_view e, absl::Time saved) {
    if (!h.empty()) {
      if (absl::Status s = r->history.Deserialize(h); !s.ok()) return s;
    }
    if (!e.empty()) return r->episodes.Deserialize(e, saved);
    return absl::OkStatus();
  };
}

TEST_CASE("StateStore: the history and the episodes survive a save and a load",
          "[daemon][storage]") {
  TempDir dir;
  StateStore store(dir.File("state"));
  const absl::Time wall = absl::FromUnixSeconds(1'800'000'030);
  sketch::HeavyHitters t = *sketch::HeavyHitters::Create(Tracker(), absl::FromUnixSeconds(1));
  t.Update("user:42", sketch::Op::kRead);
  Recorded before;
  REQUIRE(before.history.fine_count() == 2);
  REQUIRE(before.episodes.count() == 2);
  REQUIRE(store
              .SaveBytes(StateStore::Stamped(t.Serialize(), wall, before.history.Serialize(),
                                             before.episodes.Serialize()))
              .ok());
  CHECK(Read(dir.File("state")).substr(0, 8) == "HKSTATE2");

  Recorded after;  // a fresh daemon's, recorded over by the load
  StateStore::Loaded l =
      store.Load(Tracker(), absl::FromUnixSeconds(5), wall + absl::Seconds(1), Into(&after));
  INFO(l.problem);
  REQUIRE(l.tracker);
  CHECK(l.tracker->Estimate("user:42") > 0);
  CHECK(after.history.fine_count() == 2);
  CHECK(after.history.Serialize() == before.history.Serialize());
  CHECK(after.episodes.count() == 2);
  CHECK(after.episodes.open_count() == 0);  // the open one was closed at the save
  CHECK(after.episodes.Json(10).find("\"interrupted\":true") != std::string::npos);

  SECTION("a format 1 file (tracker after the stamp) loads with no history") {
    std::string v1 = "HKSTATE1";
    const int64_t ns = absl::ToUnixNanos(wall);
    for (int i = 0; i < 8; ++i) v1.push_back(static_cast<char>((ns >> (8 * i)) & 0xff));
    v1 += t.Serialize();
    REQUIRE(store.SaveBytes(v1).ok());
    bool called = false;
    StateStore::Loaded old =
        store.Load(Tracker(), absl::FromUnixSeconds(5), wall,
                   [&](std::string_view h, std::string_view e, absl::Time saved) {
                     called = true;
                     CHECK(h.empty());
                     CHECK(e.empty());
                     CHECK(saved == wall);
                     return absl::OkStatus();
                   });
    REQUIRE(old.tracker);
    CHECK(called);
  }
  SECTION("a section of a later format is skipped") {
    std::string bytes = StateStore::Stamped(t.Serialize(), wall);
    bytes += "NEW!";
    bytes.append("\x03\0\0\0\0\0\0\0abc", 11);
    REQUIRE(store.SaveBytes(bytes).ok());
    CHECK(store.Load(Tracker(), absl::FromUnixSeconds(5), wall).tracker);
  }
  SECTION("a corrupt history, a cut section or no tracker: moved aside, started empty") {
    std::string bytes;
    SECTION("history") {
      std::string h = before.history.Serialize();
      h.resize(h.size() - 3);
      bytes = StateStore::Stamped(t.Serialize(), wall, h, before.episodes.Serialize());
    }
    SECTION("episodes") {
      bytes = StateStore::Stamped(t.Serialize(), wall, before.history.Serialize(), "\x01junk");
    }
    SECTION("cut in a section") {
      bytes = StateStore::Stamped(t.Serialize(), wall, before.history.Serialize());
      bytes.resize(bytes.size() - 10);
    }
    SECTION("no tracker section") {
      bytes = "HKSTATE2";
      bytes.append(8, '\0');
    }
    REQUIRE(store.SaveBytes(bytes).ok());
    Recorded other;
    StateStore::Loaded bad = store.Load(Tracker(), absl::FromUnixSeconds(5),
                                        absl::FromUnixSeconds(1'800'000'100), Into(&other));
    CHECK_FALSE(bad.tracker);
    CHECK_FALSE(bad.problem.empty());
    CHECK(bad.moved_to == dir.File("state") + ".bad-1800000100");
  }
}

TEST_CASE("StateStore: a full tracker with the longest keys fits the file cap",
          "[daemon][storage]") {
  sketch::HeavyHittersOptions small = Tracker();
  sketch::HeavyHittersOptions big;
  big.candidates = 4096;
  big.max_key_bytes = 256;
  big.sketch_bytes = 4 << 20;
  for (const sketch::HeavyHittersOptions& o : {small, big, sketch::HeavyHittersOptions{}}) {
    sketch::HeavyHitters t = *sketch::HeavyHitters::Create(o, absl::FromUnixSeconds(1));
    for (uint32_t i = 0; i < 2 * o.candidates; ++i) {
      std::string key(o.max_key_bytes, 'k');
      key.replace(0, 10, absl::StrCat(1'000'000'000 + i));
      t.Update(key, sketch::Op::kWrite);
    }
    REQUIRE(t.size() == o.candidates);
    // With the largest history and episode log (history_test.cc and episodes_test.cc pin
    // that they serialise to at most these).
    const std::string bytes = StateStore::Stamped(
        t.Serialize(), absl::FromUnixSeconds(2),
        std::string(aggregate::History::MaxSerializedBytes(), 'h'),
        std::string(
            aggregate::EpisodeLog::MaxSerializedBytes(aggregate::EpisodeLog::kDefaultCapacity),
            'e'));
    INFO(o.candidates << " candidates: " << bytes.size() << " bytes");
    CHECK(bytes.size() <= StateStore::MaxFileBytes(o));
    // The cap follows the tracker's size, not a constant: the big tracker's is above 8 MiB.
    if (o.candidates == big.candidates) CHECK(StateStore::MaxFileBytes(o) > (8u << 20));
  }
}

TEST_CASE("StateStore: a file larger than its tracker can be is moved aside unread",
          "[daemon][storage]") {
  TempDir dir;
  StateStore store(dir.File("state"));
  const absl::Time wall = absl::FromUnixSeconds(1'800'000'000);
  SECTION("a sparse 64 GiB file: read whole it would exhaust memory") {
    std::ofstream(dir.File("state"), std::ios::binary) << "HKSTATE1";
    std::filesystem::resize_file(dir.File("state"), uint64_t{64} << 30);
  }
  SECTION("one byte over the cap") {
    std::ofstream(dir.File("state"), std::ios::binary)
        << std::string(StateStore::MaxFileBytes(Tracker()) + 1, 'x');
  }
  StateStore::Loaded l = store.Load(Tracker(), absl::FromUnixSeconds(5), wall);
  CHECK_FALSE(l.tracker);
  CHECK(l.problem.find("larger than") != std::string::npos);
  CHECK(l.moved_to == dir.File("state") + ".bad-1800000000");
  CHECK_FALSE(std::filesystem::exists(dir.File("state")));
  CHECK(std::filesystem::exists(l.moved_to));
}

TEST_CASE("StateStore: a FIFO, a device or a directory at the path is moved aside, never read",
          "[daemon][storage]") {
  TempDir dir;
  StateStore store(dir.File("state"));
  const absl::Time wall = absl::FromUnixSeconds(1'800'000'000);
  SECTION("a FIFO with no writer: a blocking open or read would hang the start") {
    REQUIRE(::mkfifo(dir.File("state").c_str(), 0600) == 0);
  }
  SECTION("a FIFO with a writer that never writes") {
    REQUIRE(::mkfifo(dir.File("state").c_str(), 0600) == 0);
    // Opened read-write, so the FIFO has a writer for the whole test.
    const int writer = ::open(dir.File("state").c_str(), O_RDWR | O_NONBLOCK);
    REQUIRE(writer >= 0);
    StateStore::Loaded l = store.Load(Tracker(), absl::FromUnixSeconds(5), wall);
    ::close(writer);
    CHECK(l.problem == "not a regular file");
    CHECK(l.moved_to == dir.File("state") + ".bad-1800000000");
    return;
  }
  SECTION("a link to a character device") {
    std::filesystem::create_symlink("/dev/zero", dir.File("state"));
  }
  SECTION("a directory") { std::filesystem::create_directory(dir.File("state")); }
  StateStore::Loaded l = store.Load(Tracker(), absl::FromUnixSeconds(5), wall);
  CHECK_FALSE(l.tracker);
  CHECK(l.problem == "not a regular file");
  CHECK(l.moved_to == dir.File("state") + ".bad-1800000000");
  CHECK_FALSE(std::filesystem::exists(std::filesystem::symlink_status(dir.File("state"))));
  // The next start finds no file: a first start, no problem.
  StateStore::Loaded next = store.Load(Tracker(), absl::FromUnixSeconds(6), wall);
  CHECK(next.problem.empty());
  CHECK_FALSE(next.tracker);
}

TEST_CASE("StateWriter: writes run on the writer's thread, not the caller's", "[daemon][storage]") {
  TempDir dir;
  StateStore store(dir.File("state"));
  std::mutex mu;
  std::vector<std::thread::id> writers;
  std::vector<bool> ok;
  {
    StateWriter w(
        store,
        [&](const absl::Status& s) {
          std::lock_guard<std::mutex> l(mu);
          ok.push_back(s.ok());
        },
        [&] {
          std::lock_guard<std::mutex> l(mu);
          writers.push_back(std::this_thread::get_id());
        });
    w.Submit("one");
    w.Finish();
    CHECK(w.writes() == 1);
  }
  REQUIRE(writers.size() == 1);
  CHECK(writers[0] != std::this_thread::get_id());
  CHECK(ok == std::vector<bool>{true});
  CHECK(Read(dir.File("state")) == "one");
}

TEST_CASE("StateWriter: at most one write waits, the newest wins, and Finish writes it",
          "[daemon][storage]") {
  TempDir dir;
  StateStore store(dir.File("state"));
  // The first write blocks in the hook until released, so the next Submit()s wait.
  std::mutex mu;
  std::condition_variable cv;
  bool started = false, release = false;
  StateWriter w(store, nullptr, [&] {
    std::unique_lock<std::mutex> l(mu);
    if (started) return;  // only the first write blocks
    started = true;
    cv.notify_all();
    cv.wait(l, [&] { return release; });
  });
  w.Submit("first");
  {
    std::unique_lock<std::mutex> l(mu);
    cv.wait(l, [&] { return started; });
  }
  w.Submit("second");
  w.Submit("third");  // replaces "second", never written
  w.Submit("newest");
  {
    std::lock_guard<std::mutex> l(mu);
    release = true;
  }
  cv.notify_all();
  w.Finish();
  CHECK(w.writes() == 2);  // "first", then "newest"
  CHECK(w.replaced() == 2);
  CHECK(Read(dir.File("state")) == "newest");
  w.Submit("after");  // ignored after Finish()
  w.Finish();
  CHECK(Read(dir.File("state")) == "newest");
}

TEST_CASE("StateWriter: a failed write is reported and leaves no temporary file",
          "[daemon][storage]") {
  TempDir dir;
  StateStore store(dir.File("missing/state"));  // no such directory
  std::vector<absl::Status> results;
  StateWriter w(store, [&](const absl::Status& s) { results.push_back(s); });
  w.Submit("data");
  w.Finish();
  REQUIRE(results.size() == 1);
  CHECK_FALSE(results[0].ok());
  CHECK_FALSE(std::filesystem::exists(dir.File("missing/state.tmp")));
}

}  // namespace
}  // namespace hotkey::aggregate
