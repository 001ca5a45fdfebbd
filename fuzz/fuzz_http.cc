// libFuzzer target: the HTTP request path of the daemon, without sockets.
//
// The input is the byte stream a client sends on one connection. It is parsed as
// daemon/serving/http/server.cc's sessions parse it (Beast's request_parser with the same
// http::HttpLimits, one fresh parser per pipelined request), each parsed request is turned into
// an http::HttpRequest the same way (method, target split at '?', body) and answered by
// web::WebRoutes::Handle over a fixed Snapshot built by aggregate::Aggregator from a small
// tracker (keys with quotes, backslashes and invalid UTF-8), with a real SnapshotCollector
// behind /metrics. http::ParseQuery runs on every query too.
//
// Checked beyond "no crash": every response has a status in [200, 599], a content type and
// at most 4 MiB of body, the handler never throws, and http::ParseQuery (which may refuse a
// malformed query) never yields more pairs than '&'-parts.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <boost/asio/buffer.hpp>
#include <boost/beast/http.hpp>

#include "fake_clock.h"
#include "fuzz_util.h"
#include "hotkey/aggregate/aggregator.h"
#include "hotkey/aggregate/snapshot_store.h"
#include "hotkey/config/options.h"
#include "hotkey/http/query.h"
#include "hotkey/http/server.h"
#include "hotkey/parsers/wire.h"
#include "hotkey/source/udp_counters.h"
#include "hotkey/web/metrics.h"
#include "hotkey/web/web.h"

namespace hotkey::fuzz {

namespace {

namespace beast_http = boost::beast::http;

constexpr size_t kMaxResponseBytes = size_t{4} << 20;

// The snapshot every request sees: two receivers' trackers fed a few keys, aggregated over
// two ticks so one key is in a hot episode (hot_since, peak_share and advice are written).
std::shared_ptr<const aggregate::Snapshot> MakeSnapshot() {
  const absl::Time t0 = absl::FromUnixSeconds(1'700'000'000);
  config::TrackOptions track;
  track.candidates = 16;
  track.sketch_bytes = 4096;
  track.max_key_bytes = 32;
  track.half_life = absl::Milliseconds(500);
  const sketch::HeavyHittersOptions& o = track;  // the tracker's options, embedded
  config::ReloadableOptions reloadable;
  reloadable.alert.min_dwell = absl::ZeroDuration();
  reloadable.alert.rules.push_back(
      config::ThresholdRule{config::ThresholdRule::kGlob, "health*", 0, true});
  aggregate::Aggregator aggregator(track, reloadable, /*label_secret=*/{}, t0,
                                   [](std::string_view) {});
  std::shared_ptr<const aggregate::Snapshot> snap;
  std::vector<std::shared_ptr<const source::ReceiverReport>> reports;
  for (int tick = 1; tick <= 2; ++tick) {
    const absl::Time now = t0 + absl::Milliseconds(250 * tick);
    reports.clear();
    for (int r = 0; r < 2; ++r) {
      absl::StatusOr<sketch::HeavyHitters> hh = sketch::HeavyHitters::Create(o, t0);
      FUZZ_CHECK_OK(hh);
      source::ReceiverCounters counters;
      source::UdpCounters udp;
      const std::string_view datagram =
          "!v1 rate=0.5\nr post:viral\nw post:viral\nr q\"uote\\\xff\xfe\nr health\n"
          "w@0.1*3 user:42:profile\nr a-key-much-longer-than-thirty-two-bytes-of-storage\nx";
      for (int i = 0; i < 50; ++i) {
        ++udp.datagrams;
        const parsers::ParseStats st = parsers::ParseDatagram(
            datagram, 1024, [&](const parsers::Event& e) { hh->Update(e.key, e.op, e.weight); });
        counters.events += st.events;
        for (size_t k = 0; k < parsers::kNumRejects; ++k) udp.rejected[k] += st.rejected[k];
      }
      udp.Fill(counters.own);
      hh->Advance(now);
      reports.push_back(std::make_shared<const source::ReceiverReport>(
          source::ReceiverReport{now, *std::move(hh), counters, {}}));
    }
    snap = aggregator.Build(reports, now, /*kernel_drops=*/3);
  }
  return snap;
}

struct World {
  World() : collector(store), routes("/metrics", store, wall, collector, nullptr, Reload()) {
    store.NoteReload(absl::OkStatus(), store.cluster(), absl::FromUnixSeconds(1'700'000'000));
    store.Publish(MakeSnapshot());
  }

  web::WebRoutes::ReloadAction Reload() {
    return [this] {
      // Alternate success and failure, as a file being edited would.
      return ++reloads % 2 ? absl::OkStatus() : absl::InvalidArgumentError("line 3: bad");
    };
  }

  hotkey::testing::FakeClock wall;
  aggregate::SnapshotStore store{config::ReloadableOptions().cluster, nullptr, nullptr, nullptr};
  web::SnapshotCollector collector;
  web::WebRoutes routes;
  int reloads = 0;
};

void Serve(const World& world, const beast_http::request<beast_http::string_body>& req) {
  hotkey::http::HttpRequest request;
  request.method = std::string(req.method_string());
  const std::string_view target(req.target().data(), req.target().size());
  const size_t q = target.find('?');
  request.path = std::string(target.substr(0, q));
  if (q != std::string_view::npos) request.query = std::string(target.substr(q + 1));
  request.body = req.body();

  size_t parts = 1;
  for (char c : request.query) parts += c == '&';
  const auto params = hotkey::http::ParseQuery(request.query);
  FUZZ_CHECK(!params.ok() || params->size() <= parts);

  const hotkey::http::HttpResponse r = world.routes.Handle(request);
  FUZZ_CHECK(r.status >= 200 && r.status <= 599);
  FUZZ_CHECK(!r.content_type.empty());
  // Whatever the request, the answer stays small: the fixed snapshot's pages are a few KiB,
  // and a request must not be able to make the daemon build (and send) a huge one.
  FUZZ_CHECK(r.body.size() <= kMaxResponseBytes);
}

}  // namespace

int FuzzHttp(const uint8_t* data, size_t size) {
  static World* const world = new World();  // built once; never destroyed (no exit order)
  const hotkey::http::HttpLimits limits;
  std::string_view rest(reinterpret_cast<const char*>(data), size);
  // Pipelined requests on one connection, each with a fresh parser as in Session::Read.
  for (int n = 0; n < 8 && !rest.empty(); ++n) {
    beast_http::request_parser<beast_http::string_body> parser;
    parser.header_limit(static_cast<uint32_t>(limits.max_header_bytes));
    parser.body_limit(limits.max_body_bytes);
    boost::beast::error_code ec;
    while (!rest.empty() && !parser.is_done()) {
      const size_t used = parser.put(boost::asio::buffer(rest.data(), rest.size()), ec);
      rest.remove_prefix(used);
      if (ec == beast_http::error::need_more && used > 0) {
        ec = {};
        continue;
      }
      if (ec || used == 0) break;
    }
    if (!parser.is_done() && !ec) parser.put_eof(ec);  // the client closed its side
    if (ec || !parser.is_done()) return 0;             // the server answers 400/413 and closes
    Serve(*world, parser.get());
    if (!parser.get().keep_alive()) return 0;
  }
  return 0;
}

}  // namespace hotkey::fuzz

#ifndef HOTKEY_FUZZ_NO_MAIN
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return hotkey::fuzz::FuzzHttp(data, size);
}
#endif
