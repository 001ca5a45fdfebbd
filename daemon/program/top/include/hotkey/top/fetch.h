// Fetcher: GET <url>/api/v1/top from a hotkeyd, over HTTP or HTTPS, with basic auth, for
// `hotkeyd top`.
//
// Synchronous (Boost.Beast on a private io_context): one new connection per Get(), closed
// after the answer, so a daemon that restarts between two refreshes is simply reached again.
// Every step after name resolution (connect, TLS handshake, write, read) is bounded by the
// timeout together; resolution is the system resolver's (getaddrinfo), bounded by its own
// settings.
//
// HTTPS verifies the server's certificate against the system's CAs (or --ca-file's) and
// its name or IP address against the URL's host, unless insecure_skip_verify.
//
// Thread-compatible: one Fetcher per thread.

#ifndef HOTKEY_TOP_FETCH_H_
#define HOTKEY_TOP_FETCH_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace hotkey::top {

struct FetchOptions {
  // http://host[:port][/prefix] or https://...; the request goes to <prefix>/api/v1/top.
  // Credentials are not accepted in the URL (a command line is visible to every user).
  std::string url = "http://localhost:10110";
  // Basic auth when username is not empty.
  std::string username;
  std::string password;
  // PEM file of CAs trusted for https:// besides the system's; empty: the system's only.
  std::string ca_file;
  bool insecure_skip_verify = false;
  absl::Duration timeout = absl::Seconds(2);
};

struct FetchReply {
  int status = 0;  // the HTTP status
  std::string body;
};

class Fetcher {
 public:
  // Checks the URL (scheme http or https, a host, no credentials, query or fragment) and,
  // for https, loads the CAs. InvalidArgument names what is wrong.
  static absl::StatusOr<std::unique_ptr<Fetcher>> Create(const FetchOptions& options);

  ~Fetcher();

  // One GET. Any HTTP status is a reply; Unavailable (connection refused, timeout, TLS
  // failure, a malformed answer, ...) says what failed. Never throws.
  absl::StatusOr<FetchReply> Get();

  // The request target, e.g. "/api/v1/top".
  const std::string& target() const;

 private:
  struct State;
  explicit Fetcher(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace hotkey::top

#endif  // HOTKEY_TOP_FETCH_H_
