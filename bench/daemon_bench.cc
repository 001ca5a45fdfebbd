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
//   drain        needs no spare core for the sender. Each round: the ceiling (below) drains
//                a socket of this process filled with --drain-datagrams datagrams; then a
//                hotkeyd with one receiver and one with two (--udp.receivers=2) are each
//                stopped (SIGSTOP), their sockets filled with the same datagrams (split
//                evenly over the two sockets by probing which flow lands where), resumed
//                (SIGCONT), and timed from their own /metrics: events counted over the time
//                from SIGCONT to hotkey_last_event_timestamp_seconds (the clock read of the
//                last batch), and over the CPU time of the whole process from SIGCONT until
//                its queues are empty (/proc/PID/task/*/schedstat, in ns; the receiver
//                threads, named hotkey-udp, are also shown alone). Prints each round, then
//                the median, min and max over --repeats rounds of every figure and of the
//                ratios taken within a round: daemon/ceiling per CPU-second, and two
//                receivers/one per second of drain and per CPU-second; and the load average,
//                since a shared machine's other work takes cores from the two receivers.
//                --baseline-hotkeyd PATH adds another build's daemon to every round.
//   ceiling      (part of drain) the same socket loop without the daemon: recvmmsg of
//                --ceiling-batch datagrams a call (default 64, the daemon's --udp.batch)
//                into 64 KiB buffers, lines split at '\n', the key after the first space
//                hashed (sketch::HashKey) and counted in one bare CountMinSketch (32 KiB,
//                4 rows) with no tracker; lines per CPU-second of the draining thread
//                (CLOCK_THREAD_CPUTIME_ID, user + system).
//   scrape       --scrape-rate events/s (default 1M) offered for --seconds while /metrics is
//                scraped every 20 ms: the median, 99th percentile and worst latency of a
//                whole scrape, per round and over --repeats rounds.
//
// Datagrams for drain are recorded once from the loadgen Sender (the throughput phase's
// stream) and replayed with sendmmsg, so every round and every contender gets the same
// bytes. The CPU model is printed first.
//
//   hotkey-bench-daemon [--hotkeyd PATH] [--phase NAME] [--seconds S] [--offered R]
//                       [--distinct N] [--detect-rate R] [--repeats N]
//                       [--drain-datagrams N] [-- extra hotkeyd flags...]

#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
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
#include "bench_util.h"
#include "hotkey/config/flag_parser.h"
#include "hotkey/loadgen/sender.h"
#include "hotkey/sketch/count_min.h"
#include "hotkey/sketch/hash.h"

namespace {

namespace asio = boost::asio;
namespace http = boost::beast::http;
using hotkey::bench::CpuModel;
using hotkey::bench::LoadAvg;
using hotkey::bench::SpreadJson;
using hotkey::bench::ThreadCpuSeconds;

struct Config {
  std::string hotkeyd;
  std::string phase;
  double seconds = 5;
  double offered = 5e6;
  uint64_t distinct = 10'000'000;
  double detect_rate = 500;
  int repeats = 5;
  size_t drain_datagrams = 100000;
  int ceiling_batch = 64;
  double scrape_rate = 1e6;
  std::string baseline_hotkeyd;
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
      setsid();  // its own scheduling group (autogroup), not the benchmark's
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
  int udp_port() const { return udp_; }
  pid_t pid() const { return pid_; }
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

// ---- drain: the daemon against the socket's ceiling, with no spare core for a sender ----

// One row of /proc/net/udp: a socket bound to a port.
struct UdpRow {
  uint64_t inode = 0;
  uint64_t rx_queue_bytes = 0;
  uint64_t drops = 0;
};

// The IPv4 UDP sockets bound to `port`, by inode order of appearance.
std::vector<UdpRow> UdpRows(int port) {
  std::vector<UdpRow> rows;
  std::ifstream in("/proc/net/udp");
  std::string line;
  std::getline(in, line);  // header
  while (std::getline(in, line)) {
    std::vector<std::string> f = absl::StrSplit(line, ' ', absl::SkipEmpty());
    if (f.size() < 13) continue;
    const size_t colon = f[1].find(':');
    if (colon == std::string::npos || std::stoi(f[1].substr(colon + 1), nullptr, 16) != port) {
      continue;
    }
    UdpRow r;
    r.rx_queue_bytes = std::stoull(f[4].substr(f[4].find(':') + 1), nullptr, 16);
    r.inode = std::stoull(f[9]);
    r.drops = std::stoull(f.back());
    rows.push_back(r);
  }
  std::sort(rows.begin(), rows.end(),
            [](const UdpRow& a, const UdpRow& b) { return a.inode < b.inode; });
  return rows;
}

uint64_t QueuedBytes(int port) {
  uint64_t n = 0;
  for (const UdpRow& r : UdpRows(port)) n += r.rx_queue_bytes;
  return n;
}

uint64_t DropsOn(int port) {
  uint64_t n = 0;
  for (const UdpRow& r : UdpRows(port)) n += r.drops;
  return n;
}

// CPU nanoseconds of a process's threads (schedstat's first field): all of them, and those
// whose name starts with `prefix`.
struct ThreadCpu {
  double all_s = 0;
  double named_s = 0;
};

ThreadCpu ReadThreadCpu(pid_t pid, const std::string& prefix) {
  ThreadCpu c;
  const std::string dir = "/proc/" + std::to_string(pid) + "/task";
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    std::ifstream st(e.path() / "schedstat");
    double ns = 0;
    if (!(st >> ns)) continue;
    std::ifstream comm(e.path() / "comm");
    std::string name;
    std::getline(comm, name);
    c.all_s += ns / 1e9;
    if (name.rfind(prefix, 0) == 0) c.named_s += ns / 1e9;
  }
  return c;
}

double WallSeconds() { return absl::ToDoubleSeconds(absl::Now() - absl::UnixEpoch()); }

// Datagrams recorded from the loadgen Sender, and their events (lines).
struct Corpus {
  std::vector<std::string> datagrams;
  std::vector<uint32_t> events;
};

int BoundSocket(int rcvbuf) {
  const int fd = socket(AF_INET, SOCK_DGRAM, 0);
  if (rcvbuf > 0) setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &rcvbuf, sizeof rcvbuf);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  return fd;
}

int PortOf(int fd) {
  sockaddr_in a{};
  socklen_t len = sizeof a;
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  return ntohs(a.sin_port);
}

Corpus Record(size_t n) {
  const int fd = BoundSocket(64 << 20);
  hotkey::loadgen::SendOptions o;
  o.to = absl::StrCat("127.0.0.1:", PortOf(fd));
  o.rate = 0;
  auto sender = hotkey::loadgen::Sender::Create(o);
  if (!sender.ok()) std::exit(1);
  std::atomic<bool> stop{false};
  std::thread t([&] { (void)(*sender)->Run(stop); });
  Corpus c;
  std::vector<char> buf(65536);
  const timeval wait = {10, 0};  // a sender that sends nothing ends the benchmark
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &wait, sizeof wait);
  while (c.datagrams.size() < n) {
    const ssize_t len = recv(fd, buf.data(), buf.size(), 0);
    if (len < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      std::fprintf(stderr, "no datagrams from the sender\n");
      std::exit(1);
    }
    if (len <= 0) continue;
    c.datagrams.emplace_back(buf.data(), len);
    c.events.push_back(static_cast<uint32_t>(std::count(buf.data(), buf.data() + len, '\n') +
                                             (buf[len - 1] != '\n')));
  }
  stop = true;
  t.join();
  close(fd);
  return c;
}

// A connected socket from its own ephemeral port: one flow, for SO_REUSEPORT's hash.
int Flow(int port) {
  const int fd = socket(AF_INET, SOCK_DGRAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<uint16_t>(port));
  connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  return fd;
}

// Sends corpus datagrams [first, first + n) (cyclically) on `fd`; returns their events.
uint64_t Fill(int fd, const Corpus& c, size_t first, size_t n) {
  constexpr size_t kBatch = 64;
  std::vector<mmsghdr> msgs(kBatch);
  std::vector<iovec> iov(kBatch);
  uint64_t events = 0;
  for (size_t done = 0; done < n;) {
    const size_t b = std::min(kBatch, n - done);
    for (size_t i = 0; i < b; ++i) {
      const size_t k = (first + done + i) % c.datagrams.size();
      iov[i] = {const_cast<char*>(c.datagrams[k].data()), c.datagrams[k].size()};
      msgs[i] = {};
      msgs[i].msg_hdr.msg_iov = &iov[i];
      msgs[i].msg_hdr.msg_iovlen = 1;
    }
    const int sent = sendmmsg(fd, msgs.data(), b, 0);
    if (sent <= 0) continue;
    for (int i = 0; i < sent; ++i) events += c.events[(first + done + i) % c.datagrams.size()];
    done += sent;
  }
  return events;
}

struct DrainResult {
  double events = 0;
  double seconds = 0;        // wall time of the drain
  double cpu_s = 0;          // the receiver threads (the ceiling: its one thread)
  double process_cpu_s = 0;  // every thread of the process (the ceiling: its one thread)
  uint64_t drops = 0;        // datagrams the full socket refused while filling
  uint64_t queued_bytes = 0;
  std::string split;  // bytes queued on each socket
  double per_second() const { return seconds > 0 ? events / seconds : 0; }
  double per_receiver_cpu_second() const { return cpu_s > 0 ? events / cpu_s : 0; }
  double per_cpu_second() const { return process_cpu_s > 0 ? events / process_cpu_s : 0; }
};

// The ceiling: the daemon's socket loop with one bare count-min update per line.
DrainResult Ceiling(const Corpus& c, size_t datagrams, int rcvbuf, int batch) {
  const int fd = BoundSocket(rcvbuf);
  const int port = PortOf(fd);
  const int flow = Flow(port);
  const uint64_t drops0 = DropsOn(port);
  Fill(flow, c, 0, datagrams);
  DrainResult r;
  r.drops = DropsOn(port) - drops0;
  r.queued_bytes = QueuedBytes(port);
  r.split = std::to_string(r.queued_bytes);
  auto cms = hotkey::sketch::CountMinSketch::FromBytes(32 * 1024, 4);
  // The daemon's receive buffers (receiver.cc): 64 KiB each, so no datagram is cut.
  constexpr size_t kMaxDatagram = 65536;
  std::vector<char> buffers(static_cast<size_t>(batch) * kMaxDatagram);
  std::vector<mmsghdr> msgs(batch);
  std::vector<iovec> iov(batch);
  std::vector<sockaddr_storage> from(batch);
  for (int i = 0; i < batch; ++i) {
    iov[i] = {&buffers[static_cast<size_t>(i) * kMaxDatagram], kMaxDatagram};
    msgs[i] = {};
    msgs[i].msg_hdr.msg_iov = &iov[i];
    msgs[i].msg_hdr.msg_iovlen = 1;
    msgs[i].msg_hdr.msg_name = &from[i];
  }
  uint64_t lines = 0;
  const double wall0 = WallSeconds(), cpu0 = ThreadCpuSeconds();
  for (;;) {
    for (int i = 0; i < batch; ++i) msgs[i].msg_hdr.msg_namelen = sizeof(sockaddr_storage);
    const int n = recvmmsg(fd, msgs.data(), batch, MSG_DONTWAIT, nullptr);
    if (n <= 0) break;  // EAGAIN: the socket is empty, nothing is sending
    for (int i = 0; i < n; ++i) {
      const char* p = static_cast<const char*>(iov[i].iov_base);
      const char* end = p + msgs[i].msg_len;
      while (p < end) {
        const char* nl = static_cast<const char*>(std::memchr(p, '\n', end - p));
        if (!nl) nl = end;
        const char* sp = static_cast<const char*>(std::memchr(p, ' ', nl - p));
        if (sp) {
          const std::string_view key(sp + 1, nl - sp - 1);
          cms->Update(hotkey::sketch::HashKey(key, hotkey::sketch::kDefaultSeed), 1.0);
          ++lines;
        }
        p = nl + 1;
      }
    }
  }
  r.cpu_s = ThreadCpuSeconds() - cpu0;
  r.process_cpu_s = r.cpu_s;
  r.seconds = WallSeconds() - wall0;
  r.events = static_cast<double>(lines);
  // Keeps the sketch's work observable, so it is not optimised away.
  if (cms->Estimate(1) < 0) std::printf("?");
  close(flow);
  close(fd);
  return r;
}

// One hotkeyd kept for every round, with its flows (one per receiver socket).
class DrainTarget {
 public:
  DrainTarget(const Config& c, int receivers, int rcvbuf_request)
      : daemon_(c, {absl::StrCat("--udp.receivers=", receivers),
                    absl::StrCat("--udp.read-buffer=", rcvbuf_request)}),
        receivers_(receivers) {}

  // Maps flows to sockets: a probe datagram on a fresh flow shows up in one socket's queue.
  // Call while the daemon is stopped.
  bool FindFlows(const Corpus& c) {
    flows_.assign(receivers_, -1);
    for (int tries = 0; tries < 256; ++tries) {
      if (std::find(flows_.begin(), flows_.end(), -1) == flows_.end()) return true;
      const std::vector<UdpRow> before = UdpRows(daemon_.udp_port());
      const int fd = Flow(daemon_.udp_port());
      probe_events_ += Fill(fd, c, 0, 1);
      std::vector<UdpRow> after;
      for (int i = 0; i < 100; ++i) {  // the queue is updated by the sending call; be safe
        after = UdpRows(daemon_.udp_port());
        if (QueuedSum(after) != QueuedSum(before)) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
      int hit = -1;
      for (size_t i = 0; i < after.size() && i < before.size(); ++i) {
        if (after[i].rx_queue_bytes != before[i].rx_queue_bytes) hit = static_cast<int>(i);
      }
      if (hit >= 0 && hit < receivers_ && flows_[hit] < 0) {
        flows_[hit] = fd;
      } else {
        close(fd);
      }
    }
    return false;
  }

  // Stops the daemon, fills each socket with datagrams/receivers datagrams, resumes it and
  // waits until every event sent is counted.
  DrainResult Drain(const Corpus& c, size_t datagrams) {
    const double events0 = Settle(daemon_);
    kill(daemon_.pid(), SIGSTOP);
    int st;
    waitpid(daemon_.pid(), &st, WUNTRACED);
    probe_events_ = 0;
    if (flows_.empty() && !FindFlows(c)) {
      std::fprintf(stderr, "could not find a flow for every receiver socket\n");
      std::exit(1);
    }
    const uint64_t drops0 = DropsOn(daemon_.udp_port());
    uint64_t sent = probe_events_;
    const size_t each = datagrams / receivers_;
    for (int i = 0; i < receivers_; ++i) sent += Fill(flows_[i], c, i * each, each);
    DrainResult r;
    r.drops = DropsOn(daemon_.udp_port()) - drops0;
    r.queued_bytes = QueuedBytes(daemon_.udp_port());
    for (const UdpRow& row : UdpRows(daemon_.udp_port())) {
      absl::StrAppend(&r.split, r.split.empty() ? "" : ",", row.rx_queue_bytes);
    }
    const ThreadCpu cpu0 = ReadThreadCpu(daemon_.pid(), "hotkey-udp");
    const double wall0 = WallSeconds();
    kill(daemon_.pid(), SIGCONT);
    // Waits for the queues to empty, then for the counts to be published.
    const absl::Time give_up = absl::Now() + absl::Minutes(2);  // a daemon that died
    while (QueuedBytes(daemon_.udp_port()) > 0 && absl::Now() < give_up) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    const ThreadCpu cpu1 = ReadThreadCpu(daemon_.pid(), "hotkey-udp");
    double events = 0;
    std::string m;
    for (int i = 0; i < 200; ++i) {
      m = Get(daemon_.web(), "/metrics");
      events = Metric(m, "hotkey_events_received_total ") - events0;
      if (events >= static_cast<double>(sent) * 0.999) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    r.events = events;
    r.seconds = Metric(m, "hotkey_last_event_timestamp_seconds ") - wall0;
    r.cpu_s = cpu1.named_s - cpu0.named_s;
    r.process_cpu_s = cpu1.all_s - cpu0.all_s;
    return r;
  }

  int receivers() const { return receivers_; }

 private:
  static uint64_t QueuedSum(const std::vector<UdpRow>& rows) {
    uint64_t n = 0;
    for (const UdpRow& r : rows) n += r.rx_queue_bytes;
    return n;
  }

  Daemon daemon_;
  const int receivers_;
  std::vector<int> flows_;
  uint64_t probe_events_ = 0;
};

void PrintStat(const char* name, const std::vector<double>& v, bool last = false) {
  std::printf("\"%s\":%s%s", name, SpreadJson(v).c_str(), last ? "" : ",");
}

void Drain(const Config& c) {
  const int rcvbuf_request = 256 << 20;  // the kernel doubles it: 512 MiB of skb truesize
  const Corpus corpus = Record(4096);
  double mean_events = 0;
  for (uint32_t e : corpus.events) mean_events += e;
  mean_events /= corpus.events.size();
  Config base = c;
  base.hotkeyd = c.baseline_hotkeyd;
  struct Run {
    std::string name;
    std::unique_ptr<DrainTarget> target;  // null: the ceiling
    std::vector<DrainResult> results;
  };
  std::vector<Run> runs;
  runs.push_back({"ceiling", nullptr, {}});
  if (!c.baseline_hotkeyd.empty()) {
    runs.push_back(
        {"baseline_receivers_1", std::make_unique<DrainTarget>(base, 1, rcvbuf_request), {}});
    runs.push_back(
        {"baseline_receivers_2", std::make_unique<DrainTarget>(base, 2, rcvbuf_request), {}});
  }
  runs.push_back({"receivers_1", std::make_unique<DrainTarget>(c, 1, rcvbuf_request), {}});
  runs.push_back({"receivers_2", std::make_unique<DrainTarget>(c, 2, rcvbuf_request), {}});
  for (int round = 0; round < c.repeats; ++round) {
    for (Run& run : runs) {
      const DrainResult r =
          run.target ? run.target->Drain(corpus, c.drain_datagrams)
                     : Ceiling(corpus, c.drain_datagrams, 2 * rcvbuf_request, c.ceiling_batch);
      run.results.push_back(r);
      std::printf(
          "{\"phase\":\"drain\",\"round\":%d,\"run\":\"%s\",\"events\":%.0f,\"seconds\":%.4f,"
          "\"events_per_second\":%.0f,\"events_per_cpu_second\":%.0f,"
          "\"events_per_receiver_cpu_second\":%.0f,\"queued_bytes\":%llu,\"per_socket\":[%s],"
          "\"drops\":%llu}\n",
          round, run.name.c_str(), r.events, r.seconds, r.per_second(), r.per_cpu_second(),
          r.per_receiver_cpu_second(), static_cast<unsigned long long>(r.queued_bytes),
          r.split.c_str(), static_cast<unsigned long long>(r.drops));
      std::fflush(stdout);
    }
  }
  auto find = [&](const std::string& name) -> const std::vector<DrainResult>* {
    for (const Run& r : runs) {
      if (r.name == name) return &r.results;
    }
    return nullptr;
  };
  std::printf(
      "{\"phase\":\"drain_summary\",\"cpu\":\"%s\",\"rounds\":%d,\"datagrams\":%zu,"
      "\"events_per_datagram\":%.1f,",
      CpuModel().c_str(), c.repeats, c.drain_datagrams, mean_events);
  for (const Run& run : runs) {
    std::vector<double> cpu, wall;
    for (const DrainResult& r : run.results) {
      cpu.push_back(r.per_cpu_second());
      wall.push_back(r.per_second());
    }
    PrintStat((run.name + "_events_per_cpu_second").c_str(), cpu);
    PrintStat((run.name + "_events_per_second").c_str(), wall);
  }
  // Ratios within each round, then their median, min and max.
  auto ratio = [&](const char* label, const std::string& a, const std::string& b, bool per_cpu,
                   bool last) {
    const auto* ra = find(a);
    const auto* rb = find(b);
    if (!ra || !rb) return;
    std::vector<double> v;
    for (size_t i = 0; i < ra->size(); ++i) {
      v.push_back(per_cpu ? (*ra)[i].per_cpu_second() / (*rb)[i].per_cpu_second()
                          : (*ra)[i].per_second() / (*rb)[i].per_second());
    }
    PrintStat(label, v, last);
  };
  const bool has_base = !c.baseline_hotkeyd.empty();
  if (has_base) {
    ratio("baseline_over_ceiling_per_cpu_second", "baseline_receivers_1", "ceiling", true, false);
    ratio("baseline_receivers_2_over_1_per_second", "baseline_receivers_2", "baseline_receivers_1",
          false, false);
    ratio("receivers_1_over_baseline_per_cpu_second", "receivers_1", "baseline_receivers_1", true,
          false);
  }
  ratio("daemon_over_ceiling_per_cpu_second", "receivers_1", "ceiling", true, false);
  ratio("receivers_2_over_1_per_cpu_second", "receivers_2", "receivers_1", true, false);
  ratio("receivers_2_over_1_per_second", "receivers_2", "receivers_1", false, true);
  std::printf(",\"loadavg\":\"%s\"}\n", LoadAvg().c_str());
}

// Scrapes /metrics back to back (every 20 ms) while a sender offers --scrape-rate events/s
// for --seconds; per round the median, 99th percentile and worst latency of a whole
// scrape (connect, request, full body), in ms. Rounds alternate nothing: each is the same.
void Scrape(const Config& c) {
  Daemon d(c, {});
  std::vector<double> medians, p99s, worsts, loss;
  for (int round = 0; round < c.repeats; ++round) {
    hotkey::loadgen::SendOptions o;
    o.to = d.to();
    o.rate = c.scrape_rate;
    o.duration = absl::Seconds(c.seconds);
    auto sender = hotkey::loadgen::Sender::Create(o);
    if (!sender.ok()) std::exit(1);
    std::atomic<bool> stop{false};
    const double counted0 = d.Events();
    std::thread t([&] { (void)(*sender)->Run(stop); });
    std::vector<double> ms;
    size_t bytes = 0;
    const absl::Time end = absl::Now() + o.duration;
    while (absl::Now() < end) {
      const absl::Time t0 = absl::Now();
      bytes = Get(d.web(), "/metrics").size();
      ms.push_back(absl::ToDoubleMilliseconds(absl::Now() - t0));
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    t.join();
    const double sent = static_cast<double>((*sender)->stats().events);
    const double counted = Settle(d) - counted0;
    std::sort(ms.begin(), ms.end());
    const double median = ms[ms.size() / 2];
    const double p99 = ms[std::min(ms.size() - 1, ms.size() * 99 / 100)];
    std::printf(
        "{\"phase\":\"scrape\",\"round\":%d,\"offered_per_second\":%.0f,"
        "\"sent_per_second\":%.0f,\"loss_ratio\":%.6f,\"scrapes\":%zu,\"metrics_bytes\":%zu,"
        "\"median_ms\":%.3f,\"p99_ms\":%.3f,\"worst_ms\":%.3f}\n",
        round, c.scrape_rate, sent / c.seconds, sent > 0 ? 1 - counted / sent : 0, ms.size(), bytes,
        median, p99, ms.back());
    std::fflush(stdout);
    medians.push_back(median);
    p99s.push_back(p99);
    worsts.push_back(ms.back());
    loss.push_back(sent > 0 ? 1 - counted / sent : 0);
  }
  std::printf("{\"phase\":\"scrape_summary\",\"cpu\":\"%s\",\"rounds\":%d,", CpuModel().c_str(),
              c.repeats);
  PrintStat("median_ms", medians);
  PrintStat("p99_ms", p99s);
  PrintStat("worst_ms", worsts);
  PrintStat("loss_ratio", loss);
  std::printf("\"loadavg\":\"%s\"}\n", LoadAvg().c_str());
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
      .AddString("phase",
                 "only this phase: throughput, no_loss, cardinality, detection, drain or scrape",
                 &c.phase)
      .Shown("NAME");
  flags.AddNumber("seconds", "seconds each timed phase runs", &c.seconds);
  flags.AddNumber("offered", "events per second offered in no_loss", &c.offered);
  flags.AddInteger("distinct", "distinct keys sent in cardinality", &c.distinct);
  flags.AddNumber("detect-rate", "sampled events per second in detection", &c.detect_rate);
  flags.AddInteger("repeats", "rounds of drain and of scrape (median, min and max are printed)",
                   &c.repeats);
  flags
      .AddString("baseline-hotkeyd",
                 "drain also runs this hotkeyd (one and two receivers) as the baseline",
                 &c.baseline_hotkeyd)
      .Shown("PATH");
  flags.AddNumber("scrape-rate", "events per second offered while scrape measures", &c.scrape_rate);
  flags.AddInteger("ceiling-batch", "datagrams per recvmmsg in the ceiling", &c.ceiling_batch);
  flags.AddInteger("drain-datagrams", "datagrams queued per drain (split over the receivers)",
                   &c.drain_datagrams);
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
  } phases[] = {{"throughput", Throughput}, {"no_loss", NoLoss}, {"cardinality", Cardinality},
                {"detection", Detection},   {"drain", Drain},    {"scrape", Scrape}};
  for (const auto& p : phases) {
    if (c.phase.empty() || c.phase == p.name) p.run(c);
    std::fflush(stdout);
  }
  return 0;
}
