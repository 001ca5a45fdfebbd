// hotkeyd: hot-key detection sidecar. See README.md, and `hotkeyd --help` for the flags.

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
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
#include "hotkey/privilege/drop.h"
#include "hotkey/shard/prober.h"
#include "hotkey/source/demo.h"
#include "hotkey/tap/tap.h"
#include "hotkey/top/top.h"

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
  if (options.web.config_file.empty() && options.feed_require_auth) {
    fail(hotkey::daemon::CheckFeedAuth(options, hotkey::config::WebConfig{}));
  } else if (options.web.config_file.empty()) {
    std::printf("web config file: none (plain HTTP, no authentication)\n");
  } else if (absl::StatusOr<hotkey::config::WebConfig> web =
                 hotkey::config::LoadWebConfigFile(options.web.config_file);
             !web.ok()) {
    fail(web.status());
  } else if (absl::Status s = hotkey::daemon::CheckWebConfig(options.web, *web); !s.ok()) {
    fail(s);
  } else if (absl::Status f = hotkey::daemon::CheckFeedAuth(options, *web); !f.ok()) {
    fail(f);
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

// The files a process running as the switched-to user re-reads or rewrites later: each
// must stay usable, or the start fails now, saying which, rather than the first reload.
absl::Status CheckFilesAfterSwitch(const hotkey::config::DaemonOptions& options,
                                   const hotkey::config::WebConfig& web) {
  using hotkey::privilege::CheckAccess;
  const std::pair<const char*, const std::string*> readable[] = {
      {"--config.file", &options.config_file},
      {"--web.config.file", &options.web.config_file},
      {"the web config's cert_file", &web.tls.cert_file},
      {"the web config's key_file", &web.tls.key_file},
      {"the web config's client_ca_file", &web.tls.client_ca_file},
      {"--model.measured-loads-file", &options.measured_loads.file}};
  for (const auto& [what, path] : readable) {
    if (path->empty()) continue;
    // The measured-loads file is polled until it appears: checked only when it exists.
    if (path == &options.measured_loads.file && !CheckAccess(*path, F_OK).ok()) continue;
    if (absl::Status s = CheckAccess(*path, R_OK); !s.ok()) {
      return absl::PermissionDeniedError(absl::StrCat(what, " is not readable: ", s.message()));
    }
  }
  if (!options.storage.path.empty()) {
    // Saves write a temporary file beside the state file and rename it over.
    std::filesystem::path dir = std::filesystem::path(options.storage.path).parent_path();
    if (dir.empty()) dir = std::filesystem::path(".");
    if (absl::Status s = CheckAccess(dir.string(), W_OK | X_OK); !s.ok()) {
      return absl::PermissionDeniedError(
          absl::StrCat("--storage.path's directory is not writable: ", s.message()));
    }
  }
  return absl::OkStatus();
}

// The files read as root, before the switch to `user`: refused (saying which and how to fix
// it) when `user` could change them, since parsing what the unprivileged user wrote with
// root's privileges would hand root to whoever holds that user. `web` is the web config,
// once read (its certificates are read by the HTTP server, before the switch); null before.
absl::Status CheckReadAsRoot(const hotkey::config::DaemonOptions& options,
                             const hotkey::config::WebConfig* web,
                             const hotkey::privilege::User& user) {
  const hotkey::config::ShardOptions shard = options.shard.Resolved(options.tap);
  std::vector<std::pair<const char*, std::string>> files;
  if (web == nullptr) {
    files = {{"--config.file", options.config_file},
             {"--web.config.file", options.web.config_file},
             {"--key.hash-secret-file", options.key_hash_secret_file},
             {"--tap.file", options.tap.file},
             {"--shard.tls-ca-file", shard.tls_ca_file},
             {"--shard.tls-cert-file", shard.tls_cert_file},
             {"--shard.tls-key-file", shard.tls_key_file}};
  } else {
    files = {{"the web config's cert_file", web->tls.cert_file},
             {"the web config's key_file", web->tls.key_file},
             {"the web config's client_ca_file", web->tls.client_ca_file}};
  }
  for (const auto& [what, path] : files) {
    if (path.empty()) continue;
    absl::Status s = hotkey::privilege::CheckNotWritableBy(path, user);
    if (absl::IsNotFound(s)) continue;  // the loader says so, as without a switch
    if (!s.ok()) return absl::PermissionDeniedError(absl::StrCat(what, ": ", s.message()));
  }
  return absl::OkStatus();
}

}  // namespace

int main(int argc, char** argv) {
  try {
    // `hotkeyd top`: a client of a running hotkeyd's API, with flags of its own (top/top.h).
    if (argc > 1 && std::string_view(argv[1]) == "top") {
      return hotkey::top::Main(argc - 1, argv + 1);
    }
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
      if (flags->action == hotkey::config::FlagsResult::Action::kPrintHelp) {
        std::fputs(
            "\nSubcommands:\n  hotkeyd top [<flags>]\n        The live top keys of a running "
            "hotkeyd in a terminal, like top(1)\n        (hotkeyd top --help).\n",
            stdout);
      }
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
    // Privileges (privilege/drop.h): no_new_privs and an empty bounding set now, while this
    // is the only thread, so that every thread inherits them; the capabilities and root
    // itself go once everything is open.
    absl::StatusOr<hotkey::privilege::Plan> privileges =
        hotkey::privilege::MakePlan(options.run_as, geteuid(), hotkey::privilege::LookUpUser);
    if (!privileges.ok()) {
      std::fprintf(stderr, "hotkeyd: --run-as: %s\n",
                   std::string(privileges.status().message()).c_str());
      return 1;
    }
    bool bounding_set_emptied = false;
    if (!privileges->keep_all) {
      absl::StatusOr<bool> restricted = hotkey::privilege::Restrict();
      if (!restricted.ok()) {
        std::fprintf(stderr, "hotkeyd: %s\n", std::string(restricted.status().message()).c_str());
        return 1;
      }
      bounding_set_emptied = *restricted;
    }
    // Root reads the files below before the switch; the state file (--storage.path) and the
    // measured-loads file are read only after it (daemon.h: Run).
    const auto refuse_read_as_root = [&](const hotkey::config::WebConfig* web) {
      if (!privileges->switch_to) return false;
      absl::Status s = CheckReadAsRoot(flags->options, web, *privileges->switch_to);
      if (s.ok()) return false;
      std::fprintf(stderr, "hotkeyd: %s\n", std::string(s.message()).c_str());
      return true;
    };
    if (refuse_read_as_root(nullptr)) return 1;
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
      if (refuse_read_as_root(&inputs.web_config)) return 1;
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
    // Not root: a capability (the unit's CAP_NET_RAW) is per thread, so it goes now, before
    // the daemon creates threads; the daemon binds and reads as this same user anyway.
    if (!privileges->keep_all && !privileges->switch_to) {
      if (absl::Status s = hotkey::privilege::Drop(*privileges); !s.ok()) {
        std::fprintf(stderr, "hotkeyd: %s\n", std::string(s.message()).c_str());
        return 1;
      }
    }
    const hotkey::config::WebConfig web_config = inputs.web_config;
    absl::StatusOr<std::unique_ptr<hotkey::daemon::Daemon>> d = hotkey::daemon::Daemon::Create(
        options, std::move(inputs), mono, wall, log, std::move(sources));
    if (!d.ok()) {
      std::fprintf(stderr, "hotkeyd: %s\n", std::string(d.status().message()).c_str());
      return 1;
    }
    // Root: everything is open; the switch reaches every thread (drop.h).
    if (privileges->switch_to) {
      absl::Status s = hotkey::privilege::Drop(*privileges);
      if (s.ok()) s = CheckFilesAfterSwitch(options, web_config);
      if (!s.ok()) {
        std::fprintf(stderr, "hotkeyd: as user %s (uid %u): %s\n",
                     privileges->switch_to->name.c_str(), privileges->switch_to->uid,
                     std::string(s.message()).c_str());
        return 1;
      }
    }
    if (privileges->keep_all) {
      log(hotkey::log::LogLine(wall.Now(), "warn",
                               "privileges kept, as --run-as=root asks: running as root with "
                               "every capability; dangerous: --run-as=auto drops them")
              .text());
    } else {
      absl::StatusOr<std::vector<hotkey::privilege::ThreadCreds>> threads =
          hotkey::privilege::ReadThreads();
      absl::Status s = threads.status();
      if (s.ok()) {
        s = hotkey::privilege::Check(*threads, privileges->switch_to.has_value(),
                                     /*expect_no_new_privs=*/true);
      }
      if (!s.ok()) {
        std::fprintf(stderr, "hotkeyd: privileges not dropped: %s\n",
                     std::string(s.message()).c_str());
        return 1;
      }
      const uid_t uid = geteuid();
      log(hotkey::log::LogLine(wall.Now(), "info", "privileges dropped")
              .Value("user",
                     privileges->switch_to ? privileges->switch_to->name : std::string("unchanged"))
              .Value("uid", absl::StrCat(uid))
              .Value("gid", absl::StrCat(getegid()))
              .Value("capabilities", "none")
              .Value("bounding_set", bounding_set_emptied ? "empty" : "kept")
              .Value("no_new_privs", "1")
              .Value("threads", absl::StrCat(threads->size()))
              .text());
      if (privileges->fell_back) {
        log(hotkey::log::LogLine(wall.Now(), "warn",
                                 "no hotkeyd user: running as nobody, which other daemons may "
                                 "share; create the hotkeyd user to give hotkeyd its own")
                .Quoted("command", hotkey::privilege::kCreateUserCommand)
                .text());
      }
    }
    (*d)->Run(/*handle_signals=*/true);
    return 0;
  } catch (const std::exception& e) {
    // Only main catches: anything that gets here is a bug; say so and exit non-zero.
    std::fprintf(stderr, "hotkeyd: fatal: %s\n", e.what());
    return 1;
  }
}
