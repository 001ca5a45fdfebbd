#include "hotkey/net/systemd_socket.h"

#include <fcntl.h>
#include <unistd.h>

#include <charconv>
#include <cstdlib>

#include "absl/strings/str_cat.h"

namespace hotkey::net {

namespace {

std::optional<long> Number(std::string_view text) {
  long v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || text.empty()) return std::nullopt;
  return v;
}

std::optional<std::string_view> Env(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr) return std::nullopt;
  return std::string_view(v);
}

}  // namespace

absl::StatusOr<int> SystemdListenFdCount(std::optional<std::string_view> listen_pid,
                                         std::optional<std::string_view> listen_fds, pid_t self) {
  if (!listen_pid || !listen_fds) return 0;
  const std::optional<long> pid = Number(*listen_pid);
  if (!pid || *pid <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("LISTEN_PID=\"", std::string(*listen_pid), "\" is not a process id"));
  }
  if (*pid != self) return 0;
  const std::optional<long> n = Number(*listen_fds);
  // Far more than any .socket unit passes, and keeps 3 + n an int.
  if (!n || *n < 0 || *n > 4096) {
    return absl::InvalidArgumentError(absl::StrCat("LISTEN_FDS=\"", std::string(*listen_fds),
                                                   "\" is not a number of sockets (0 to 4096)"));
  }
  return static_cast<int>(*n);
}

absl::StatusOr<std::vector<int>> TakeSystemdListenFds() {
  absl::StatusOr<int> n = SystemdListenFdCount(Env("LISTEN_PID"), Env("LISTEN_FDS"), ::getpid());
  ::unsetenv("LISTEN_PID");
  ::unsetenv("LISTEN_FDS");
  ::unsetenv("LISTEN_FDNAMES");
  if (!n.ok()) return n.status();
  std::vector<int> fds;
  for (int fd = kSystemdListenFdsStart; fd < kSystemdListenFdsStart + *n; ++fd) {
    const int flags = ::fcntl(fd, F_GETFD);
    if (flags < 0 || ::fcntl(fd, F_SETFD, flags | FD_CLOEXEC) < 0) {
      return absl::FailedPreconditionError(
          absl::StrCat("LISTEN_FDS=", *n, " but file descriptor ", fd, " is not open"));
    }
    fds.push_back(fd);
  }
  return fds;
}

}  // namespace hotkey::net
