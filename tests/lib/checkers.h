// Helpers for the daemon tests: independent checkers of what the daemon emits (UTF-8, JSON,
// the Prometheus text format), and small loopback clients (HTTP over Boost.Beast, UDP).
//
// The UTF-8 and Prometheus checkers are written from the specifications (RFC 3629, the
// text exposition format 0.0.4), not from the daemon's code, so a bug shared by writer and
// checker is unlikely. The JSON checker is Boost.JSON's parser (the daemon uses only its
// serializer) in its strict RFC 8259 mode, with the UTF-8 checker above applied to every
// string as well. They are strict: anything the spec does not allow is an error.
//
// Thread-compatible; each client object belongs to one thread.

#ifndef HOTKEY_TESTS_LIB_CHECKERS_H_
#define HOTKEY_TESTS_LIB_CHECKERS_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ip/udp.hpp>

#include "alloc_count.h"

namespace hotkey::testing {

using ::hotkey::testing::AllocationsOnThisThread;  // tests/lib/alloc_count.h

// True if `s` is valid UTF-8 per RFC 3629: no overlong forms, no surrogates, nothing above
// U+10FFFF, no truncated sequence.
bool IsValidUtf8(std::string_view s);

// A parsed JSON value. Numbers are doubles; objects keep their keys sorted (duplicates are
// an error in the parser).
struct Json {
  enum Kind { kNull, kBool, kNumber, kString, kArray, kObject } kind = kNull;
  bool boolean = false;
  double number = 0;
  std::string string;
  std::vector<Json> array;
  std::map<std::string, Json> object;

  // The member `name` of an object; throws std::out_of_range if absent (a test failure).
  const Json& operator[](const std::string& name) const { return object.at(name); }
  bool Has(const std::string& name) const { return object.count(name) > 0; }
};

// Parses RFC 8259 JSON (the whole text, surrounding whitespace allowed): duplicate member
// names, strings that are not valid UTF-8 and numbers out of a double's range are errors;
// numbers are correctly rounded. On error returns nullopt and describes it in *error.
std::optional<Json> ParseJson(std::string_view text, std::string* error);

// One sample of the Prometheus text format, label values decoded.
struct Sample {
  std::string name;
  std::map<std::string, std::string> labels;
  double value = 0;
};

struct Exposition {
  std::vector<Sample> samples;
  std::map<std::string, std::string> types;  // family name -> counter|gauge|...
  std::map<std::string, std::string> help;   // family name -> help text (decoded)

  // Samples named `name` whose labels include every pair of `match`.
  std::vector<Sample> Find(const std::string& name,
                           const std::map<std::string, std::string>& match = {}) const;
  // The value of the only sample matching, or nullopt if none or several match.
  std::optional<double> Value(const std::string& name,
                              const std::map<std::string, std::string>& match = {}) const;
};

// Parses the text exposition format 0.0.4 strictly: every line is a comment (# HELP/# TYPE
// well formed), empty, or a sample with a valid name, labels (only \\ \" \n escapes, no raw
// quote or newline in a value), a float value and an optional integer timestamp. The text
// must be valid UTF-8 and end with a newline. On error returns nullopt, naming the line.
std::optional<Exposition> ParseExposition(std::string_view text, std::string* error);

// A response as the test client saw it.
struct HttpReply {
  int status = 0;
  std::string content_type;
  std::string body;
};

// One request on a new connection to 127.0.0.1:port; throws on a socket error (the test
// fails with the message). Times out after 5 s.
HttpReply HttpCall(uint16_t port, const std::string& method, const std::string& target,
                   const std::string& body = "");

// Sends datagrams to a UDP endpoint from one ephemeral loopback socket.
class UdpClient {
 public:
  explicit UdpClient(boost::asio::ip::udp::endpoint to);
  void Send(std::string_view datagram);

 private:
  boost::asio::io_context io_;
  boost::asio::ip::udp::socket socket_;
  boost::asio::ip::udp::endpoint to_;
};

// Polls `done` every few milliseconds until it returns true or `timeout` passes; returns
// its last value. Used instead of fixed sleeps so tests are fast when the daemon is. The
// default timeout only catches a hang: under ThreadSanitizer on a loaded 2-core machine a
// tick under a datagram flood has taken over 5 s.
bool WaitFor(const std::function<bool()>& done,
             std::chrono::milliseconds timeout = std::chrono::milliseconds(30000));

}  // namespace hotkey::testing

#endif  // HOTKEY_TESTS_LIB_CHECKERS_H_
