// Socket activation: the listening sockets systemd passes to a service started by its
// .socket unit (deploy/systemd/hotkeyd.socket), found the way sd_listen_fds(3) finds them.
//
// The protocol (sd_listen_fds(3), "File descriptor passing"): systemd sets LISTEN_PID to
// the service's pid and LISTEN_FDS to the number of sockets, which are the file
// descriptors SD_LISTEN_FDS_START (3), 4, ... Written here rather than linked from
// libsystemd: the protocol is two environment variables, and hotkeyd needs nothing else
// of libsystemd (nor a build dependency on its -dev package for it).
//
// Thread-compatible: TakeSystemdListenFds() changes the environment; call it from main
// before starting threads.

#ifndef HOTKEY_NET_SYSTEMD_SOCKET_H_
#define HOTKEY_NET_SYSTEMD_SOCKET_H_

#include <sys/types.h>

#include <optional>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace hotkey::net {

// The first file descriptor systemd passes (SD_LISTEN_FDS_START of sd-daemon.h).
inline constexpr int kSystemdListenFdsStart = 3;

// How many sockets LISTEN_PID and LISTEN_FDS (null: unset) pass to process `self`: 0 when
// either is unset or LISTEN_PID names another process (the variables were inherited from
// a parent); an error when they are set but malformed. Pure.
absl::StatusOr<int> SystemdListenFdCount(std::optional<std::string_view> listen_pid,
                                         std::optional<std::string_view> listen_fds, pid_t self);

// The descriptors systemd passed to this process (none when it passed none). Like
// sd_listen_fds(1): LISTEN_PID, LISTEN_FDS and LISTEN_FDNAMES are unset, so that children
// do not take the sockets for theirs, and each descriptor is made close-on-exec.
absl::StatusOr<std::vector<int>> TakeSystemdListenFds();

}  // namespace hotkey::net

#endif  // HOTKEY_NET_SYSTEMD_SOCKET_H_
