// Prober: asks the shard hotkeyd runs beside for what it knows about itself, every
// ShardOptions::interval: its commands and CPU (Redis's INFO, memcached's stats), the load
// between two answers (reading.h), the CPUs its bottleneck may use (cpu_quota.h), and in a
// Redis Cluster the cluster's shape (CLUSTER NODES, hotkey/cluster/topology.h). These are
// the measured inputs of the advice model, which falls back to the --cluster.* flags while
// the shard cannot be asked (Measurement::status says why). Figures that cannot be (busy above
// kMaxBusy, a slot past the last or listed twice, too many nodes) fail the round as a silent
// shard does, with Measurement::rejected saying which.
//
// A Boost.Asio client on the caller's io_context: TCP, TLS over TCP or a Unix socket; one
// connection kept between rounds and made again after any error. Commands go out as RESP
// arrays; a reply longer than kMaxReplyBytes is an error as soon as its length or its
// unended line says so (reply.h), so the reply buffer holds at most that plus one read of
// 16 KiB; connecting (with TLS and AUTH) and each reply are bounded by
// ShardOptions::timeout, so a hung server costs a timeout, never the daemon.
//
// Not hiredis: Debian 12's libhiredis-dev (0.14.1) speaks RESP2 without TLS, blocks or
// needs its own event adapter, and knows no memcached; the daemon already runs Asio (with
// OpenSSL for its own TLS), so one client on its io_context covers TCP, TLS and Unix
// sockets for both servers, with no new dependency.
//
// Credentials come from ShardOptions::password_file, read at each connect: Redis AUTH with
// "password" or "user password"; memcached's ASCII authentication (`memcached -Y`), which
// needs "user password".
//
// Each round adds the prober's own commands to the shard's count: one INFO (and CLUSTER
// NODES in a cluster; AUTH at each connect), so 0.2 ops/s outside a cluster at the default
// 5 s interval (tests/daemon/input/shard/prober_test.cc), one round more at each AskNow(),
// and up to two at an AskNow(next) with `next` shorter than the interval.
//
// Thread safety: Probe(), AskNow() and Stop() may be called from any thread; everything else runs
// on the io_context's thread, where the callback is called. Destroy the prober on that thread or
// once the io_context has stopped running.

#ifndef HOTKEY_SHARD_PROBER_H_
#define HOTKEY_SHARD_PROBER_H_

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <boost/asio/io_context.hpp>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "hotkey/clock/clock.h"
#include "hotkey/clock/ticker.h"
#include "hotkey/cluster/topology.h"
#include "hotkey/config/shard_options.h"
#include "hotkey/shard/cpu_quota.h"
#include "hotkey/shard/reading.h"
#include "hotkey/text/enum_names.h"

namespace hotkey::shard {

// Where Measurement::cpus came from.
enum class CpusSource {
  kOneCore,      // Redis's main thread runs every command: one core
  kThreads,      // memcached's worker threads (stats `threads`)
  kCgroupQuota,  // the shard process's cgroup CPU quota, where less than the above
  kFlag,         // --shard.cpus
};
inline constexpr text::EnumName<CpusSource> kCpusSourceNames[] = {
    {CpusSource::kOneCore, "one_core"},
    {CpusSource::kThreads, "threads"},
    {CpusSource::kCgroupQuota, "cgroup_quota"},
    {CpusSource::kFlag, "flag"}};
constexpr std::string_view CpusSourceName(CpusSource source) {
  return text::NameOf(kCpusSourceNames, source);
}

// The cluster around the shard, as the shard sees it.
struct ClusterSummary {
  bool cluster_mode = false;  // Redis with cluster_enabled:1
  int shards = 0;             // primaries serving slots (Topology::Shards()); 0 outside a cluster
  std::string node_id;        // the answering node's id (Topology::Myself()); empty outside
  int slots = 0;              // the slots the answering node serves; 0 outside a cluster
};

struct Measurement {
  // On the prober's clock (a monotonic one in the daemon), when the answer arrived.
  absl::Time time;
  // OK, or why the shard could not be asked this round, or why its answer was refused: then
  // `reading` and `load` are empty and the rest is as at construction.
  absl::Status status;
  // Set when the shard answered with figures that cannot be (reading.h: Rejection): the
  // answer is refused whole, as if the shard had not answered, and `status` says why.
  std::optional<Rejection> rejected;
  std::optional<Reading> reading;
  // Between the last good reading and this one; nullopt at the first reading, after a
  // restart of the shard (reading.h: LoadBetween), when `cpus` changed since the last
  // reading, or when this round failed.
  std::optional<Load> load;
  // The CPUs the shard's bottleneck may use, which `load` was computed with.
  double cpus = 1;
  CpusSource cpus_source = CpusSource::kOneCore;
  // The file that set a quota, or why no quota could be read (the shard is remote, its
  // process is not visible here); empty otherwise.
  std::string cpus_detail;
  ClusterSummary cluster;
  // The node's role: in a Redis Cluster its own line of CLUSTER NODES (master or slave),
  // else INFO's role; unknown when the round failed or the server does not say.
  Role role = Role::kUnknown;
  // The whole CLUSTER NODES answer: every node, its address, flags and slots. Null outside
  // a cluster or when the round failed (an answer that does not parse fails the round).
  // Shared and immutable, so a measurement is cheap to copy and to hand to other threads.
  std::shared_ptr<const cluster::Topology> topology;
};

class Prober {
 public:
  using Callback = std::function<void(const Measurement&)>;

  // The largest reply read: INFO is a few KiB; CLUSTER NODES about 100 bytes a node plus
  // its slot ranges, so 1 MiB holds some thousands of nodes, past Redis's suggested
  // maximum of 1000.
  static constexpr size_t kMaxReplyBytes = size_t{1} << 20;
  // How often the schedule is checked, so a round starts at most this late.
  static constexpr absl::Duration kScheduleStep = absl::Milliseconds(250);

  // `options` must be validated and Resolved() with a non-empty address. `clock` (which
  // must outlive the prober) stamps each measurement. Nothing is sent before Probe().
  Prober(boost::asio::io_context& io, config::ShardOptions options, const clock::Clock& clock,
         Callback callback);
  ~Prober();
  Prober(const Prober&) = delete;
  Prober& operator=(const Prober&) = delete;

  // Starts a round (connect if need be, ask, call back) on the io_context; a call while a
  // round runs is dropped, since that round's answer is as fresh. Thread-safe.
  void Probe();
  // Starts a round every options.interval on `ticker`'s clock, the first one interval from
  // now: the schedule is checked every kScheduleStep (or interval, if shorter). Before
  // ticker.Start().
  void ScheduleOn(clock::Ticker& ticker);
  // Starts a round now, out of the schedule, and the schedule again from it, its next round
  // `next` later (at most an interval): at a hot key's onset, so that the next answer, one
  // interval later, covers the episode's own time only; at a change of a key's fix in
  // force, with a shorter `next`, so that the key's next advice reads the shard with the
  // new fix within seconds. A reading less than half an interval after the last one only
  // starts the next interval (the load over so short a time is not reported), and at most
  // one reading an interval is cut so by asks for a whole interval, so onsets one after
  // another never keep the load from being measured; an ask with a shorter `next` is never
  // refused (a reading with a load follows within it). While a round is in progress, its
  // reading is the one now, and a shorter `next` brings the next round forward. Thread-safe.
  void AskNow(absl::Duration next = absl::InfiniteDuration());
  // Closes the connection and ends a round in progress; no callback is called after it
  // returns on the io_context's thread. Thread-safe; idempotent.
  void Stop();

 private:
  class Impl;
  const absl::Duration interval_;
  std::shared_ptr<Impl> impl_;
};

// Connects, authenticates and asks once (INFO, or stats), as a Prober does, within
// `timeout`, blocking: for --check-config. The error text is the one a Prober's
// Measurement::status would carry.
absl::Status CheckReachable(const config::ShardOptions& options, absl::Duration timeout);

}  // namespace hotkey::shard

#endif  // HOTKEY_SHARD_PROBER_H_
