// EventStream: the body of a streamed response (Server-Sent Events, text/event-stream), and
// the bound that keeps a slow reader from growing the server's memory.
//
// A handler that wants to push returns an HttpResponse whose `stream` is set. The session
// then writes the response head (no Content-Length: the body ends when the connection
// closes, HTTP/1.1 section 6.3 of RFC 9112) and, from then on, every block given to Send(),
// in order, until Close(), the client leaving, or the bound being passed. The producer (the
// feed hub) keeps the EventStream and Send()s to it; it never waits for the network.
//
// Bound: the bytes given to Send() and not yet written to the socket (the block being
// written included) never exceed `max_unsent_bytes`: a Send() that would pass it is refused,
// and the stream closes as kSlow. A write the socket has not taken within the server's
// request timeout closes it as kSlow too, so a reader that stopped reading goes whatever the
// event rate. The kernel's send buffer is fixed (kSendBufferBytes) for streamed connections.
// So a subscriber holds at most max_unsent_bytes in the process, plus its session
// (kSessionBytes), plus the kernel's send buffer.
//
// A stream's connection counts toward the connection cap and is the last kind closed to
// make room (server.h, HttpLimits::max_connections): then it ends as kEvicted. The producer
// bounds how many it hands out.
//
// Thread-compatible: every call on the server's io_context thread.

#ifndef HOTKEY_HTTP_EVENT_STREAM_H_
#define HOTKEY_HTTP_EVENT_STREAM_H_

#include <cstddef>
#include <deque>
#include <functional>
#include <string>
#include <string_view>

namespace hotkey::http {

class EventStream {
 public:
  // Why a stream closed.
  enum class CloseReason {
    kOpen,     // not closed
    kServer,   // Close(): the producer ended it (shutdown)
    kClient,   // the client left, or the connection failed
    kSlow,     // the client read too slowly: the bound was passed, or a write timed out
    kEvicted,  // closed to make room for another connection (descriptors or the cap)
  };

  // The SO_SNDBUF set on a streamed connection (Linux doubles it for its bookkeeping).
  static constexpr int kSendBufferBytes = 64 * 1024;
  // What a streaming session may hold in the process beside its unsent bytes: the session
  // object with its socket and timer (its request buffers are released once the stream
  // starts) and, over TLS, OpenSSL's connection with its record buffers. An allowance:
  // tests/daemon/serving/http/feed_e2e.py (memory) checks that a plain-HTTP stream adds
  // less to the process's resident memory.
  static constexpr size_t kSessionBytes = 48 * 1024;

  explicit EventStream(size_t max_unsent_bytes) : max_unsent_bytes_(max_unsent_bytes) {}
  ~EventStream() { Close(); }
  EventStream(const EventStream&) = delete;
  EventStream& operator=(const EventStream&) = delete;

  // Queues `bytes` for the client. False when the stream is closed, or when `bytes` would
  // pass the bound: then it closes as kSlow and drops what is queued.
  bool Send(std::string_view bytes);
  // Ends the stream (kServer): the connection closes at once, unsent bytes are dropped.
  void Close() { Finish(CloseReason::kServer); }

  bool closed() const { return reason_ != CloseReason::kOpen; }
  CloseReason reason() const { return reason_; }
  size_t unsent_bytes() const { return queued_ + in_flight_; }
  size_t max_unsent_bytes() const { return max_unsent_bytes_; }

  // The session's side (session.h).
  // Called at every Send() and at the close; the session then writes or closes.
  void SetWake(std::function<void()> wake) { wake_ = std::move(wake); }
  // Moves the next block out to be written (it still counts as unsent until Written());
  // false when none is queued.
  bool TakeFront(std::string* block);
  // The block taken last was written.
  void Written() { in_flight_ = 0; }
  // The connection ended (kClient or kSlow); a no-op once closed.
  void Finish(CloseReason reason);

 private:
  const size_t max_unsent_bytes_;
  std::deque<std::string> queue_;
  size_t queued_ = 0;     // bytes in queue_
  size_t in_flight_ = 0;  // bytes of the block being written
  CloseReason reason_ = CloseReason::kOpen;
  // Holds the session while the stream is open (the session holds the stream): released
  // at the close, which breaks the cycle.
  std::function<void()> wake_;
};

}  // namespace hotkey::http

#endif  // HOTKEY_HTTP_EVENT_STREAM_H_
