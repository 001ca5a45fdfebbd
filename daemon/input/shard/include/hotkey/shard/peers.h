// PeerProbers: in a Redis Cluster, one Prober (prober.h) per other primary that serves
// slots, so that this node's hotkeyd knows every node's load (commands/s, CPU busy,
// capacity: reading.h) when it plans which slots to move where.
//
// The set of peers follows the own shard's topology (Measurement::topology): SetTopology
// starts a prober for each new primary, stops those of primaries that are gone or no longer
// serve slots, and keeps the others with their last loads. Each peer is asked at the node's
// address (ip:port from CLUSTER NODES; an IPv6 one bracketed) with the own shard's options
// (TLS, password file, timeout, --shard.cpus); with TLS the certificate is checked against
// the node's announced hostname, or its IP address where it announces none. The daemon
// calls ProbeAll every --shard.interval while its shard is a cluster node and slots are
// tracked, so that the node is compared with its peers (aggregate/slots.h).
//
// A peer that answers as another node (a different id: the topology moved on) or not in
// cluster mode is not up, with a status that says so, and has no load.
//
// Bounded: at most kMaxPeers probers (one connection and one reply buffer each, prober.h).
// Primaries beyond it, taken in id order after the peers already probed, are listed by
// Loads() as not up with a ResourceExhausted status, and counted by unprobed().
//
// Thread safety: not thread-safe. Every member runs on the io_context's thread (where the
// probers call back); destroy it there or once the io_context has stopped running.

#ifndef HOTKEY_SHARD_PEERS_H_
#define HOTKEY_SHARD_PEERS_H_

#include <cstddef>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>

#include "absl/status/status.h"
#include "hotkey/clock/clock.h"
#include "hotkey/cluster/topology.h"
#include "hotkey/config/shard_options.h"
#include "hotkey/shard/prober.h"
#include "hotkey/shard/reading.h"

namespace hotkey::shard {

struct PeerLoad {
  std::string id;       // node id
  std::string address;  // ip:port
  int slots = 0;        // slots it serves (Node::SlotCount())
  bool asked = false;   // a round of it has ended (answered or failed); else `up` means nothing
  bool up = false;      // its last round succeeded, and it answered as node `id`
  // Between its last two good answers (reading.h: LoadBetween). Kept while a later round
  // fails (then `up` is false), so read it with `up`; nullopt before two good answers, after
  // a restart of the node, or when the address answers as another node.
  std::optional<Load> load;
  absl::Status status;  // why not up; Unavailable("not probed yet") before the first round
};

class PeerProbers {
 public:
  // One hotkeyd per node probes every other primary, so each primary answers a round (INFO
  // and CLUSTER NODES, tests/daemon/input/shard/peers_test.cc) per interval from every other node's
  // hotkeyd: the probing grows with the square of the cluster's size, and each hotkeyd holds
  // one connection per peer. 256 covers clusters of 256 shards at 255 connections a hotkeyd;
  // Redis suggests at most 1000 nodes, replicas included.
  static constexpr size_t kMaxPeers = 256;

  // `base` must be validated and Resolved(); its address is replaced by each peer's (and its
  // protocol set to Redis). `clock` must outlive this object.
  PeerProbers(boost::asio::io_context& io, config::ShardOptions base, const clock::Clock& clock);
  ~PeerProbers();  // stops them all
  PeerProbers(const PeerProbers&) = delete;
  PeerProbers& operator=(const PeerProbers&) = delete;

  // From the own shard's topology: starts probers for new primaries (not `myself`, serving
  // at least one slot), stops gone ones, keeps the rest and their last loads. A peer whose
  // address changed gets a new prober (and loses its load). Sends nothing: ProbeAll does.
  void SetTopology(const cluster::Topology& topology);
  // Starts a round for every probed peer; a peer whose round is still running skips this one.
  void ProbeAll();
  // Every peer of the last topology, probed or not (unprobed()), sorted by id.
  std::vector<PeerLoad> Loads() const;
  // Primaries of the last topology beyond kMaxPeers, not probed.
  size_t unprobed() const;
  // Stops every prober: no round starts and no load changes after it. Idempotent.
  void Stop();

 private:
  struct Peer;
  std::unique_ptr<Prober> MakeProber(Peer& peer);
  void OnMeasurement(Peer& peer, const Measurement& m);

  boost::asio::io_context& io_;
  const config::ShardOptions base_;
  const clock::Clock& clock_;
  bool stopped_ = false;
  std::map<std::string, std::unique_ptr<Peer>> peers_;  // by node id
};

}  // namespace hotkey::shard

#endif  // HOTKEY_SHARD_PEERS_H_
