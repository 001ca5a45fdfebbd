// hotkey-bench-daemon: hotkeyd end to end, as a user runs it.
//
// Starts the hotkeyd binary (one receiver thread) on loopback ports, drives it with
// hotkey::loadgen's Sender (sendmmsg, 1400-byte datagrams of ~80 Zipf-keyed events) from
// this process, and reads the daemon's own figures: CPU time from /proc/PID/stat, RSS from
// /proc/PID/status, events counted from its /metrics. Prints one JSON object per phase:
//
//   throughput   sender flat out: events counted per CPU-second of the daemon process
//   no_loss      offered --offered events/s (default 5M): sent vs counted, loss ratio
//   cardinality  --distinct keys (default 10M) sent once each: RSS before and after
//   detection    --detect-rate sampled events/s (default 500) with one key jumping to 30%
//                of them: time from its first event to hotkey_key_hot for it in /metrics
//
//   hotkey-bench-daemon [--hotkeyd PATH] [--phase NAME] [--seconds S] [--offered R]
//                       [--distinct N] [--detect-rate R] [-- extra hotkeyd flags...]

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "hotkey/config/flag_parser.h"
#include "hotkey/loadgen/sender.h"

namespace {

namespace asio = boost::asio;
namespace http = boost::beast::http;

struct Config {
  std::string hotkeyd;
  std::string phase;
  double seconds = 5;
  double offered = 5e6;
  uint64_t distinct = 10'000'000;
  double detect_rate = 500;
  std::vector<std::string> extra;
};

int FreePort(int type) {
  const int fd = socket(AF_INET, type, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  close(fd);
  return ntohs(a.sin_port);
}

// GET a path from the daemon; "" on any failure.
std::string Get(int port, const std::string& path) {
  try {
    asio::io_context io;
    asio::ip::tcp::socket s(io);
    s.connect({asio::ip::make_address("127.0.0.1"), static_cast<unsigned short>(port)});
    http::request<http::empty_body> req{http::verb::get, path, 11};
    req.set(http::field::host, "127.0.0.1");
    http::write(s, req);
    boost::beast::flat_buffer buf;
    http::response<http::string_body> res;
    http::read(s, buf, res);
    return res.body();
  } catch (const std::exception&) {
    return "";
  }
}

// The value of the first sample of `metric` whose line starts with it (labels included).
double Metric(const std::string& text, const std::string& prefix) {
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (!absl::StartsWith(line, prefix)) continue;
    double v;
    if (absl::SimpleAtod(line.substr(line.rfind(' ') + 1), &v)) return v;
  }
  return -1;
}

struct Proc {
  double cpu_s = 0;
  double rss_bytes = 0;
};

Proc ReadProc(pid_t pid) {
  Proc p;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string s((std::istreambuf_iterator<char>(stat)), {});
  const size_t paren = s.rfind(')');
  if (paren != std::string::npos) {
    std::vector<std::string> f = absl::StrSplit(s.substr(paren + 2), ' ');
    if (f.size() > 13) {
      p.cpu_s = (std::stod(f[11]) + std::stod(f[12])) / sysconf(_SC_CLK_TCK);
    }
  }
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) p.rss_bytes = std::stod(line.substr(6)) * 1024;
  }
  return p;
}

class Daemon {
 public:
  Daemon(const Config& c, const std::vector<std::string>& flags) {
    web_ = FreePort(SOCK_STREAM);
    udp_ = FreePort(SOCK_DGRAM);
    std::vector<std::string> args = {c.hotkeyd,
                                     absl::StrCat("--web.listen-address=127.0.0.1:", web_),
                                     absl::StrCat("--udp.listen-address=127.0.0.1:", udp_)};
    args.insert(args.end(), flags.begin(), flags.end());
    args.insert(args.end(), c.extra.begin(), c.extra.end());
    pid_ = fork();
    if (pid_ == 0) {
      std::vector<char*> argv;
      for (auto& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      freopen("/dev/null", "w", stderr);
      execv(argv[0], argv.data());
      _exit(127);
    }
    for (int i = 0; i < 100 && Get(web_, "/-/ready") != "Ready\n"; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
  ~Daemon() {
    kill(pid_, SIGTERM);
    waitpid(pid_, nullptr, 0);
  }
  double Events() const { return Metric(Get(web_, "/metrics"), "hotkey_events_received_total "); }
  double Drops() const { return Metric(Get(web_, "/metrics"), "hotkey_udp_kernel_drops_total "); }
  Proc proc() const { return ReadProc(pid_); }
  int web() const { return web_; }
  std::string to() const { return absl::StrCat("127.0.0.1:", udp_); }

 private:
  pid_t pid_;
  int web_, udp_;
};

// Sends with `o` for its duration on a thread of this process; returns the sender's stats.
hotkey::loadgen::SendStats Send(hotkey::loadgen::SendOptions o) {
  auto s = hotkey::loadgen::Sender::Create(o);
  if (!s.ok()) {
    std::fprintf(stderr, "sender: %s\n", std::string(s.status().message()).c_str());
    std::exit(1);
  }
  std::atomic<bool> stop{false};
  (void)(*s)->Run(stop);
  return (*s)->stats();
}

// Waits until the daemon's count stops moving (everything sent has been read).
double Settle(const Daemon& d) {
  double last = -2, now = d.Events();
  for (int i = 0; i < 50 && now != last; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    last = now;
    now = d.Events();
  }
  return now;
}

void Throughput(const Config& c) {
  Daemon d(c, {});
  hotkey::loadgen::SendOptions o;
  o.to = d.to();
  o.rate = 0;
  o.duration = absl::Seconds(c.seconds);
  const Proc before = d.proc();
  const double counted0 = d.Events();
  const auto st = Send(o);
  const double counted = Settle(d) - counted0;
  const Proc after = d.proc();
  const double cpu = after.cpu_s - before.cpu_s;
  std::printf(
      "{\"phase\":\"throughput\",\"events_sent\":%llu,\"events_counted\":%.0f,"
      "\"daemon_cpu_seconds\":%.2f,\"events_per_cpu_second\":%.0f,\"loss_ratio\":%.4f,"
      "\"kernel_drops\":%.0f,\"rss_bytes\":%.0f}\n",
      static_cast<unsigned long long>(st.events), counted, cpu, cpu > 0 ? counted / cpu : 0,
      st.events ? 1 - counted / st.events : 0, d.Drops(), after.rss_bytes);
}

void NoLoss(const Config& c) {
  Daemon d(c, {});
  hotkey::loadgen::SendOptions o;
  o.to = d.to();
  o.rate = c.offered;
  o.duration = absl::Seconds(c.seconds);
  const double counted0 = d.Events();
  const auto st = Send(o);
  const double counted = Settle(d) - counted0;
  const double achieved = st.events / absl::ToDoubleSeconds(st.elapsed);
  std::printf(
      "{\"phase\":\"no_loss\",\"offered_per_second\":%.0f,\"sent_per_second\":%.0f,"
      "\"events_sent\":%llu,\"events_counted\":%.0f,\"loss_ratio\":%.6f,\"kernel_drops\":%.0f}\n",
      c.offered, achieved, static_cast<unsigned long long>(st.events), counted,
      st.events ? 1 - counted / st.events : 0, d.Drops());
}

void Cardinality(const Config& c) {
  Daemon d(c, {});
  const Proc before = d.proc();
  hotkey::loadgen::SendOptions o;
  o.to = d.to();
  o.rate = 2e6;  // paced so the daemon counts every key (the phase measures memory, not speed)
  o.background_keys = c.distinct;
  o.zipf_s = 0.01;  // nearly uniform: almost every event a new key
  o.duration = absl::Seconds(c.distinct / o.rate);
  const auto st = Send(o);
  Settle(d);
  const Proc after = d.proc();
  std::printf(
      "{\"phase\":\"cardinality\",\"events_sent\":%llu,\"key_space\":%llu,\"rss_before_bytes\":%."
      "0f,"
      "\"rss_after_bytes\":%.0f,\"tracked_keys\":%.0f,\"sketch_bytes\":%.0f}\n",
      static_cast<unsigned long long>(st.events), static_cast<unsigned long long>(c.distinct),
      before.rss_bytes, after.rss_bytes, Metric(Get(d.web(), "/metrics"), "hotkey_tracked_keys "),
      Metric(Get(d.web(), "/metrics"), "hotkey_sketch_bytes "));
}

void Detection(const Config& c) {
  Daemon d(c, {});
  const std::string key = "celebrity:detect";
  hotkey::loadgen::SendOptions o;
  o.to = d.to();
  o.rate = c.detect_rate;
  o.background_keys = 100000;
  const absl::Duration jump = absl::Seconds(5);  // background alone first: a settled shard
  o.celebrities = {{key, 0.30, 0.0, jump, absl::InfiniteDuration()}};
  o.duration = jump + absl::Seconds(10);
  std::atomic<bool> stop{false};
  auto sender = hotkey::loadgen::Sender::Create(o);
  if (!sender.ok()) std::exit(1);
  const absl::Time start = absl::Now();
  std::thread t([&] { (void)(*sender)->Run(stop); });
  double latency = -1;
  const std::string series = absl::StrCat("hotkey_key_hot{key=\"", key, "\"");
  while (absl::Now() < start + o.duration) {
    const std::string m = Get(d.web(), "/metrics");
    if (m.find(series) != std::string::npos) {
      latency = absl::ToDoubleSeconds(absl::Now() - (start + jump));
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  stop = true;
  t.join();
  std::printf(
      "{\"phase\":\"detection\",\"sampled_events_per_second\":%.0f,\"hot_share\":0.30,"
      "\"detection_latency_seconds\":%.3f}\n",
      c.detect_rate, latency);
}

}  // namespace

int main(int argc, char** argv) {
  Config c;
  c.hotkeyd = std::string(argv[0]);
  c.hotkeyd = c.hotkeyd.substr(0, c.hotkeyd.rfind('/') + 1) + "../daemon/hotkeyd";
  // Everything after "--" goes to hotkeyd.
  hotkey::config::FlagParser flags("hotkey-bench-daemon");
  flags.AddString("hotkeyd", "the hotkeyd binary to run", &c.hotkeyd).Shown("PATH");
  flags
      .AddString("phase", "only this phase: throughput, no_loss, cardinality or detection",
                 &c.phase)
      .Shown("NAME");
  flags.AddNumber("seconds", "seconds each timed phase runs", &c.seconds);
  flags.AddNumber("offered", "events per second offered in no_loss", &c.offered);
  flags.AddInteger("distinct", "distinct keys sent in cardinality", &c.distinct);
  flags.AddNumber("detect-rate", "sampled events per second in detection", &c.detect_rate);
  std::vector<std::string_view> args(argv + 1, argv + argc);
  const auto dashdash = std::find(args.begin(), args.end(), std::string_view("--"));
  absl::StatusOr<hotkey::config::FlagParser::Parsed> parsed =
      flags.Parse(std::vector<std::string_view>(args.begin(), dashdash));
  absl::Status bad = parsed.status();
  if (!bad.ok() || parsed->help) {
    std::fprintf(bad.ok() ? stdout : stderr,
                 "%s%susage: hotkey-bench-daemon [flags] [-- extra hotkeyd flags...]\n\n%s",
                 std::string(bad.message()).c_str(), bad.ok() ? "" : "\n", flags.Help().c_str());
    return bad.ok() ? 0 : 2;
  }
  if (dashdash != args.end()) c.extra.assign(dashdash + 1, args.end());
  if (access(c.hotkeyd.c_str(), X_OK) != 0) {
    std::fprintf(stderr, "no hotkeyd at %s (use --hotkeyd PATH)\n", c.hotkeyd.c_str());
    return 2;
  }
  const struct {
    const char* name;
    void (*run)(const Config&);
  } phases[] = {{"throughput", Throughput},
                {"no_loss", NoLoss},
                {"cardinality", Cardinality},
                {"detection", Detection}};
  for (const auto& p : phases) {
    if (c.phase.empty() || c.phase == p.name) p.run(c);
    std::fflush(stdout);
  }
  return 0;
}
