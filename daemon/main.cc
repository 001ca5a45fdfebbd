// hotkeyd: hot-key detection sidecar. See README.md, and `hotkeyd --help` for the flags.

#include <cstdio>
#include <memory>
#include <mutex>
#include <vector>

#include "hotkey/clock/clock.h"
#include "hotkey/config/flags.h"
#include "hotkey/config/hash_secret.h"
#include "hotkey/config/rules_file.h"
#include "hotkey/config/web_config.h"
#include "hotkey/daemon/daemon.h"
#include "hotkey/daemon/demo.h"
#include "hotkey/daemon/tap.h"
#include "log.h"

int main(int argc, char** argv) {
  try {
    absl::StatusOr<hotkey::config::FlagsResult> flags = hotkey::config::ParseFlags(argc, argv);
    if (!flags.ok()) {
      std::fprintf(stderr, "hotkeyd: %s\nSee hotkeyd --help.\n",
                   std::string(flags.status().message()).c_str());
      return 2;
    }
    if (flags->action != hotkey::config::FlagsResult::Action::kRun) {
      std::fputs(flags->text.c_str(), stdout);
      return 0;
    }
    static std::mutex log_mu;
    auto log = [min_level = flags->options.log_level](std::string_view line) {
      if (!hotkey::daemon::PassesLevel(line, min_level)) return;
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
      absl::StatusOr<hotkey::config::WebConfig> web =
          hotkey::config::LoadWebConfigFile(options.web.config_file);
      if (!web.ok()) {
        std::fprintf(stderr, "hotkeyd: %s\n", std::string(web.status().message()).c_str());
        return 1;
      }
      inputs.web_config = *std::move(web);
    }
    inputs.load_rules = [options] { return hotkey::config::LoadReloadable(options); };
    static hotkey::clock::RealClock clock;
    std::vector<std::unique_ptr<hotkey::daemon::EventSource>> sources;
    if (options.demo) {
      absl::StatusOr<std::unique_ptr<hotkey::daemon::EventSource>> demo =
          hotkey::daemon::NewDemoSource(options, clock);
      if (!demo.ok()) {
        std::fprintf(stderr, "hotkeyd: %s\n", std::string(demo.status().message()).c_str());
        return 1;
      }
      sources.push_back(*std::move(demo));
    }
    if (options.tap.enabled()) {
      // Opened before the daemon binds anything: a missing CAP_NET_RAW fails at once.
      absl::StatusOr<std::unique_ptr<hotkey::daemon::EventSource>> tap =
          hotkey::daemon::NewTapSource(options, clock);
      if (!tap.ok()) {
        std::fprintf(stderr, "hotkeyd: %s\n", std::string(tap.status().message()).c_str());
        return 1;
      }
      sources.push_back(*std::move(tap));
    }
    absl::StatusOr<std::unique_ptr<hotkey::daemon::Daemon>> d =
        hotkey::daemon::Daemon::Create(options, std::move(inputs), clock, log, std::move(sources));
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
