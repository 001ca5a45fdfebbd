#include "hotkey/cluster/move_plan.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "hotkey/cluster/slot.h"

namespace hotkey::cluster {

namespace {

// The capacity when it is a positive finite number, else nullopt (unknown).
std::optional<double> UsableCapacity(const std::optional<double>& c) {
  if (c && std::isfinite(*c) && *c > 0) return c;
  return std::nullopt;
}

bool UsableOps(double ops) { return std::isfinite(ops) && ops >= 0; }

std::optional<double> Load(double ops, const std::optional<double>& capacity) {
  if (!capacity) return std::nullopt;
  return ops / *capacity;
}

// `s` as one bash word: bare when it holds only characters the shell leaves alone, else in
// single quotes (a quote inside as '\''), as Python's shlex.quote.
std::string ShellQuote(std::string_view s) {
  const bool bare = !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           std::string_view("@%+=:,./_-").find(c) != std::string_view::npos;
  });
  if (bare) return std::string(s);
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  out += '\'';
  return out;
}

// `s` as one argument of a line redis-cli reads from stdin (sdssplitargs): in double quotes,
// with the escapes it reads back (\\, \", \n, \r, \t, \a, \b, \xHH).
std::string RedisQuote(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '\\':
        out += "\\\\";
        break;
      case '"':
        out += "\\\"";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\a':
        out += "\\a";
        break;
      case '\b':
        out += "\\b";
        break;
      default:
        if (c >= 0x20 && c < 0x7f) {
          out += c;
        } else {
          absl::StrAppendFormat(&out, "\\x%02x", static_cast<unsigned char>(c));
        }
    }
  }
  out += '"';
  return out;
}

struct HostPort {
  std::string host;  // without brackets
  std::string port;  // 1 to 65535, decimal
};

// "host:port", "[v6]:port" or a bare IPv6 host with its port after the last colon
// ("::1:7000", as CLUSTER NODES prints it).
std::optional<HostPort> SplitHostPort(std::string_view address) {
  std::string_view host, port;
  if (address.starts_with('[')) {
    const size_t close = address.find(']');
    if (close == std::string_view::npos || address.substr(close + 1, 1) != ":") return std::nullopt;
    host = address.substr(1, close - 1);
    port = address.substr(close + 2);
  } else {
    const size_t colon = address.rfind(':');
    if (colon == std::string_view::npos) return std::nullopt;
    host = address.substr(0, colon);
    port = address.substr(colon + 1);
  }
  unsigned p = 0;
  const auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), p);
  if (host.empty() || port.empty() || port.size() > 5 || ec != std::errc() ||
      end != port.data() + port.size() || p == 0 || p > 65535) {
    return std::nullopt;
  }
  for (char c : host) {
    if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f) return std::nullopt;
  }
  return HostPort{std::string(host), std::string(port)};
}

// The bash words running redis-cli against `hp`.
std::string Cli(const HostPort& hp, bool tls) {
  return absl::StrCat("redis-cli", tls ? " --tls" : "", " -h ", ShellQuote(hp.host), " -p ",
                      ShellQuote(hp.port));
}

// One line, for the script's comments: no line break, no control byte.
std::string CommentSafe(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  }
  return out;
}

// The helpers of the script: `expect` checks a reply, `move_keys` empties a slot.
constexpr std::string_view kFunctions = R"(set -euo pipefail
# expect <reply> <command...>: runs the redis-cli command; stops unless it prints <reply>.
expect() {
  local want=$1 got
  shift
  got=$("$@")
  if [[ $got != "$want" ]]; then
    printf 'move: %s: %s\n' "$*" "$got" >&2
    exit 1
  fi
}
# move_keys <slot>: MIGRATEs the slot's keys from `from` to `to`, 100 at a time, until none is
# left. --no-raw prints each key quoted and escaped on its own line ' 1) "..."'; the quoted
# forms go back to redis-cli on stdin, which unescapes them: any byte survives.
move_keys() {
  local slot=$1 reply keys result
  while true; do
    reply=$("${from_cli[@]}" --no-raw CLUSTER GETKEYSINSLOT "$slot" 100)
    if [[ $reply == '(empty array)' || $reply == '(empty list or set)' ]]; then
      return 0
    fi
    if ! [[ $reply =~ ^\ *1\)\ \" ]]; then
      printf 'move: CLUSTER GETKEYSINSLOT %s: %s\n' "$slot" "$reply" >&2
      exit 1
    fi
    keys=$(sed -E 's/^ *[0-9]+\) //' <<<"$reply" | tr '\n' ' ')
    result=$(printf 'MIGRATE %s "" 0 5000 KEYS %s\n' "$migrate_to" "$keys" |
      "${from_cli[@]}" --no-raw)
    # NOKEY: the listed keys expired or were deleted meanwhile.
    if [[ $result != OK && $result != NOKEY ]]; then
      printf 'move: MIGRATE of slot %s: %s\n' "$slot" "$result" >&2
      exit 1
    fi
  done
}
)";

}  // namespace

size_t MovePlan::SlotCount() const {
  size_t n = 0;
  for (const Transfer& t : to) n += t.slots.size();
  return n;
}

std::string MoveCommands(const MoveSide& from, std::span<const Transfer> to, bool tls,
                         std::string_view summary) {
  std::string what =
      absl::StrCat("from node ", CommentSafe(from.id), " (", CommentSafe(from.address), ") to ");
  for (size_t i = 0; i < to.size(); ++i) {
    absl::StrAppend(&what, i == 0 ? "" : "; to ", "node ", CommentSafe(to[i].to.id), " (",
                    CommentSafe(to[i].to.address), "): slot", to[i].slots.size() == 1 ? " " : "s ",
                    absl::StrJoin(to[i].slots, " "));
  }
  std::string out = "#!/usr/bin/env bash\n";
  while (!summary.empty()) {
    const size_t end = std::min(summary.find('\n'), summary.size());
    if (end > 0) absl::StrAppend(&out, "# ", CommentSafe(summary.substr(0, end)), "\n");
    summary.remove_prefix(std::min(end + 1, summary.size()));
  }
  const std::optional<HostPort> f = SplitHostPort(from.address);
  for (const Transfer& t : to) {
    if (f && SplitHostPort(t.to.address)) continue;
    const std::string bad = CommentSafe(!f ? from.address : t.to.address);
    absl::StrAppend(&out, "# Cannot move ", what, ": ", bad, " is not host:port.\n", "echo ",
                    ShellQuote(absl::StrCat("move: ", bad, " is not host:port")), " >&2\nexit 1\n");
    return out;
  }
  absl::StrAppend(
      &out, "# Moves Redis Cluster slots ", what,
      ".\n# For each slot, CLUSTER SETSLOT IMPORTING on the target, MIGRATING on the source, "
      "MIGRATE of\n# its keys 100 at a time until none is left, then CLUSTER SETSLOT NODE on "
      "the target and on\n# the source (Redis 7). Run it with bash on a host that reaches every "
      "node named. Keys travel\n# byte-exact, spaces, quotes, newlines and NULs included. It "
      "stops at the first unexpected\n# reply (a key already on the target stops it: MIGRATE "
      "without REPLACE).\n# It does not authenticate: with AUTH, export REDISCLI_AUTH=<password> "
      "for redis-cli, and\n# MIGRATE needs AUTH2 <user> <password> added in move_keys.\n");
  absl::StrAppend(&out, "from_cli=(", Cli(*f, tls), ")\n");
  out += kFunctions;
  for (const Transfer& tr : to) {
    const HostPort t = *SplitHostPort(tr.to.address);
    absl::StrAppend(&out, "\n# To node ", CommentSafe(tr.to.id), " (", CommentSafe(tr.to.address),
                    ")\n");
    absl::StrAppend(&out, "migrate_to=", ShellQuote(absl::StrCat(RedisQuote(t.host), " ", t.port)),
                    "\n");
    for (const uint16_t slot : tr.slots) {
      const std::string s = absl::StrCat(slot);
      absl::StrAppend(&out, "\n# Slot ", s, "\n");
      absl::StrAppend(&out, "expect OK ", Cli(t, tls), " CLUSTER SETSLOT ", s, " IMPORTING ",
                      ShellQuote(from.id), "\n");
      absl::StrAppend(&out, "expect OK ", Cli(*f, tls), " CLUSTER SETSLOT ", s, " MIGRATING ",
                      ShellQuote(tr.to.id), "\n");
      absl::StrAppend(&out, "move_keys ", s, "\n");
      absl::StrAppend(&out, "expect OK ", Cli(t, tls), " CLUSTER SETSLOT ", s, " NODE ",
                      ShellQuote(tr.to.id), "\n");
      absl::StrAppend(&out, "expect OK ", Cli(*f, tls), " CLUSTER SETSLOT ", s, " NODE ",
                      ShellQuote(tr.to.id), "\n");
    }
  }
  return out;
}

std::string MoveCommands(const MoveSide& from, const MoveSide& to, std::span<const uint16_t> slots,
                         bool tls) {
  const Transfer t{to, std::vector<uint16_t>(slots.begin(), slots.end()), 0};
  return MoveCommands(from, std::span<const Transfer>(&t, 1), tls);
}

namespace {

// A node of the plan: its load in the plan's measure as slots are assigned.
struct Planned {
  const NodeLoad* node;
  std::optional<double> capacity;  // its own, or self's
  double ops = 0;                  // after the slots assigned so far
};

std::string Figure(double v, bool in_load) {
  return in_load ? absl::StrFormat("%.0f%%", v * 100) : absl::StrFormat("%.0f commands/s", v);
}

}  // namespace

std::optional<MovePlan> PlanRebalance(const NodeLoad& self, std::span<const NodeLoad> others,
                                      std::span<const SlotOps> slots, const MoveOptions& options,
                                      const MovePlan* previous) {
  if (!UsableOps(self.ops_per_second)) return std::nullopt;
  const std::optional<double> self_capacity = UsableCapacity(self.capacity_ops);
  std::vector<Planned> peers;
  for (const NodeLoad& n : others) {
    if (n.id == self.id || !UsableOps(n.ops_per_second)) continue;
    if (std::any_of(peers.begin(), peers.end(),
                    [&](const Planned& p) { return p.node->id == n.id; })) {
      continue;
    }
    const std::optional<double> c = UsableCapacity(n.capacity_ops);
    peers.push_back({&n, c ? c : self_capacity, n.ops_per_second});
  }
  if (peers.empty()) return std::nullopt;
  std::sort(peers.begin(), peers.end(),
            [](const Planned& a, const Planned& b) { return a.node->id < b.node->id; });
  // Self against the others in `in_load` (load) or not (ops/s): nullopt unless self is the
  // busiest, else (self's, the others' sum).
  const auto compare = [&](bool in_load) -> std::optional<std::pair<double, double>> {
    const double me = in_load ? self.ops_per_second / *self_capacity : self.ops_per_second;
    double sum = 0;
    for (const Planned& p : peers) {
      const double m = in_load ? p.ops / *p.capacity : p.ops;
      if (m >= me) return std::nullopt;
      sum += m;
    }
    return std::pair{me, sum};
  };
  const bool kept = previous && previous->from.id == self.id;
  const double slack = kept ? 1 - options.keep : 1;
  const double n = static_cast<double>(peers.size());
  MovePlan plan;
  std::optional<std::pair<double, double>> c;
  if (self_capacity && (c = compare(true)) && c->first > options.target_load * slack) {
    plan.reason = MoveReason::kOverTarget;
    plan.in_load = true;
    plan.goal = options.target_load;
  } else if ((c = compare(false)) && c->first > options.over_peers * c->second / n * slack) {
    // In ops/s: how the traffic is spread. At a few percent of a CPU a server's fixed costs
    // (its timers) are most of its busy time, so loads would understate the spread.
    plan.reason = MoveReason::kOverPeers;
    plan.in_load = false;
    plan.goal = options.balance * (c->first + c->second) / (n + 1);
  } else {
    return std::nullopt;
  }
  const bool in_load = plan.in_load;
  const double limit = plan.goal;
  plan.peers_mean = c->second / n;
  const auto measure = [&](double ops, const std::optional<double>& capacity) {
    return in_load ? ops / *capacity : ops;
  };
  const double self_before = c->first;
  const double peers_mean = plan.peers_mean;

  // This node's slots, each once, largest first.
  std::vector<SlotOps> mine;
  std::vector<double> ops_of(kSlots, -1);
  for (const SlotOps& s : slots) {
    if (s.slot >= kSlots || !std::isfinite(s.ops_per_second) || s.ops_per_second <= 0 ||
        ops_of[s.slot] >= 0) {
      continue;
    }
    ops_of[s.slot] = s.ops_per_second;
    mine.push_back(s);
  }
  std::sort(mine.begin(), mine.end(), [](const SlotOps& a, const SlotOps& b) {
    return a.ops_per_second > b.ops_per_second ||
           (a.ops_per_second == b.ops_per_second && a.slot < b.slot);
  });

  double self_ops = self.ops_per_second;
  std::vector<std::vector<uint16_t>> assigned(peers.size());
  std::vector<double> moved_ops(peers.size(), 0);
  const auto assign = [&](size_t peer, uint16_t slot, double ops) {
    assigned[peer].push_back(slot);
    moved_ops[peer] += ops;
    peers[peer].ops += ops;
    self_ops -= ops;
  };
  bool reused = false;
  if (kept) {
    // The previous plan, re-projected on the loads now, while it still does its job.
    bool valid = true;
    for (const Transfer& t : previous->to) {
      const auto p = std::find_if(peers.begin(), peers.end(),
                                  [&](const Planned& x) { return x.node->id == t.to.id; });
      if (p == peers.end()) valid = false;
      for (uint16_t slot : t.slots) {
        if (!valid || slot >= kSlots || ops_of[slot] < 0) {
          valid = false;
          break;
        }
        assign(static_cast<size_t>(p - peers.begin()), slot, ops_of[slot]);
      }
      if (!valid) break;
    }
    valid = valid && previous->SlotCount() > 0 &&
            measure(self_ops, self_capacity) <= plan.goal * (1 + options.keep_projection) &&
            self_before - measure(self_ops, self_capacity) <=
                (self_before - plan.goal) * (1 + options.keep_projection);
    for (const Planned& p : peers) {
      valid = valid && measure(p.ops, p.capacity) <= limit * (1 + options.keep_projection);
    }
    reused = valid;
    if (!reused) {
      for (size_t i = 0; i < peers.size(); ++i) {
        peers[i].ops = peers[i].node->ops_per_second;
        assigned[i].clear();
        moved_ops[i] = 0;
      }
      self_ops = self.ops_per_second;
    }
  }
  if (!reused) {
    size_t count = 0;
    for (const SlotOps& s : mine) {
      if (measure(self_ops, self_capacity) <= plan.goal || count == options.max_slots) break;
      const double self_after = measure(self_ops - s.ops_per_second, self_capacity);
      std::optional<size_t> best;
      double best_measure = 0;
      for (size_t i = 0; i < peers.size(); ++i) {
        const double now = measure(peers[i].ops, peers[i].capacity);
        const double after = measure(peers[i].ops + s.ops_per_second, peers[i].capacity);
        if (after > limit || after >= self_after) continue;
        if (!best || now < best_measure) {
          best = i;
          best_measure = now;
        }
      }
      if (!best) continue;
      assign(*best, s.slot, s.ops_per_second);
      ++count;
    }
    if (count == 0 || measure(self_ops, self_capacity) > plan.goal) return std::nullopt;
  }

  plan.from = {.id = self.id,
               .address = self.address,
               .ops_before = self.ops_per_second,
               .ops_after = self_ops,
               .load_before = Load(self.ops_per_second, self_capacity),
               .load_after = Load(self_ops, self_capacity)};
  for (size_t i = 0; i < peers.size(); ++i) {
    if (assigned[i].empty()) continue;
    const Planned& p = peers[i];
    Transfer t;
    t.to = {.id = p.node->id,
            .address = p.node->address,
            .ops_before = p.node->ops_per_second,
            .ops_after = p.ops,
            .load_before = Load(p.node->ops_per_second, p.capacity),
            .load_after = Load(p.ops, p.capacity)};
    t.slots = std::move(assigned[i]);
    t.ops_per_second = moved_ops[i];
    plan.to.push_back(std::move(t));
  }
  std::string summary = absl::StrCat(
      "Advice: move. Node ", self.id, " (", self.address, ") is ",
      plan.reason == MoveReason::kOverTarget
          ? absl::StrCat("over its load target: ", Figure(self_before, in_load), " against ",
                         Figure(options.target_load, true))
          : absl::StrFormat("%.2fx its peers' mean: %s against %s", self_before / peers_mean,
                            Figure(self_before, in_load), Figure(peers_mean, in_load)),
      ".\nThis plan moves ", plan.SlotCount(), " slots (",
      absl::StrFormat("%.0f", self.ops_per_second - self_ops), " commands/s) to bring it to ",
      Figure(plan.goal, in_load), " or under. Projected commands/s:\n");
  absl::StrAppend(&summary, "  ", self.id, " (", self.address,
                  "): ", absl::StrFormat("%.0f -> %.0f", self.ops_per_second, self_ops), "\n");
  for (const Transfer& t : plan.to) {
    absl::StrAppend(&summary, "  ", t.to.id, " (", t.to.address,
                    "): ", absl::StrFormat("%.0f -> %.0f", t.to.ops_before, t.to.ops_after), "\n");
  }
  plan.commands = MoveCommands(plan.from, plan.to, options.tls, summary);
  return plan;
}

}  // namespace hotkey::cluster
