// Fetcher: see fetch.h.
//
// Beast applies a tcp_stream's expiry to its asynchronous operations only, so the exchange
// is a coroutine on a private io_context run to completion: one expiry, set before the
// connect, bounds the connect, the TLS handshake, the write and the read together.
//
// The URL is parsed with Boost.URL, whose compiled part this binary gets from hotkey::http
// (http/query.cc builds it in its header-only mode, which allows one such file per program).

#include "hotkey/top/fetch.h"

#include <optional>
#include <string_view>
#include <tuple>
#include <utility>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <boost/url/parse.hpp>
#include <boost/url/url_view.hpp>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace hotkey::top {

namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = beast::http;
namespace ssl = asio::ssl;
using tcp = asio::ip::tcp;

// Debian's Abseil has its own string_view; Abseil's string functions take that one.
absl::string_view Sv(std::string_view s) { return absl::string_view(s.data(), s.size()); }

constexpr auto kAsTuple = asio::as_tuple(asio::use_awaitable);

// /api/v1/top lists the exported keys (top-K, K bounded by the daemon's flags): far below
// this. The limit only stops a wrong --url from filling memory.
constexpr uint64_t kMaxBodyBytes = 64 << 20;

absl::Status Failed(std::string_view step, const beast::error_code& ec, absl::Duration timeout) {
  if (ec == beast::error::timeout) {
    return absl::UnavailableError(
        absl::StrCat(Sv(step), ": no answer within ", absl::FormatDuration(timeout)));
  }
  return absl::UnavailableError(absl::StrCat(Sv(step), ": ", ec.message()));
}

}  // namespace

struct Fetcher::State {
  bool tls = false;
  bool verify = true;       // with tls: check the certificate and its name
  std::string host;         // for the resolver, the SNI and the certificate check
  std::string port;         // a number
  std::string host_header;  // host[:port] as the URL has it
  std::string target;       // <prefix>/api/v1/top
  std::string authorization;
  absl::Duration timeout;
  std::optional<ssl::context> ssl_context;
  asio::io_context io;

  template <class Stream>
  asio::awaitable<absl::StatusOr<FetchReply>> Exchange(Stream& stream,
                                                       tcp::resolver::results_type endpoints) {
    beast::tcp_stream& socket = beast::get_lowest_layer(stream);
    socket.expires_after(absl::ToChronoNanoseconds(timeout));
    const std::string where = absl::StrCat(host_header, target);
    if (auto [ec, endpoint] = co_await socket.async_connect(endpoints, kAsTuple); ec) {
      co_return Failed(absl::StrCat("connect to ", host_header), ec, timeout);
    }
    if constexpr (!std::is_same_v<Stream, beast::tcp_stream>) {
      if (auto [ec] = co_await stream.async_handshake(ssl::stream_base::client, kAsTuple); ec) {
        co_return Failed(absl::StrCat("TLS handshake with ", host_header), ec, timeout);
      }
    }
    bhttp::request<bhttp::empty_body> request(bhttp::verb::get, target, 11);
    request.set(bhttp::field::host, host_header);
    request.set(bhttp::field::user_agent, "hotkeyd-top");
    request.set(bhttp::field::accept, "application/json");
    request.set(bhttp::field::connection, "close");
    if (!authorization.empty()) request.set(bhttp::field::authorization, authorization);
    if (auto [ec, n] = co_await bhttp::async_write(stream, request, kAsTuple); ec) {
      co_return Failed(absl::StrCat("GET ", where), ec, timeout);
    }
    beast::flat_buffer buffer;
    bhttp::response_parser<bhttp::string_body> parser;
    parser.body_limit(kMaxBodyBytes);
    if (auto [ec, n] = co_await bhttp::async_read(stream, buffer, parser, kAsTuple); ec) {
      co_return Failed(absl::StrCat("GET ", where), ec, timeout);
    }
    beast::error_code ignored;
    socket.socket().shutdown(tcp::socket::shutdown_both, ignored);
    co_return FetchReply{static_cast<int>(parser.get().result_int()),
                         std::move(parser.get().body())};
  }
};

Fetcher::Fetcher(std::unique_ptr<State> state) : state_(std::move(state)) {}
Fetcher::~Fetcher() = default;

const std::string& Fetcher::target() const { return state_->target; }

absl::StatusOr<std::unique_ptr<Fetcher>> Fetcher::Create(const FetchOptions& options) {
  namespace urls = boost::urls;
  const auto bad = [&](std::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat("--url=", options.url, ": ", Sv(why)));
  };
  const urls::result<urls::url_view> url = urls::parse_uri(options.url);
  if (!url) return bad("not a URL; expected http://host:port or https://host:port");
  auto state = std::make_unique<State>();
  if (url->scheme() == "https") {
    state->tls = true;
  } else if (url->scheme() != "http") {
    return bad("the scheme must be http or https");
  }
  if (url->has_userinfo()) {
    return bad(
        "no credentials in the URL (every user can read a command line): use --web.username "
        "and HOTKEYD_WEB_PASSWORD or --web.password-file");
  }
  if (url->has_query() || url->has_fragment()) return bad("no query or fragment");
  if (url->host_address().empty()) return bad("no host");
  state->host = url->host_address();  // without an IPv6 address's brackets
  state->port = url->has_port() ? std::string(url->port()) : (state->tls ? "443" : "80");
  state->host_header = url->encoded_host_and_port();
  state->target = absl::StrCat(absl::StripSuffix(Sv(url->encoded_path()), "/"), "/api/v1/top");
  state->timeout = options.timeout;
  if (!options.username.empty()) {
    state->authorization = absl::StrCat(
        "Basic ", absl::Base64Escape(absl::StrCat(options.username, ":", options.password)));
  }
  if (state->tls) {
    beast::error_code ec;
    ssl::context& ctx = state->ssl_context.emplace(ssl::context::tls_client);
    ctx.set_default_verify_paths(ec);
    if (!ec && !options.ca_file.empty()) ctx.load_verify_file(options.ca_file, ec);
    if (ec) {
      return absl::InvalidArgumentError(
          absl::StrCat("--ca-file=", options.ca_file, ": ", ec.message()));
    }
    state->verify = !options.insecure_skip_verify;
    ctx.set_verify_mode(state->verify ? ssl::verify_peer : ssl::verify_none);
  }
  return std::unique_ptr<Fetcher>(new Fetcher(std::move(state)));
}

absl::StatusOr<FetchReply> Fetcher::Get() {
  State& s = *state_;
  s.io.restart();
  tcp::resolver resolver(s.io);
  beast::error_code ec;
  const tcp::resolver::results_type endpoints = resolver.resolve(s.host, s.port, ec);
  if (ec) return Failed(absl::StrCat("resolve ", s.host), ec, s.timeout);

  absl::StatusOr<FetchReply> result = absl::UnavailableError("no answer");
  const auto done = [&result](std::exception_ptr e, absl::StatusOr<FetchReply> r) {
    if (e) {
      try {
        std::rethrow_exception(e);
      } catch (const std::exception& x) {
        result = absl::UnavailableError(x.what());
      }
      return;
    }
    result = std::move(r);
  };
  if (s.tls) {
    beast::ssl_stream<beast::tcp_stream> stream(s.io, *s.ssl_context);
    // SNI for a host name (not for an address, RFC 6066 section 3), and the certificate's
    // name or address checked against the URL's.
    boost::system::error_code parse_ec;
    asio::ip::make_address(s.host, parse_ec);
    if (parse_ec) SSL_set_tlsext_host_name(stream.native_handle(), s.host.c_str());
    if (s.verify) stream.set_verify_callback(ssl::host_name_verification(s.host));
    asio::co_spawn(s.io, s.Exchange(stream, endpoints), done);
    s.io.run();
  } else {
    beast::tcp_stream stream(s.io);
    asio::co_spawn(s.io, s.Exchange(stream, endpoints), done);
    s.io.run();
  }
  return result;
}

}  // namespace hotkey::top
