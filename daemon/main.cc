// hotkeyd: hot-key detection sidecar. See README.md, and `hotkeyd --help` for the flags.

#include <cstdio>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "hotkey/clock/clock.h"
#include "hotkey/config/flags.h"
#include "hotkey/config/hash_secret.h"
#include "hotkey/config/rules_file.h"
#include "hotkey/config/web_config.h"
#include "hotkey/daemon/daemon.h"
#include "hotkey/log/log.h"
#include "hotkey/net/systemd_socket.h"
#include "hotkey/shard/prober.h"
#include "hotkey/source/demo.h"
#include "hotkey/tap/tap.h"

namespace {

// --check-config: each check on its own line of stdout; 0 if all pass, else 1. Reads the
// files as a start would (the same loaders, TLS certificates included), binds nothing.
int CheckConfig(const hotkey::config::FlagsResult& flags) {
  if (!flags.flags_status.ok()) {
    std::printf("flags: %s\n", std::string(flags.flags_status.message()).c_str());
    return 1;
  }
  std::printf("flags: ok\n");
  const hotkey::config::DaemonOptions& options = flags.options;
  bool ok = true;
  auto fail = [&ok](const absl::Status& s) {
    std::printf("%s\n", std::string(s.message()).c_str());
    ok = false;
  };
  absl::StatusOr<hotkey::config::ReloadableOptions> rules = hotkey::config::LoadReloadable(options);
  if (!rules.ok()) {
    fail(rules.status());
  } else if (options.config_file.empty()) {
    std::printf("rules file: none (no --config.file)\n");
  } else {
    std::printf("rules file \"%s\": ok (%zu threshold rules)\n", options.config_file.c_str(),
                rules->alert.rules.size());
  }
  if (options.web.config_file.empty()) {
    std::printf("web config file: none (plain HTTP, no authentication)\n");
  } else if (absl::StatusOr<hotkey::config::WebConfig> web =
                 hotkey::config::LoadWebConfigFile(options.web.config_file);
             !web.ok()) {
    fail(web.status());
  } else if (absl::Status s = hotkey::daemon::CheckWebConfig(options.web, *web); !s.ok()) {
    fail(s);
  } else {
    std::printf("web config file \"%s\": ok (%s, basic auth users: %zu)\n",
                options.web.config_file.c_str(), web->tls_enabled ? "TLS" : "plain HTTP",
                web->basic_auth_users.size());
  }
  if (!options.key_hash_secret_file.empty()) {
    if (absl::StatusOr<std::string> secret =
            hotkey::config::LoadKeyHashSecret(options.key_hash_secret_file);
        !secret.ok()) {
      fail(secret.status());
    } else {
      std::printf("key hash secret file \"%s\": ok\n", options.key_hash_secret_file.c_str());
    }
  }
  // The sources, as starting opens them. The tap's capture: the interface exists and this
  // process may capture on it (CAP_NET_RAW), or the file opens; the same code and message
  // as a start, and no packet read. (UDP is not bound: the check binds nothing.) With the
  // tap, the unit is said too: bytes with --tap.weight=bytes, and then UDP is off.
  if (options.tap.enabled()) {
    std::printf("unit: %s; udp: %s\n", options.CountsBytes() ? "bytes" : "ops",
                options.udp.enabled() ? options.udp.listen_address.c_str() : "off");
    if (absl::Status s = hotkey::tap::CheckCapture(options, hotkey::clock::SteadyClock::Get());
        !s.ok()) {
      fail(s);
    } else {
      const std::string what = options.tap.file.empty()
                                   ? "--tap.interface=" + options.tap.interface
                                   : "--tap.file=" + options.tap.file;
      std::printf("tap capture %s: ok (opened and closed, no packet read)\n", what.c_str());
    }
  }
  // The shard the advice asks for its load: reachable and answering, within the prober's
  // timeout, with the message a start would log.
  if (const hotkey::config::ShardOptions shard = options.shard.Resolved(options.tap);
      !shard.address.empty()) {
    if (absl::Status s = hotkey::shard::CheckReachable(shard, shard.timeout); !s.ok()) {
      fail(absl::Status(s.code(), absl::StrCat("shard ", shard.address, ": ", s.message())));
    } else {
      std::printf("shard %s: ok (answers)\n", shard.address.c_str());
    }
  } else {
    std::printf(
        "shard: not asked (no --tap.interface or --shard.address); the advice uses "
        "the --cluster.* flags\n");
  }
  return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    absl::StatusOr<hotkey::config::FlagsResult> flags = hotkey::config::ParseFlags(argc, argv);
    if (!flags.ok()) {
      std::fprintf(stderr, "hotkeyd: %s\nSee hotkeyd --help.\n",
                   std::string(flags.status().message()).c_str());
      return 2;
    }
    if (flags->action == hotkey::config::FlagsResult::Action::kCheckConfig) {
      return CheckConfig(*flags);
    }
    if (flags->action != hotkey::config::FlagsResult::Action::kRun) {
      std::fputs(flags->text.c_str(), stdout);
      return 0;
    }
    static std::mutex log_mu;
    auto log = [min_level = flags->options.log_level,
                json = flags->options.log_format == "json"](std::string_view logfmt) {
      if (!hotkey::log::PassesLevel(logfmt, min_level)) return;
      const std::string text = json ? hotkey::log::LogfmtToJson(logfmt) : std::string(logfmt);
      const std::string_view line = text;
      std::lock_guard<std::mutex> l(log_mu);
      std::fwrite(line.data(), 1, line.size(), stderr);
      std::fputc('\n', stderr);
      std::fflush(stderr);
    };
    // The files the daemon needs are read here, by config/; the daemon is given their
    // contents, and a loader for the rules file, which every reload reads again.
    const hotkey::config::DaemonOptions& options = flags->options;
    hotkey::daemon::Daemon::Inputs inputs;
    absl::StatusOr<std::string> secret =
        hotkey::config::LoadKeyHashSecret(options.key_hash_secret_file);
    if (!secret.ok()) {
      std::fprintf(stderr, "hotkeyd: %s\n", std::string(secret.status().message()).c_str());
      return 1;
    }
    inputs.label_secret = *std::move(secret);
    if (!options.web.config_file.empty()) {
      // Read now (an error stops the start), then polled by the daemon for changes.
      auto watcher = std::make_shared<hotkey::config::WebConfigWatcher>(options.web.config_file);
      absl::StatusOr<std::optional<hotkey::config::WebConfig>> web = watcher->Poll();
      if (!web.ok()) {
        std::fprintf(stderr, "hotkeyd: %s\n", std::string(web.status().message()).c_str());
        return 1;
      }
      inputs.web_config = **std::move(web);
      inputs.poll_web_config = [watcher] { return watcher->Poll(); };
    }
    inputs.load_rules = [options] { return hotkey::config::LoadReloadable(options); };
    if (!options.measured_loads.file.empty()) {
      // Not read now: the feed may start after the daemon; a missing file is logged and
      // counted until it appears.
      auto watcher =
          std::make_shared<hotkey::config::MeasuredLoadsWatcher>(options.measured_loads.file);
      inputs.poll_measured_loads = [watcher] { return watcher->Poll(); };
    }
    if (options.web.systemd_socket) {
      absl::StatusOr<std::vector<int>> fds = hotkey::net::TakeSystemdListenFds();
      if (!fds.ok()) {
        std::fprintf(stderr, "hotkeyd: --web.systemd-socket: %s\n",
                     std::string(fds.status().message()).c_str());
        return 1;
      }
      inputs.web_listen_fds = *std::move(fds);
    }
    // Durations run on the monotonic clock; the wall clock only stamps output.
    const hotkey::clock::Clock& mono = hotkey::clock::SteadyClock::Get();
    static const hotkey::clock::RealClock wall;
    std::vector<std::unique_ptr<hotkey::source::EventSource>> sources;
    if (options.demo) {
      absl::StatusOr<std::unique_ptr<hotkey::source::EventSource>> demo =
          hotkey::source::NewDemoSource(options, mono);
      if (!demo.ok()) {
        std::fprintf(stderr, "hotkeyd: %s\n", std::string(demo.status().message()).c_str());
        return 1;
      }
      sources.push_back(*std::move(demo));
    }
    if (options.tap.enabled()) {
      // Opened before the daemon binds anything: a missing CAP_NET_RAW fails at once.
      absl::StatusOr<std::unique_ptr<hotkey::source::EventSource>> tap =
          hotkey::tap::NewTapSource(options, mono);
      if (!tap.ok()) {
        std::fprintf(stderr, "hotkeyd: %s\n", std::string(tap.status().message()).c_str());
        return 1;
      }
      sources.push_back(*std::move(tap));
    }
    absl::StatusOr<std::unique_ptr<hotkey::daemon::Daemon>> d = hotkey::daemon::Daemon::Create(
        options, std::move(inputs), mono, wall, log, std::move(sources));
    if (!d.ok()) {
      std::fprintf(stderr, "hotkeyd: %s\n", std::string(d.status().message()).c_str());
      return 1;
    }
    (*d)->Run(/*handle_signals=*/true);
    return 0;
  } catch (const std::exception& e) {
    // Only main catches: anything that gets here is a bug; say so and exit non-zero.
    std::fprintf(stderr, "hotkeyd: fatal: %s\n", e.what());
    return 1;
  }
}
