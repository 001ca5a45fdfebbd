// `hotkeyd top`: flags, the terminal and the refresh loop; see top.h.

#include "hotkey/top/top.h"

#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "hotkey/config/flag_parser.h"
#include "hotkey/top/render.h"

namespace hotkey::top {

namespace {

// Set by the signal handlers, read by the loop: a signal handler can only reach the loop
// through a static (and only through volatile sig_atomic_t).
volatile std::sig_atomic_t quit_signal = 0;
volatile std::sig_atomic_t resized = 0;

void OnQuit(int) { quit_signal = 1; }
void OnResize(int) { resized = 1; }

struct TerminalSize {
  size_t columns = 80;  // when unknown (not a terminal)
  size_t rows = 0;      // 0: unknown
};

TerminalSize QuerySize() {
  TerminalSize size;
  winsize ws{};
  if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) {
    size.columns = ws.ws_col;
    size.rows = ws.ws_row;
  }
  return size;
}

void WriteAll(std::string_view s) {
  while (!s.empty()) {
    const ssize_t n = write(STDOUT_FILENO, s.data(), s.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // stdout is gone: nothing to show anything on
    s.remove_prefix(static_cast<size_t>(n));
  }
}

// The terminal while top draws: keys read one at a time without echo (signals stay on, so
// Ctrl-C is SIGINT), the alternate screen (the shell's screen comes back on exit, as with
// top and less), no cursor, no autowrap. The destructor restores all of it.
class Screen {
 public:
  Screen() {
    if (isatty(STDIN_FILENO) && tcgetattr(STDIN_FILENO, &saved_) == 0) {
      termios raw = saved_;
      raw.c_lflag &= ~static_cast<tcflag_t>(ICANON | ECHO);
      raw.c_cc[VMIN] = 1;
      raw.c_cc[VTIME] = 0;
      restore_ = tcsetattr(STDIN_FILENO, TCSANOW, &raw) == 0;
    }
    // alternate screen, hide cursor, autowrap off, clear
    WriteAll("\x1b[?1049h\x1b[?25l\x1b[?7l\x1b[2J");
  }
  ~Screen() {
    // autowrap on, show cursor, back to the main screen
    WriteAll("\x1b[?7h\x1b[?25h\x1b[?1049l");
    if (restore_) tcsetattr(STDIN_FILENO, TCSANOW, &saved_);
  }
  Screen(const Screen&) = delete;
  Screen& operator=(const Screen&) = delete;

  // Draws `lines` from the top left, erasing what the last frame left beyond them. Each line
  // is erased whole before it is written (EL 2), not after (EL 0): a line as wide as the
  // terminal leaves the cursor on its last column, which an erase after it would blank.
  void Draw(const std::vector<std::string>& lines) {
    std::string frame = "\x1b[H";
    for (size_t i = 0; i < lines.size(); ++i) {
      absl::StrAppend(&frame, "\x1b[2K", lines[i], i + 1 < lines.size() ? "\r\n" : "");
    }
    frame.append("\x1b[J");
    WriteAll(frame);
  }

 private:
  termios saved_{};
  bool restore_ = false;
};

// What the last fetch gave, to draw (and redraw on a resize).
struct LastAnswer {
  std::optional<FetchReply> reply;  // or:
  std::string error;
};

std::vector<std::string> Lines(const LastAnswer& a, const TopOptions& options,
                               const RenderOptions& render) {
  const std::string retry =
      options.once ? "" : absl::StrCat("; retrying every ", absl::FormatDuration(options.interval));
  if (!a.reply) return RenderError(absl::StrCat(a.error, retry), render);
  // hotkeyd's own errors are JSON ({"error": ...}); anything else (a 401 from the web
  // config's basic auth, a proxy's page) is shown with its status.
  const absl::string_view body = absl::StripLeadingAsciiWhitespace(a.reply->body);
  if (a.reply->status != 200 && !absl::StartsWith(body, "{")) {
    return RenderError(absl::StrCat("HTTP ", a.reply->status, ": ",
                                    absl::StripAsciiWhitespace(body.substr(0, 200)), retry),
                       render);
  }
  return Render(a.reply->body, render);
}

LastAnswer Fetch(Fetcher& fetcher) {
  LastAnswer a;
  absl::StatusOr<FetchReply> r = fetcher.Get();
  if (r.ok()) {
    a.reply = *std::move(r);
  } else {
    a.error = std::string(r.status().message());
  }
  return a;
}

int RunOnce(Fetcher& fetcher, const TopOptions& options) {
  const LastAnswer a = Fetch(fetcher);
  RenderOptions render{.width = QuerySize().columns, .height = 0, .source = options.fetch.url};
  if (!a.reply) {
    std::fprintf(stderr, "hotkeyd top: %s\n", a.error.c_str());
    return 1;
  }
  std::string out;
  for (const std::string& line : Lines(a, options, render)) absl::StrAppend(&out, line, "\n");
  WriteAll(out);
  return a.reply->status == 200 ? 0 : 1;
}

int RunInteractive(Fetcher& fetcher, const TopOptions& options) {
  struct sigaction quit = {}, resize = {};
  quit.sa_handler = OnQuit;
  resize.sa_handler = OnResize;
  // No SA_RESTART: a signal interrupts poll() at once.
  sigemptyset(&quit.sa_mask);
  sigemptyset(&resize.sa_mask);
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaction(sig, &quit, nullptr);
  sigaction(SIGWINCH, &resize, nullptr);

  Screen screen;
  using Clock = std::chrono::steady_clock;
  const auto interval = absl::ToChronoNanoseconds(options.interval);
  bool stdin_open = true;
  // Shown until the first answer, which can take up to --timeout.
  LastAnswer last{.reply = std::nullopt, .error = "connecting"};
  {
    const TerminalSize size = QuerySize();
    screen.Draw(RenderError(
        last.error, {.width = size.columns, .height = size.rows, .source = options.fetch.url}));
  }
  Clock::time_point next_fetch = Clock::now();
  while (quit_signal == 0) {
    bool draw = false;
    if (Clock::now() >= next_fetch) {
      next_fetch = Clock::now() + interval;
      last = Fetch(fetcher);
      draw = true;
    }
    if (resized != 0) {
      resized = 0;
      draw = true;
    }
    if (draw) {
      const TerminalSize size = QuerySize();
      screen.Draw(Lines(last, options,
                        {.width = size.columns, .height = size.rows, .source = options.fetch.url}));
    }
    const auto wait = std::chrono::ceil<std::chrono::milliseconds>(next_fetch - Clock::now());
    pollfd in{.fd = STDIN_FILENO, .events = POLLIN, .revents = 0};
    const int ready =
        poll(&in, stdin_open ? 1 : 0, static_cast<int>(std::max<int64_t>(wait.count(), 0)));
    if (ready > 0) {
      char keys[64];
      const ssize_t n = read(STDIN_FILENO, keys, sizeof keys);
      if (n <= 0) {
        // End of input (stdin is not a terminal): only signals quit from now on.
        if (n == 0 || (errno != EINTR && errno != EAGAIN)) stdin_open = false;
        continue;
      }
      for (ssize_t i = 0; i < n; ++i) {
        if (keys[i] == 'q' || keys[i] == 'Q' || keys[i] == '\x03') return 0;
      }
    }
  }
  return 0;
}

}  // namespace

absl::StatusOr<TopFlags> ParseTopFlags(int argc, const char* const* argv,
                                       const char* env_password) {
  TopFlags flags;
  TopOptions& o = flags.options;
  std::string password_file;
  config::FlagParser parser("hotkeyd top");
  parser.Section("Display");
  parser.AddDuration("interval", "Time between two refreshes (at least 100ms).", &o.interval);
  parser.AddBool("once",
                 "Print one screen as plain text (no terminal control sequences) and exit: 0 "
                 "when hotkeyd answered with its keys, 1 otherwise.",
                 &o.once);
  parser.Section("Connection");
  parser.AddString("url",
                   "hotkeyd's web address (its --web.listen-address): http://host:port or "
                   "https://host:port.",
                   &o.fetch.url);
  parser.AddDuration("timeout",
                     "Time allowed for each refresh's request: connect, TLS handshake and "
                     "answer together.",
                     &o.fetch.timeout);
  parser.AddString("web.username",
                   "Basic auth user (one of the basic_auth_users of hotkeyd's "
                   "--web.config.file). The password is read from the environment variable "
                   "HOTKEYD_WEB_PASSWORD, or from --web.password-file.",
                   &o.fetch.username);
  parser.AddString("web.password-file", "File whose first line is the password of --web.username.",
                   &password_file);
  parser.AddString("ca-file",
                   "With https://: a PEM file of CAs to trust besides the system's (the CA "
                   "that signed hotkeyd's certificate).",
                   &o.fetch.ca_file);
  parser.AddBool("insecure-skip-verify",
                 "With https://: do not check hotkeyd's certificate or name (a self-signed "
                 "certificate). The traffic is encrypted, but anyone in the path can read it.",
                 &o.fetch.insecure_skip_verify);
  absl::StatusOr<config::FlagParser::Parsed> parsed = parser.Parse(argc, argv);
  if (!parsed.ok()) return parsed.status();
  if (parsed->help) {
    flags.help = true;
    flags.help_text = absl::StrCat(
        "usage: hotkeyd top [<flags>]\n\n"
        "Shows the live top keys of a running hotkeyd (GET /api/v1/top), refreshed every\n"
        "--interval: each key's share of the shard's traffic, its ops/s, its write ratio,\n"
        "how long it has been hot and the advised fix, under a line of the shard's totals.\n"
        "q or Ctrl-C quits. A failed request is shown and retried at the next refresh.\n\n",
        parser.Help());
    return flags;
  }
  if (o.interval < kMinInterval) {
    return absl::InvalidArgumentError(
        absl::StrCat("flag --interval: at least ", absl::FormatDuration(kMinInterval)));
  }
  if (o.fetch.timeout <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("flag --timeout: must be more than 0");
  }
  if (!password_file.empty()) {
    if (o.fetch.username.empty()) {
      return absl::InvalidArgumentError("flag --web.password-file needs --web.username");
    }
    std::ifstream in(password_file);
    std::string line;
    if (!in || !std::getline(in, line)) {
      return absl::InvalidArgumentError(
          absl::StrCat("flag --web.password-file: cannot read \"", password_file, "\""));
    }
    o.fetch.password = std::string(absl::StripSuffix(line, "\r"));
  } else if (!o.fetch.username.empty() && env_password != nullptr) {
    o.fetch.password = env_password;
  }
  return flags;
}

int Main(int argc, const char* const* argv) {
  absl::StatusOr<TopFlags> flags = ParseTopFlags(argc, argv, std::getenv(kPasswordEnv));
  if (!flags.ok()) {
    std::fprintf(stderr, "hotkeyd top: %s\nSee hotkeyd top --help.\n",
                 std::string(flags.status().message()).c_str());
    return 2;
  }
  if (flags->help) {
    std::fputs(flags->help_text.c_str(), stdout);
    return 0;
  }
  absl::StatusOr<std::unique_ptr<Fetcher>> fetcher = Fetcher::Create(flags->options.fetch);
  if (!fetcher.ok()) {
    std::fprintf(stderr, "hotkeyd top: %s\n", std::string(fetcher.status().message()).c_str());
    return 2;
  }
  return flags->options.once ? RunOnce(**fetcher, flags->options)
                             : RunInteractive(**fetcher, flags->options);
}

}  // namespace hotkey::top
