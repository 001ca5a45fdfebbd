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
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "hotkey/config/flag_parser.h"
#include "hotkey/config/values.h"
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

// Each command's help: this intro, then its flags as FlagParser lists them (with the
// defaults they really have).
constexpr char kModelIntro[] =
    "hotkey-sim model: what one hot key does to a sharded cluster, and which fix helps.\n";
constexpr char kSendIntro[] =
    "hotkey-sim send: synthetic protocol v1 traffic over UDP to --to (required). Durations\n"
    "take a unit (10s, 500ms, 2m) or inf; Ctrl-C stops early.\n";
constexpr char kReplayIntro[] =
    "hotkey-sim replay FILE: send a trace of \"<op> <key>\" or \"<ts_ms> <op> <key>\" lines\n"
    "(plain or gzip; \"-\" for stdin) as protocol v1 datagrams to --to (required); with\n"
    "neither --speed nor --rate, as fast as possible.\n";

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

int Help(const char* intro, const config::FlagParser& flags) {
  std::printf("%s\nFlags:\n%s", intro, flags.Help().c_str());
  return 0;
}

double CpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_utime.tv_sec + u.ru_stime.tv_sec + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

// --- model -------------------------------------------------------------------------------

std::string OrderText(const std::vector<model::Strategy>& order) {
  return absl::StrJoin(order, ",", [](std::string* out, model::Strategy s) {
    const std::string_view name = model::StrategyName(s);
    out->append(name.data(), name.size());
  });
}

int RunModel(const std::vector<std::string_view>& argv) {
  model::Cluster c;
  model::HotKey key;
  key.share = 0.2;
  key.write_share = 0.1;
  absl::Duration refresh = absl::Seconds(c.refresh_seconds);
  bool json = false;
  config::FlagParser flags("hotkey-sim model", config::FlagParser::Positional::kAccept);
  flags.AddNumber("ops", "total ops/s over the cluster (T)", &c.ops);
  flags.AddInteger("shards", "shards (N)", &c.shards);
  flags.AddNumber("capacity", "ops/s one shard can serve (C)", &c.capacity);
  flags.AddNumber("hot-share", "the key's share of all ops (h), in [0, 1]", &key.share);
  flags.AddNumber("write-share", "share of the key's ops that are writes (w), in [0, 1]",
                  &key.write_share);
  flags.AddInteger("app-servers", "app servers that would cache the key (A)", &c.app_servers);
  flags.AddDuration("refresh", "cache refresh interval, e.g. 1s, 500ms", &refresh);
  flags.AddInteger("replicas", "copies for replicate (R), in [1, N]", &c.replicas);
  flags.AddInteger("split", "sub-keys for split (S), in [1, N]", &c.split);
  flags.AddNumber("target", "advised fixes keep the busiest shard <= F * C", &c.target);
  flags.AddCustom("order",
                  "strategies to try, cheapest first, comma-separated; isolate is implied last",
                  OrderText(c.order), [&c](std::string_view text) -> absl::Status {
                    c.order.clear();
                    for (absl::string_view name :
                         absl::StrSplit(absl::string_view(text.data(), text.size()), ',')) {
                      absl::StatusOr<model::Strategy> s =
                          model::ParseStrategy(std::string_view(name.data(), name.size()));
                      if (!s.ok()) return s.status();
                      c.order.push_back(*s);
                    }
                    return absl::OkStatus();
                  });
  flags.AddBool("json", "print JSON instead of the table", &json);
  absl::StatusOr<config::FlagParser::Parsed> args = flags.Parse(argv);
  if (!args.ok()) return Usage(args.status(), "model");
  if (args->help) return Help(kModelIntro, flags);
  if (!args->positional.empty()) {
    return Usage(absl::InvalidArgumentError("model takes no positional arguments: '" +
                                            args->positional[0] + "'"),
                 "model");
  }
  c.refresh_seconds = absl::ToDoubleSeconds(refresh);
  absl::StatusOr<model::Projection> p = model::Project(c, key);
  if (!p.ok()) return Usage(p.status(), "model");
  const std::string out = json ? ModelJson(c, key, *p) : ModelTable(c, key, *p);
  std::fputs(out.c_str(), stdout);
  return 0;
}

// --- send --------------------------------------------------------------------------------

bool Share(const std::string& text, double* out) {
  absl::StatusOr<double> v = config::ParseNumber(text);
  if (!v.ok() || *v < 0 || *v > 1) return false;
  *out = *v;
  return true;
}

bool Duration(const std::string& text, absl::Duration* out) {
  absl::StatusOr<absl::Duration> d = config::ParseDurationOrInfinite(text);
  if (!d.ok()) return false;
  *out = *d;
  return true;
}

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
    bool ok = Share(fields[0], &c.share);
    if (ok && fields.size() > 1) ok = Share(fields[1], &c.write_share);
    if (ok && fields.size() > 2) ok = Duration(fields[2], &c.start);
    if (ok && fields.size() > 3) ok = Duration(fields[3], &c.stop);
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

int RunSend(const std::vector<std::string_view>& argv) {
  loadgen::SendOptions o;
  std::string to;  // no default: the options' own would send to a daemon by accident
  o.rate = 10000;
  o.sampling = 1.0;
  int64_t keys = 1000000;
  o.zipf_s = 1.0;
  o.background_write_share = 0.1;
  o.duration = absl::InfiniteDuration();
  int64_t datagram_bytes = 1400;
  int64_t seed = 1;
  std::vector<std::string> celebrities;
  bool verbose = false;
  config::FlagParser flags("hotkey-sim send", config::FlagParser::Positional::kAccept);
  flags.AddString("to", "receiver, e.g. 127.0.0.1:10111 or [::1]:10111 (required)", &to)
      .Shown("HOST:PORT");
  flags.AddNumber("rate", "events per second; 0 = as fast as possible", &o.rate);
  flags.AddNumber("sampling", "client sampling probability in (0, 1]; < 1 adds \"!v1 rate=P\"",
                  &o.sampling);
  flags.AddInteger("keys", "background keys \"key:1\"..\"key:M\", Zipf-distributed", &keys);
  flags.AddNumber("zipf", "Zipf exponent of the background, > 0", &o.zipf_s);
  flags.AddNumber("write-share", "write share of background events", &o.background_write_share);
  flags
      .AddList("celebrity",
               "a hot key taking SHARE of all events between START and STOP (durations such as "
               "10s; default always); repeatable. KEY may hold ':' as long as no ':'-separated "
               "part of it reads as a share.",
               &celebrities)
      .Shown("KEY:SHARE[:WRITE_SHARE[:START[:STOP]]]");
  flags.AddDuration("duration", "how long to send, e.g. 30s, 5m, inf", &o.duration,
                    /*allow_infinite=*/true);
  flags.AddInteger("datagram-bytes", "datagram size limit", &datagram_bytes);
  flags.AddInteger("seed", "random seed: same seed, same events", &seed);
  flags.AddBool("verbose", "a line of progress per second", &verbose);
  absl::StatusOr<config::FlagParser::Parsed> args = flags.Parse(argv);
  if (!args.ok()) return Usage(args.status(), "send");
  if (args->help) return Help(kSendIntro, flags);
  if (!args->positional.empty()) {
    return Usage(absl::InvalidArgumentError("send takes no positional arguments: '" +
                                            args->positional[0] + "'"),
                 "send");
  }
  if (to.empty()) return Usage(absl::InvalidArgumentError("--to is required"), "send");
  o.to = to;
  if (keys < 1) return Usage(absl::InvalidArgumentError("--keys must be >= 1"), "send");
  if (datagram_bytes < 1) {
    return Usage(absl::InvalidArgumentError("--datagram-bytes must be positive"), "send");
  }
  o.background_keys = static_cast<uint64_t>(keys);
  o.datagram_bytes = static_cast<size_t>(datagram_bytes);
  o.seed = static_cast<uint64_t>(seed);
  for (const std::string& spec : celebrities) {
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
                  [&] { PrintProgress((*sender)->stats(), &last); }, verbose);
  PrintSendStats("sent", (*sender)->stats(), CpuSeconds() - cpu0);
  return 0;
}

// --- replay ------------------------------------------------------------------------------

// A number that must be > 0 when given (0, the default, means "not given").
std::function<absl::Status(std::string_view)> Positive(double* out) {
  return [out](std::string_view text) -> absl::Status {
    absl::StatusOr<double> v = config::ParseNumber(text);
    if (!v.ok()) return v.status();
    if (*v <= 0) return absl::InvalidArgumentError("must be > 0");
    *out = *v;
    return absl::OkStatus();
  };
}

int RunReplay(const std::vector<std::string_view>& argv) {
  loadgen::ReplayOptions o;
  std::string to;
  o.speed = 0;
  o.rate = 0;
  o.sampling = 1.0;
  int64_t datagram_bytes = 1400;
  bool verbose = false;
  config::FlagParser flags("hotkey-sim replay", config::FlagParser::Positional::kAccept);
  flags.AddString("to", "receiver (required)", &to).Shown("HOST:PORT");
  flags.AddCustom("speed", "follow the trace's timestamps, X times faster (e.g. 1, 10)", "X",
                  Positive(&o.speed));
  flags.AddCustom("rate", "send R events per second instead", "R", Positive(&o.rate));
  flags.AddNumber("sampling", "client sampling probability written in each datagram", &o.sampling);
  flags.AddInteger("datagram-bytes", "datagram size limit", &datagram_bytes);
  flags.AddBool("verbose", "a line of progress per second", &verbose);
  absl::StatusOr<config::FlagParser::Parsed> args = flags.Parse(argv);
  if (!args.ok()) return Usage(args.status(), "replay");
  if (args->help) return Help(kReplayIntro, flags);
  if (args->positional.size() != 1) {
    return Usage(absl::InvalidArgumentError("replay takes exactly one trace FILE"), "replay");
  }
  if (to.empty()) return Usage(absl::InvalidArgumentError("--to is required"), "replay");
  o.to = to;
  if (datagram_bytes < 1) {
    return Usage(absl::InvalidArgumentError("--datagram-bytes must be positive"), "replay");
  }
  o.datagram_bytes = static_cast<size_t>(datagram_bytes);
  if (absl::Status s = o.Validate(); !s.ok()) return Usage(s, "replay");
  absl::StatusOr<std::unique_ptr<loadgen::TraceReader>> trace =
      loadgen::TraceReader::Open(args->positional[0]);
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
                  [&] { PrintProgress((*replayer)->stats().sent, &last); }, verbose);
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
  std::vector<std::string_view> rest(argv + 1, argv + argc);
  if (rest.empty()) {
    std::fputs(kMainHelp, stderr);
    return kUsageError;
  }
  const std::string_view command = rest.front();
  rest.erase(rest.begin());
  if (command == "--help" || command == "-h" || command == "help") {
    const std::string_view topic = rest.empty() ? "" : rest.front();
    if (topic == "model") return RunModel({"--help"});
    if (topic == "send") return RunSend({"--help"});
    if (topic == "replay") return RunReplay({"--help"});
    std::fputs(kMainHelp, stdout);
    return 0;
  }
  if (command == "model") return RunModel(rest);
  if (command == "send") return RunSend(rest);
  if (command == "replay") return RunReplay(rest);
  std::fprintf(stderr, "hotkey-sim: unknown command '%s'\n\n%s", std::string(command).c_str(),
               kMainHelp);
  return kUsageError;
}

}  // namespace
}  // namespace hotkey::sim

int main(int argc, char** argv) { return hotkey::sim::Main(argc, argv); }
