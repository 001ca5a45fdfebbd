// Tests for the hotkey-sim binary (tools/sim/): exit codes and messages of each command,
// run as a child process. The path comes from CMake (HOTKEY_SIM_PATH).

#include <catch2/catch.hpp>

#include <sys/wait.h>

#include <cstdio>
#include <string>

#include "udp_sink.h"

namespace {

struct Result {
  int exit_code;
  std::string out;  // stdout and stderr together
};

Result Sim(const std::string& args) {
  const std::string command = std::string(HOTKEY_SIM_PATH) + " " + args + " 2>&1";
  FILE* p = popen(command.c_str(), "r");
  REQUIRE(p != nullptr);
  Result r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) r.out.append(buf, n);
  const int status = pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

using Catch::Matchers::Contains;

TEST_CASE("hotkey-sim: model prints a row per strategy and the advice", "[sim]") {
  const Result r = Sim("model");
  CHECK(r.exit_code == 0);
  for (const char* row : {"none ", "cache ", "replicate ", "split ", "split_cache "}) {
    CHECK_THAT(r.out, Contains(row));
  }
  CHECK_THAT(r.out, Contains("150.0%"));  // none: 5000 + 10000 on one shard of 10000
  CHECK_THAT(r.out, Contains("advice: cache"));
}

TEST_CASE("hotkey-sim: model honours --order and reports isolate", "[sim]") {
  const Result r = Sim("model --order replicate,split --hot-share=0.2");
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.out, !Contains("split_cache"));
  CHECK_THAT(r.out, Contains("advice: isolate"));
}

TEST_CASE("hotkey-sim: bad input exits 2 with a message", "[sim]") {
  for (const char* args : {"model --replicas 9",
                           "model --hot-share abc",
                           "model --hot-share 1.5",
                           "model --order none,teleport",
                           "model --order none,none",
                           "model --shards",
                           "model --bogus 1",
                           "model --refresh never",
                           "model extra",
                           "frobnicate",
                           "",
                           "send",
                           "send --to 127.0.0.1:1 --rate -5",
                           "send --to 127.0.0.1:1 --celebrity k",
                           "send --to 127.0.0.1:1 --celebrity k:2",
                           "send --to 127.0.0.1:1 --sampling 0",
                           "replay --to 127.0.0.1:1",
                           "replay a b --to 127.0.0.1:1",
                           "replay t --to 127.0.0.1:1 --speed 1 --rate 1",
                           "replay t --to 127.0.0.1:1 --speed 0"}) {
    INFO("hotkey-sim " << args);
    const Result r = Sim(args);
    CHECK(r.exit_code == 2);
    CHECK_FALSE(r.out.empty());
  }
  CHECK_THAT(Sim("model --replicas 9").out, Contains("replicas must be in [1, shards=8]"));
}

TEST_CASE("hotkey-sim: help is printed for the tool and each command", "[sim]") {
  CHECK_THAT(Sim("--help").out, Contains("hotkey-sim model"));
  for (const char* c : {"model", "send", "replay"}) {
    const Result r = Sim(std::string(c) + " --help");
    CHECK(r.exit_code == 0);
    CHECK_THAT(r.out, Contains("--to") || Contains("--hot-share"));
  }
  CHECK_THAT(Sim("help send").out, Contains("--celebrity"));
}

TEST_CASE("hotkey-sim: send reaches a receiver and reports what it sent", "[sim]") {
  hotkey::testing::UdpSink sink;
  const Result r = Sim("send --to " + sink.address() +
                       " --rate 2000 --duration 0.5s --celebrity user:42:0.5:0.1 --seed 3");
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.out, Contains("sent 1000 events"));
  // 1000 events due every 0.5 ms go out in about 500 datagrams (1 ms wake-ups).
  std::string all;
  for (const std::string& d : sink.WaitFor(400)) all += d;
  CHECK_THAT(all, Contains("r user:42\n"));  // "user:42" parsed as the key, 0.5 as share
  CHECK_THAT(all, !Contains(" user\n"));
}

TEST_CASE("hotkey-sim: a missing trace is a runtime error (exit 1)", "[sim]") {
  const Result r = Sim("replay /nonexistent/trace.txt --to 127.0.0.1:9");
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.out, Contains("cannot open trace"));
}

}  // namespace
