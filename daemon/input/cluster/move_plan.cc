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

std::string MoveCommands(const MoveSide& from, const MoveSide& to, std::span<const uint16_t> slots,
                         bool tls) {
  const std::string what =
      absl::StrCat("slot", slots.size() == 1 ? " " : "s ", absl::StrJoin(slots, " "), " from node ",
                   CommentSafe(from.id), " (", CommentSafe(from.address), ") to node ",
                   CommentSafe(to.id), " (", CommentSafe(to.address), ")");
  std::string out = "#!/usr/bin/env bash\n";
  const std::optional<HostPort> f = SplitHostPort(from.address);
  const std::optional<HostPort> t = SplitHostPort(to.address);
  if (!f || !t) {
    const std::string bad = CommentSafe(!f ? from.address : to.address);
    absl::StrAppend(&out, "# Cannot move ", what, ": ", bad, " is not host:port.\n", "echo ",
                    ShellQuote(absl::StrCat("move: ", bad, " is not host:port")), " >&2\nexit 1\n");
    return out;
  }
  absl::StrAppend(
      &out, "# Moves Redis Cluster ", what,
      ":\n# for each slot, CLUSTER SETSLOT IMPORTING on the target, MIGRATING on the source, "
      "MIGRATE of\n# its keys 100 at a time until none is left, then CLUSTER SETSLOT NODE on "
      "the target and on\n# the source (Redis 7). Run it with bash on a host that reaches both "
      "nodes. Keys travel\n# byte-exact, spaces, quotes, newlines and NULs included. It stops "
      "at the first unexpected\n# reply (a key already on the target stops it: MIGRATE "
      "without REPLACE).\n# It does not authenticate: with AUTH, export REDISCLI_AUTH=<password> "
      "for redis-cli, and\n# MIGRATE needs AUTH2 <user> <password> added in move_keys.\n");
  absl::StrAppend(&out, "from_cli=(", Cli(*f, tls), ")\n");
  absl::StrAppend(&out, "migrate_to=", ShellQuote(absl::StrCat(RedisQuote(t->host), " ", t->port)),
                  "\n");
  out += kFunctions;
  for (const uint16_t slot : slots) {
    const std::string s = absl::StrCat(slot);
    absl::StrAppend(&out, "\n# Slot ", s, "\n");
    absl::StrAppend(&out, "expect OK ", Cli(*t, tls), " CLUSTER SETSLOT ", s, " IMPORTING ",
                    ShellQuote(from.id), "\n");
    absl::StrAppend(&out, "expect OK ", Cli(*f, tls), " CLUSTER SETSLOT ", s, " MIGRATING ",
                    ShellQuote(to.id), "\n");
    absl::StrAppend(&out, "move_keys ", s, "\n");
    absl::StrAppend(&out, "expect OK ", Cli(*t, tls), " CLUSTER SETSLOT ", s, " NODE ",
                    ShellQuote(to.id), "\n");
    absl::StrAppend(&out, "expect OK ", Cli(*f, tls), " CLUSTER SETSLOT ", s, " NODE ",
                    ShellQuote(to.id), "\n");
  }
  return out;
}

std::optional<MovePlan> PlanSlotMove(const NodeLoad& self, std::span<const NodeLoad> others,
                                     std::span<const SlotOps> hot, const MoveOptions& options) {
  if (!UsableOps(self.ops_per_second)) return std::nullopt;
  const std::optional<double> self_capacity = UsableCapacity(self.capacity_ops);

  // The target: the least loaded, by load when every candidate has a capacity (its own or
  // self's), else by ops/s; ties by id.
  struct Candidate {
    const NodeLoad* node;
    std::optional<double> capacity;
  };
  std::vector<Candidate> candidates;
  for (const NodeLoad& n : others) {
    if (n.id == self.id || !UsableOps(n.ops_per_second)) continue;
    std::optional<double> capacity = UsableCapacity(n.capacity_ops);
    candidates.push_back({&n, capacity ? capacity : self_capacity});
  }
  if (candidates.empty()) return std::nullopt;
  const bool by_load = std::all_of(candidates.begin(), candidates.end(),
                                   [](const Candidate& c) { return c.capacity.has_value(); });
  auto rank = [by_load](const Candidate& c) {
    return by_load ? c.node->ops_per_second / *c.capacity : c.node->ops_per_second;
  };
  const Candidate& to = *std::min_element(candidates.begin(), candidates.end(),
                                          [&](const Candidate& a, const Candidate& b) {
                                            const double ra = rank(a), rb = rank(b);
                                            return ra < rb || (ra == rb && a.node->id < b.node->id);
                                          });

  // The slots, largest first, each once.
  std::vector<SlotOps> slots;
  for (const SlotOps& s : hot) {
    if (s.slot < kSlots && std::isfinite(s.ops_per_second) && s.ops_per_second > 0) {
      slots.push_back(s);
    }
  }
  std::sort(slots.begin(), slots.end(), [](const SlotOps& a, const SlotOps& b) {
    return a.ops_per_second > b.ops_per_second ||
           (a.ops_per_second == b.ops_per_second && a.slot < b.slot);
  });

  // Greedy: compare in load when both ends have a capacity, else in ops/s.
  const bool in_load = self_capacity && to.capacity;
  auto from_measure = [&](double ops) { return in_load ? ops / *self_capacity : ops; };
  auto to_measure = [&](double ops) { return in_load ? ops / *to.capacity : ops; };
  double from_ops = self.ops_per_second;
  double to_ops = to.node->ops_per_second;
  std::vector<uint16_t> moved;
  std::vector<bool> seen(kSlots, false);
  for (const SlotOps& s : slots) {
    if (seen[s.slot]) continue;
    seen[s.slot] = true;
    if (!moved.empty() && self_capacity && from_ops / *self_capacity <= options.target_load) {
      break;
    }
    if (to_measure(to_ops + s.ops_per_second) < from_measure(from_ops - s.ops_per_second)) {
      moved.push_back(s.slot);
      from_ops -= s.ops_per_second;
      to_ops += s.ops_per_second;
    }
  }
  // No slot fits: each carries half the gap or more, so moving one only moves the hot spot.
  // The largest still goes to a quieter node in a plan that says so (relieves false): where
  // the slot is one tag's many keys, the fix is to give them tags of their own.
  bool relieves = true;
  if (moved.empty()) {
    if (slots.empty() || !(to_measure(to_ops) < from_measure(from_ops))) return std::nullopt;
    relieves = false;
    moved.push_back(slots.front().slot);
    from_ops -= slots.front().ops_per_second;
    to_ops += slots.front().ops_per_second;
  }

  MovePlan plan;
  plan.relieves = relieves;
  plan.slots = std::move(moved);
  plan.from = {.id = self.id,
               .address = self.address,
               .ops_before = self.ops_per_second,
               .ops_after = from_ops,
               .load_before = Load(self.ops_per_second, self_capacity),
               .load_after = Load(from_ops, self_capacity)};
  plan.to = {.id = to.node->id,
             .address = to.node->address,
             .ops_before = to.node->ops_per_second,
             .ops_after = to_ops,
             .load_before = Load(to.node->ops_per_second, to.capacity),
             .load_after = Load(to_ops, to.capacity)};
  plan.commands = MoveCommands(plan.from, plan.to, plan.slots, options.tls);
  return plan;
}

}  // namespace hotkey::cluster
