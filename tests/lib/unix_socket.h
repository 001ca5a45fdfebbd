// Blocking Unix-socket helpers for tests that talk to a real server they started on a socket
// in a temporary directory (redis-server, memcached): no port to collide on.

#ifndef HOTKEY_TESTS_LIB_UNIX_SOCKET_H_
#define HOTKEY_TESTS_LIB_UNIX_SOCKET_H_

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <string>
#include <string_view>

namespace hotkey::testing {

// A connected stream socket to `path`, or -1 when nothing listens there (yet).
inline int ConnectUnix(const std::string& path) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr = {};
  addr.sun_family = AF_UNIX;
  path.copy(addr.sun_path, sizeof(addr.sun_path) - 1);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// Writes all of `bytes`; false on an error.
inline bool WriteAll(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n <= 0) return false;
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

}  // namespace hotkey::testing

#endif  // HOTKEY_TESTS_LIB_UNIX_SOCKET_H_
