// Tests of StateStore and StateWriter (daemon/storage.h): atomic saves, and writes that run
// on the writer's own thread, newest first.

#include "storage.h"

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

namespace hotkey::daemon {
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
}  // namespace hotkey::daemon
