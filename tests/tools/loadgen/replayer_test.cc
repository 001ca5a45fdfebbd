// Tests for hotkey::loadgen::Replayer (tools/loadgen/replayer.cc): a trace arrives intact
// and in order, and each pacing follows its clock.

#include "hotkey/loadgen/replayer.h"

#include <catch2/catch.hpp>

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "fake_clock.h"
#include "udp_sink.h"

namespace hotkey::loadgen {
namespace {

using hotkey::testing::FakeClock;
using hotkey::testing::UdpSink;

class TempTrace {
 public:
  explicit TempTrace(const std::string& text) {
    std::string pattern = "/tmp/hotkey_replay_test_XXXXXX";
    const int fd = mkstemp(pattern.data());
    REQUIRE(fd >= 0);
    close(fd);
    path_ = pattern;
    std::ofstream(path_, std::ios::binary) << text;
  }
  ~TempTrace() { std::remove(path_.c_str()); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

struct Replayed {
  std::vector<std::string> datagrams;
  std::vector<std::string> lines;  // every line of every datagram, in order
  ReplayStats stats;
};

Replayed Replay(const std::string& text, ReplayOptions o, const clock::Clock& clock) {
  TempTrace trace(text);
  UdpSink sink;
  o.to = sink.address();
  absl::StatusOr<std::unique_ptr<TraceReader>> reader = TraceReader::Open(trace.path());
  REQUIRE(reader.ok());
  absl::StatusOr<std::unique_ptr<Replayer>> replayer = Replayer::Create(o, clock);
  REQUIRE(replayer.ok());
  std::atomic<bool> stop{false};
  REQUIRE((*replayer)->Run(**reader, stop).ok());
  Replayed r;
  r.stats = (*replayer)->stats();
  r.datagrams = sink.WaitFor(r.stats.sent.datagrams);
  REQUIRE(r.datagrams.size() == r.stats.sent.datagrams);
  for (const std::string& d : r.datagrams) {
    REQUIRE(d.back() == '\n');
    for (absl::string_view line : absl::StrSplit(absl::string_view(d.data(), d.size() - 1), '\n')) {
      r.lines.emplace_back(line);
    }
  }
  return r;
}

TEST_CASE("Replayer: as fast as possible, every event arrives in order", "[loadgen]") {
  std::string text;
  std::vector<std::string> want;
  for (int i = 0; i < 10000; ++i) {
    const std::string line = std::string(i % 3 ? "r" : "w") + " key " + std::to_string(i);
    text += line + "\n";
    want.push_back(line);
  }
  text += "bogus line\n";
  FakeClock clock;
  const Replayed r = Replay(text, ReplayOptions{}, clock);
  CHECK(r.lines == want);
  CHECK(r.stats.sent.events == 10000);
  CHECK(r.stats.trace_lines == 10001);
  CHECK(r.stats.bad_lines == 1);
  CHECK(clock.sleeps() == 0);
  for (const std::string& d : r.datagrams) CHECK(d.size() <= 1400);
}

TEST_CASE("Replayer: with --speed, timestamps set the schedule", "[loadgen]") {
  // 4 s of trace at speed 2 is 2 s; events 1 s apart (0.5 s replayed) go out separately.
  const std::string text = "1000 r a\n1000 r b\n2000 w c\n3000 r d\n5000 r e\n";
  ReplayOptions o;
  o.speed = 2;
  FakeClock clock;
  const Replayed r = Replay(text, o, clock);
  CHECK(r.lines == std::vector<std::string>{"r a", "r b", "w c", "r d", "r e"});
  CHECK(r.datagrams.size() == 4);  // a and b share their time
  CHECK(r.stats.sent.elapsed >= absl::Seconds(2));
  CHECK(r.stats.sent.elapsed <= absl::Seconds(2) + absl::Milliseconds(2));
}

TEST_CASE("Replayer: untimed lines go with the event before them", "[loadgen]") {
  const std::string text = "0 r a\nr b\n1000 r c\n";
  ReplayOptions o;
  o.speed = 1;
  FakeClock clock;
  const Replayed r = Replay(text, o, clock);
  CHECK(r.datagrams.size() == 2);
  CHECK(r.datagrams[0] == "r a\nr b\n");
  CHECK(r.stats.untimed_events == 1);
}

TEST_CASE("Replayer: with --rate, events are spread evenly", "[loadgen]") {
  std::string text;
  for (int i = 0; i < 100; ++i) text += "r k" + std::to_string(i) + "\n";
  ReplayOptions o;
  o.rate = 50;  // event i due at i / 50 s: the last at 1.98 s
  o.sampling = 0.5;
  FakeClock clock;
  const Replayed r = Replay(text, o, clock);
  CHECK(r.stats.sent.events == 100);
  CHECK(r.stats.sent.elapsed >= absl::Milliseconds(1980));
  CHECK(r.stats.sent.elapsed <= absl::Milliseconds(2000));
  CHECK(r.datagrams.size() == 100);  // 20 ms apart: one event per datagram
  for (const std::string& d : r.datagrams) CHECK(d.rfind("!v1 rate=0.5\n", 0) == 0);
}

TEST_CASE("Replayer: a key too long for a datagram is skipped and counted", "[loadgen]") {
  ReplayOptions o;
  o.datagram_bytes = 100;
  FakeClock clock;
  const Replayed r = Replay("r ok\nr " + std::string(200, 'x') + "\nw fine\n", o, clock);
  CHECK(r.lines == std::vector<std::string>{"r ok", "w fine"});
  CHECK(r.stats.skipped_keys == 1);
}

TEST_CASE("Replayer: invalid options are rejected", "[loadgen]") {
  ReplayOptions o;
  o.speed = 2;
  o.rate = 10;
  CHECK_FALSE(o.Validate().ok());
  o = ReplayOptions{};
  o.speed = -1;
  CHECK_FALSE(o.Validate().ok());
  o = ReplayOptions{};
  o.sampling = 1.5;
  CHECK_FALSE(o.Validate().ok());
  o = ReplayOptions{};
  o.to = "nowhere";
  CHECK_FALSE(Replayer::Create(o).ok());
}

}  // namespace
}  // namespace hotkey::loadgen
