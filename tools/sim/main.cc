// hotkey-sim: the shard load model as a table, synthetic hot-key traffic, trace replay.
//
//   hotkey-sim model [--ops T --shards N ... --json]   what each fix does to the shards
//   hotkey-sim send --to HOST:PORT [--rate ...]        protocol v1 load (hotkey::loadgen)
//   hotkey-sim replay FILE --to HOST:PORT [--speed X | --rate R]
//
// Exit status: 0 on success, 1 on a runtime failure (socket, unreadable trace), 2 on bad
// usage. Only this file reads flags; everything else takes options structs.

#include <signal.h>
#include <sys/resource.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "args.h"
#include "hotkey/loadgen/replayer.h"
#include "hotkey/loadgen/sender.h"
#include "hotkey/loadgen/trace.h"
#include "hotkey/model/shard_model.h"
#include "model_report.h"

namespace hotkey::sim {
namespace {

constexpr int kUsageError = 2;
constexpr int kRuntimeError = 1;

constexpr char kMainHelp[] =
    R"(hotkey-sim: explore the shard load model and generate hot-key traffic.

Usage:
  hotkey-sim model  [flags]              load per shard under each fix for one hot key
  hotkey-sim send   --to HOST:PORT [flags]  send synthetic protocol v1 events over UDP
  hotkey-sim replay FILE --to HOST:PORT [--speed X | --rate R]  send a recorded trace
  hotkey-sim help [COMMAND]              this text, or a command's flags

Run `hotkey-sim COMMAND --help` for a command's flags.
)";

constexpr char kModelHelp[] =
    R"(hotkey-sim model: what one hot key does to a sharded cluster, and which fix helps.

Flags (defaults in brackets):
  --ops T            total ops/s over the cluster [50000]
  --shards N         shards [8]
  --capacity C       ops/s one shard can serve [10000]
  --hot-share h      the key's share of all ops, in [0, 1] [0.2]
  --write-share w    share of the key's ops that are writes, in [0, 1] [0.1]
  --app-servers A    app servers that would cache the key [50]
  --refresh D        cache refresh interval, e.g. 1s, 500ms, or seconds [1s]
  --replicas R       copies for replicate, in [1, N] [4]
  --split S          sub-keys for split, in [1, N] [8]
  --target F         advised fixes keep the busiest shard <= F * C [0.8]
  --order LIST       strategies to try, cheapest first, comma-separated
                     [none,cache,replicate,split,split_cache]; isolate is implied last
  --json             print JSON instead of the table
)";

constexpr char kSendHelp[] =
    R"(hotkey-sim send: synthetic protocol v1 traffic over UDP.

Flags (defaults in brackets):
  --to HOST:PORT       receiver, e.g. 127.0.0.1:10111 or [::1]:10111 (required)
  --rate R             events per second; 0 = as fast as possible [10000]
  --sampling P         client sampling probability in (0, 1]; < 1 adds "!v1 rate=P" [1]
  --keys M             background keys "key:1".."key:M", Zipf-distributed [1000000]
  --zipf S             Zipf exponent of the background, > 0 [1.0]
  --write-share W      write share of background events [0.1]
  --celebrity KEY:SHARE[:WRITE_SHARE[:START[:STOP]]]
                       a hot key taking SHARE of all events between START and STOP
                       (durations such as 10s; default always); repeatable. KEY may hold
                       ':' as long as no ':'-separated part of it reads as a share.
  --duration D         e.g. 30s, 5m, inf [inf]; Ctrl-C stops early
  --datagram-bytes B   datagram size limit [1400]
  --seed N             random seed: same seed, same events [1]
  --verbose            a line of progress per second
)";

constexpr char kReplayHelp[] =
    R"(hotkey-sim replay FILE: send a trace of "<op> <key>" or "<ts_ms> <op> <key>" lines
(plain or gzip; "-" for stdin) as protocol v1 datagrams.

Flags:
  --to HOST:PORT       receiver (required)
  --speed X            follow the trace's timestamps, X times faster (e.g. 1, 10)
  --rate R             send R events per second instead
                       (neither: as fast as possible)
  --sampling P         client sampling probability written in each datagram [1]
  --datagram-bytes B   datagram size limit [1400]
  --verbose            a line of progress per second
)";

// Set by SIGINT/SIGTERM; a lock-free atomic store is async-signal-safe.
std::atomic<bool> g_stop{false};

void OnSignal(int) { g_stop.store(true); }

void InstallSignalHandlers() {
  struct sigaction sa {};
  sa.sa_handler = OnSignal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

int Usage(const absl::Status& status, const char* help_hint) {
  std::fprintf(stderr, "hotkey-sim: %s\nRun `hotkey-sim %s --help` for usage.\n",
               std::string(status.message()).c_str(), help_hint);
  return kUsageError;
}

double CpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_utime.tv_sec + u.ru_stime.tv_sec + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

// --- model -------------------------------------------------------------------------------

int RunModel(const std::vector<std::string>& argv) {
  absl::StatusOr<Args> args =
      Args::Parse(argv,
                  {"ops", "shards", "capacity", "hot-share", "write-share", "app-servers",
                   "refresh", "replicas", "split", "target", "order"},
                  {"json", "help"});
  if (!args.ok()) return Usage(args.status(), "model");
  if (args->Has("help")) {
    std::fputs(kModelHelp, stdout);
    return 0;
  }
  if (!args->positional().empty()) {
    return Usage(absl::InvalidArgumentError("model takes no positional arguments: '" +
                                            args->positional()[0] + "'"),
                 "model");
  }
  model::Cluster c;
  model::HotKey key;
  // Integer flags are read as int64 and range-checked here, so "--shards 1e9" and
  // "--shards 99999999999" are errors rather than wrapped ints.
  auto read_int = [&](const char* name, int* out) -> absl::Status {
    absl::StatusOr<int64_t> v = args->Int(name, *out);
    if (!v.ok()) return v.status();
    if (*v < -1'000'000'000 || *v > 1'000'000'000) {
      return absl::InvalidArgumentError(absl::StrFormat("--%s: %d is out of range", name, *v));
    }
    *out = static_cast<int>(*v);
    return absl::OkStatus();
  };
  auto read_double = [&](const char* name, double* out) -> absl::Status {
    absl::StatusOr<double> v = args->Double(name, *out);
    if (!v.ok()) return v.status();
    *out = *v;
    return absl::OkStatus();
  };
  key.share = 0.2;
  key.write_share = 0.1;
  for (absl::Status s : {read_double("ops", &c.ops), read_int("shards", &c.shards),
                         read_double("capacity", &c.capacity), read_double("hot-share", &key.share),
                         read_double("write-share", &key.write_share),
                         read_int("app-servers", &c.app_servers), read_int("replicas", &c.replicas),
                         read_int("split", &c.split), read_double("target", &c.target)}) {
    if (!s.ok()) return Usage(s, "model");
  }
  absl::StatusOr<absl::Duration> refresh = args->Duration("refresh", absl::Seconds(1));
  if (!refresh.ok()) return Usage(refresh.status(), "model");
  c.refresh_seconds = absl::ToDoubleSeconds(*refresh);
  if (std::optional<std::string> order = args->Get("order")) {
    c.order.clear();
    for (absl::string_view name : absl::StrSplit(*order, ',')) {
      absl::StatusOr<model::Strategy> s =
          model::ParseStrategy(std::string_view(name.data(), name.size()));
      if (!s.ok()) return Usage(s.status(), "model");
      c.order.push_back(*s);
    }
  }
  absl::StatusOr<model::Projection> p = model::Project(c, key);
  if (!p.ok()) return Usage(p.status(), "model");
  const std::string out = args->Has("json") ? ModelJson(c, key, *p) : ModelTable(c, key, *p);
  std::fputs(out.c_str(), stdout);
  return 0;
}

// --- send --------------------------------------------------------------------------------

// KEY:SHARE[:WRITE_SHARE[:START[:STOP]]]. The key is the shortest ':'-prefix after which
// the rest parses, so "user:42:0.3" is key "user:42" with share 0.3.
absl::StatusOr<loadgen::Celebrity> ParseCelebrity(const std::string& spec) {
  for (size_t colon = spec.find(':'); colon != std::string::npos;
       colon = spec.find(':', colon + 1)) {
    if (colon == 0) continue;
    std::vector<std::string> fields = absl::StrSplit(spec.substr(colon + 1), ':');
    if (fields.size() > 4) continue;
    loadgen::Celebrity c;
    c.key = spec.substr(0, colon);
    bool ok = ParseDouble(fields[0], &c.share) && c.share >= 0 && c.share <= 1;
    if (ok && fields.size() > 1) {
      ok = ParseDouble(fields[1], &c.write_share) && c.write_share >= 0 && c.write_share <= 1;
    }
    if (ok && fields.size() > 2) ok = ParseDurationArg(fields[2], &c.start);
    if (ok && fields.size() > 3) ok = ParseDurationArg(fields[3], &c.stop);
    if (ok) return c;
  }
  return absl::InvalidArgumentError(
      "--celebrity '" + spec +
      "' is not KEY:SHARE[:WRITE_SHARE[:START[:STOP]]] (shares in [0, 1], durations like 10s)");
}

std::string ErrorText(int e) { return e == 0 ? "" : std::string(" (last: ") + strerror(e) + ")"; }

// Runs `run` on a thread; meanwhile prints `progress()` each second when verbose. Ctrl-C
// sets g_stop, which `run` watches.
template <class Run, class Progress>
void RunWithProgress(Run run, Progress progress, bool verbose) {
  std::atomic<bool> done{false};
  std::thread worker([&] {
    run();
    done.store(true);
  });
  absl::Time next = absl::Now() + absl::Seconds(1);
  while (!done.load()) {
    absl::SleepFor(absl::Milliseconds(20));
    if (verbose && absl::Now() >= next) {
      progress();
      next += absl::Seconds(1);
    }
  }
  worker.join();
}

void PrintSendStats(const char* what, const loadgen::SendStats& s, double cpu) {
  const double secs = absl::ToDoubleSeconds(s.elapsed);
  std::printf(
      "%s %llu events in %llu datagrams (%.1f MB) in %.2f s: %.0f events/s, "
      "%.0f events per CPU-second (%.2f CPU s); send errors: %llu datagrams, %llu events "
      "dropped%s\n",
      what, static_cast<unsigned long long>(s.events), static_cast<unsigned long long>(s.datagrams),
      s.bytes / 1e6, secs, secs > 0 ? s.events / secs : 0.0, cpu > 0 ? s.events / cpu : 0.0, cpu,
      static_cast<unsigned long long>(s.send_errors),
      static_cast<unsigned long long>(s.events_dropped), ErrorText(s.last_errno).c_str());
}

void PrintProgress(const loadgen::SendStats& s, uint64_t* last_events) {
  std::printf("%8.1fs  %llu events (+%llu), %llu datagrams, %llu send errors\n",
              absl::ToDoubleSeconds(s.elapsed), static_cast<unsigned long long>(s.events),
              static_cast<unsigned long long>(s.events - *last_events),
              static_cast<unsigned long long>(s.datagrams),
              static_cast<unsigned long long>(s.send_errors));
  std::fflush(stdout);
  *last_events = s.events;
}

int RunSend(const std::vector<std::string>& argv) {
  absl::StatusOr<Args> args = Args::Parse(argv,
                                          {"to", "rate", "sampling", "keys", "zipf", "write-share",
                                           "celebrity", "duration", "datagram-bytes", "seed"},
                                          {"verbose", "help"});
  if (!args.ok()) return Usage(args.status(), "send");
  if (args->Has("help")) {
    std::fputs(kSendHelp, stdout);
    return 0;
  }
  if (!args->positional().empty()) {
    return Usage(absl::InvalidArgumentError("send takes no positional arguments: '" +
                                            args->positional()[0] + "'"),
                 "send");
  }
  loadgen::SendOptions o;
  if (!args->Has("to")) return Usage(absl::InvalidArgumentError("--to is required"), "send");
  o.to = *args->Get("to");
  absl::StatusOr<double> rate = args->Double("rate", 10000);
  absl::StatusOr<double> sampling = args->Double("sampling", 1.0);
  absl::StatusOr<int64_t> keys = args->Int("keys", 1000000);
  absl::StatusOr<double> zipf = args->Double("zipf", 1.0);
  absl::StatusOr<double> write_share = args->Double("write-share", 0.1);
  absl::StatusOr<absl::Duration> duration = args->Duration("duration", absl::InfiniteDuration());
  absl::StatusOr<int64_t> datagram_bytes = args->Int("datagram-bytes", 1400);
  absl::StatusOr<int64_t> seed = args->Int("seed", 1);
  for (const absl::Status& s :
       {rate.status(), sampling.status(), keys.status(), zipf.status(), write_share.status(),
        duration.status(), datagram_bytes.status(), seed.status()}) {
    if (!s.ok()) return Usage(s, "send");
  }
  if (*keys < 1) return Usage(absl::InvalidArgumentError("--keys must be >= 1"), "send");
  if (*datagram_bytes < 1) {
    return Usage(absl::InvalidArgumentError("--datagram-bytes must be positive"), "send");
  }
  o.rate = *rate;
  o.sampling = *sampling;
  o.background_keys = static_cast<uint64_t>(*keys);
  o.zipf_s = *zipf;
  o.background_write_share = *write_share;
  o.duration = *duration;
  o.datagram_bytes = static_cast<size_t>(*datagram_bytes);
  o.seed = static_cast<uint64_t>(*seed);
  for (const std::string& spec : args->GetAll("celebrity")) {
    absl::StatusOr<loadgen::Celebrity> c = ParseCelebrity(spec);
    if (!c.ok()) return Usage(c.status(), "send");
    o.celebrities.push_back(*c);
  }
  if (absl::Status s = o.Validate(); !s.ok()) return Usage(s, "send");
  absl::StatusOr<std::unique_ptr<loadgen::Sender>> sender = loadgen::Sender::Create(o);
  if (!sender.ok()) {
    std::fprintf(stderr, "hotkey-sim send: %s\n", std::string(sender.status().message()).c_str());
    return kRuntimeError;
  }
  InstallSignalHandlers();
  const double cpu0 = CpuSeconds();
  uint64_t last = 0;
  RunWithProgress([&] { (*sender)->Run(g_stop).IgnoreError(); },
                  [&] { PrintProgress((*sender)->stats(), &last); }, args->Has("verbose"));
  PrintSendStats("sent", (*sender)->stats(), CpuSeconds() - cpu0);
  return 0;
}

// --- replay ------------------------------------------------------------------------------

int RunReplay(const std::vector<std::string>& argv) {
  absl::StatusOr<Args> args =
      Args::Parse(argv, {"to", "speed", "rate", "sampling", "datagram-bytes"}, {"verbose", "help"});
  if (!args.ok()) return Usage(args.status(), "replay");
  if (args->Has("help")) {
    std::fputs(kReplayHelp, stdout);
    return 0;
  }
  if (args->positional().size() != 1) {
    return Usage(absl::InvalidArgumentError("replay takes exactly one trace FILE"), "replay");
  }
  if (!args->Has("to")) return Usage(absl::InvalidArgumentError("--to is required"), "replay");
  loadgen::ReplayOptions o;
  o.to = *args->Get("to");
  absl::StatusOr<double> speed = args->Double("speed", 0);
  absl::StatusOr<double> rate = args->Double("rate", 0);
  absl::StatusOr<double> sampling = args->Double("sampling", 1.0);
  absl::StatusOr<int64_t> datagram_bytes = args->Int("datagram-bytes", 1400);
  for (const absl::Status& s :
       {speed.status(), rate.status(), sampling.status(), datagram_bytes.status()}) {
    if (!s.ok()) return Usage(s, "replay");
  }
  if (args->Has("speed") && *speed <= 0) {
    return Usage(absl::InvalidArgumentError("--speed must be > 0"), "replay");
  }
  if (args->Has("rate") && *rate <= 0) {
    return Usage(absl::InvalidArgumentError("--rate must be > 0"), "replay");
  }
  if (*datagram_bytes < 1) {
    return Usage(absl::InvalidArgumentError("--datagram-bytes must be positive"), "replay");
  }
  o.speed = *speed;
  o.rate = *rate;
  o.sampling = *sampling;
  o.datagram_bytes = static_cast<size_t>(*datagram_bytes);
  if (absl::Status s = o.Validate(); !s.ok()) return Usage(s, "replay");
  absl::StatusOr<std::unique_ptr<loadgen::TraceReader>> trace =
      loadgen::TraceReader::Open(args->positional()[0]);
  if (!trace.ok()) {
    std::fprintf(stderr, "hotkey-sim replay: %s\n", std::string(trace.status().message()).c_str());
    return kRuntimeError;
  }
  absl::StatusOr<std::unique_ptr<loadgen::Replayer>> replayer = loadgen::Replayer::Create(o);
  if (!replayer.ok()) {
    std::fprintf(stderr, "hotkey-sim replay: %s\n",
                 std::string(replayer.status().message()).c_str());
    return kRuntimeError;
  }
  InstallSignalHandlers();
  const double cpu0 = CpuSeconds();
  absl::Status status;
  uint64_t last = 0;
  RunWithProgress([&] { status = (*replayer)->Run(**trace, g_stop); },
                  [&] { PrintProgress((*replayer)->stats().sent, &last); }, args->Has("verbose"));
  const loadgen::ReplayStats s = (*replayer)->stats();
  PrintSendStats("replayed", s.sent, CpuSeconds() - cpu0);
  std::printf("trace: %llu lines, %llu bad lines skipped, %llu keys too long for a datagram\n",
              static_cast<unsigned long long>(s.trace_lines),
              static_cast<unsigned long long>(s.bad_lines),
              static_cast<unsigned long long>(s.skipped_keys));
  if (o.speed > 0 && s.untimed_events > 0) {
    std::printf("note: %llu events had no timestamp and were sent with the event before\n",
                static_cast<unsigned long long>(s.untimed_events));
  }
  if (!status.ok()) {
    std::fprintf(stderr, "hotkey-sim replay: %s\n", std::string(status.message()).c_str());
    return kRuntimeError;
  }
  return 0;
}

int Main(int argc, char** argv) {
  std::vector<std::string> rest(argv + 1, argv + argc);
  if (rest.empty()) {
    std::fputs(kMainHelp, stderr);
    return kUsageError;
  }
  const std::string command = rest.front();
  rest.erase(rest.begin());
  if (command == "--help" || command == "-h" || command == "help") {
    const std::string topic = rest.empty() ? "" : rest.front();
    if (topic == "model") {
      std::fputs(kModelHelp, stdout);
    } else if (topic == "send") {
      std::fputs(kSendHelp, stdout);
    } else if (topic == "replay") {
      std::fputs(kReplayHelp, stdout);
    } else {
      std::fputs(kMainHelp, stdout);
    }
    return 0;
  }
  if (command == "model") return RunModel(rest);
  if (command == "send") return RunSend(rest);
  if (command == "replay") return RunReplay(rest);
  std::fprintf(stderr, "hotkey-sim: unknown command '%s'\n\n%s", command.c_str(), kMainHelp);
  return kUsageError;
}

}  // namespace
}  // namespace hotkey::sim

int main(int argc, char** argv) { return hotkey::sim::Main(argc, argv); }
