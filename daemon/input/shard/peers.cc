#include "hotkey/shard/peers.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace hotkey::shard {

namespace {

// CLUSTER NODES writes an IPv6 node as "::1:7000"; the prober's address wants "[::1]:7000".
std::string ProberAddress(const std::string& address) {
  const size_t colon = address.rfind(':');
  if (colon == std::string::npos || address.starts_with("[") || address.find(':') == colon) {
    return address;
  }
  return absl::StrCat("[", address.substr(0, colon), "]", address.substr(colon));
}

PeerLoad NotProbed(const std::string& id, const cluster::Node& node, absl::Status status) {
  PeerLoad l;
  l.id = id;
  l.address = node.address;
  l.slots = node.SlotCount();
  l.status = std::move(status);
  return l;
}

}  // namespace

struct PeerProbers::Peer {
  PeerLoad load;
  std::string hostname;
  std::unique_ptr<Prober> prober;  // null: beyond kMaxPeers
  bool renew = false;              // it answered as another node: a new prober next round
};

PeerProbers::PeerProbers(boost::asio::io_context& io, config::ShardOptions base,
                         const clock::Clock& clock)
    : io_(io), base_(std::move(base)), clock_(clock) {}

PeerProbers::~PeerProbers() { Stop(); }

std::unique_ptr<Prober> PeerProbers::MakeProber(Peer& peer) {
  config::ShardOptions o = base_;
  o.address = ProberAddress(peer.load.address);
  o.protocol = config::TapProtocol::kRedis;
  o.tls_server_name = peer.hostname;
  return std::make_unique<Prober>(io_, std::move(o), clock_,
                                  [this, &peer](const Measurement& m) { OnMeasurement(peer, m); });
}

void PeerProbers::SetTopology(const cluster::Topology& topology) {
  if (stopped_) return;
  std::map<std::string, const cluster::Node*> wanted;
  for (const cluster::Node& n : topology.nodes) {
    if (n.primary && !n.myself && !n.slots.empty()) wanted.emplace(n.id, &n);
  }
  size_t probed = 0;
  for (auto it = peers_.begin(); it != peers_.end();) {
    const auto w = wanted.find(it->first);
    Peer& p = *it->second;
    if (w == wanted.end()) {
      it = peers_.erase(it);  // its prober stops: no callback after this
      continue;
    }
    p.load.slots = w->second->SlotCount();
    if (p.prober && (p.load.address != w->second->address || p.hostname != w->second->hostname)) {
      p.load = NotProbed(p.load.id, *w->second, absl::UnavailableError("not probed yet"));
      p.hostname = w->second->hostname;
      p.renew = false;
      p.prober = MakeProber(p);
    }
    probed += p.prober != nullptr;
    ++it;
  }
  // New primaries, and those left out before, in id order while there is room.
  for (const auto& [id, node] : wanted) {
    auto [it, added] = peers_.try_emplace(id);
    if (added) it->second = std::make_unique<Peer>();
    Peer& p = *it->second;
    if (p.prober) continue;
    p.hostname = node->hostname;
    if (probed < kMaxPeers) {
      p.load = NotProbed(id, *node, absl::UnavailableError("not probed yet"));
      p.prober = MakeProber(p);
      ++probed;
    } else {
      p.load = NotProbed(id, *node,
                         absl::ResourceExhaustedError(absl::StrCat(
                             "not probed: more than ", kMaxPeers, " other primaries serve slots")));
    }
  }
}

void PeerProbers::ProbeAll() {
  if (stopped_) return;
  for (auto& [id, peer] : peers_) {
    if (!peer->prober) continue;
    if (peer->renew) {
      peer->renew = false;
      peer->prober = MakeProber(*peer);
    }
    peer->prober->Probe();
  }
}

std::vector<PeerLoad> PeerProbers::Loads() const {
  std::vector<PeerLoad> out;
  out.reserve(peers_.size());
  for (const auto& [id, peer] : peers_) out.push_back(peer->load);
  return out;
}

size_t PeerProbers::unprobed() const {
  size_t n = 0;
  for (const auto& [id, peer] : peers_) n += peer->prober == nullptr;
  return n;
}

void PeerProbers::Stop() {
  stopped_ = true;
  for (auto& [id, peer] : peers_) {
    if (peer->prober) peer->prober->Stop();
  }
}

void PeerProbers::OnMeasurement(Peer& peer, const Measurement& m) {
  if (stopped_) return;
  PeerLoad& l = peer.load;
  l.asked = true;
  if (!m.status.ok()) {
    l.up = false;
    l.status = m.status;
    return;
  }
  if (!m.cluster.cluster_mode || m.cluster.node_id != l.id) {
    l.up = false;
    l.load.reset();
    l.status = absl::FailedPreconditionError(
        !m.cluster.cluster_mode
            ? absl::StrCat(l.address, " is not in cluster mode")
            : absl::StrCat(l.address, " answers as node ",
                           m.cluster.node_id.empty() ? "(none)" : m.cluster.node_id, ", not ", l.id,
                           " (the cluster's topology has changed?)"));
    peer.renew = true;  // its readings are another server's: start afresh
    return;
  }
  l.up = true;
  l.status = absl::OkStatus();
  l.load = m.load;
}

}  // namespace hotkey::shard
