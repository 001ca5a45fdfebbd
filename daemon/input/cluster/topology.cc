#include "hotkey/cluster/topology.h"

#include <charconv>

#include "absl/strings/str_cat.h"
#include "hotkey/cluster/slot.h"

namespace hotkey::cluster {

namespace {

// The parts of `s` between `sep`s; with `skip_empty`, empty parts are left out.
std::vector<std::string_view> Split(std::string_view s, char sep, bool skip_empty) {
  std::vector<std::string_view> out;
  while (true) {
    const size_t at = s.find(sep);
    const std::string_view part = s.substr(0, at);
    if (!part.empty() || !skip_empty) out.push_back(part);
    if (at == std::string_view::npos) return out;
    s.remove_prefix(at + 1);
  }
}

// A slot number: decimal digits only, below kSlots. Sets *past_end when the digits are a
// number at or past kSlots (any length): a slot no node can serve, not a malformed field.
bool ParseSlot(std::string_view s, uint16_t* out, bool* past_end) {
  if (s.empty() || s.find_first_not_of("0123456789") != std::string_view::npos) return false;
  unsigned v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec == std::errc::result_out_of_range ||
      (ec == std::errc() && v >= static_cast<unsigned>(kSlots))) {
    *past_end = true;
    return false;
  }
  if (ec != std::errc() || end != s.data() + s.size()) return false;
  *out = static_cast<uint16_t>(v);
  return true;
}

// One slot field of a node's line into `node`; false when it is not one (*past_end: because
// it names a slot at or past kSlots).
bool ParseSlotField(std::string_view f, Node& node, bool* past_end) {
  if (f.starts_with("[")) {
    if (!f.ends_with("]")) return false;
    f = f.substr(1, f.size() - 2);
    for (const auto& [arrow, list] : {std::pair{std::string_view("->-"), &node.migrating},
                                      std::pair{std::string_view("-<-"), &node.importing}}) {
      const size_t at = f.find(arrow);
      if (at == std::string_view::npos) continue;
      SlotMove m;
      if (!ParseSlot(f.substr(0, at), &m.slot, past_end) || at + 3 >= f.size()) return false;
      m.node = std::string(f.substr(at + 3));
      list->push_back(std::move(m));
      return true;
    }
    return false;
  }
  SlotRange r;
  if (const size_t dash = f.find('-'); dash != std::string_view::npos) {
    if (!ParseSlot(f.substr(0, dash), &r.first, past_end) ||
        !ParseSlot(f.substr(dash + 1), &r.last, past_end) || r.last < r.first) {
      return false;
    }
  } else if (!ParseSlot(f, &r.first, past_end)) {
    return false;
  } else {
    r.last = r.first;
  }
  node.slots.push_back(r);
  return true;
}

absl::StatusOr<Node> ParseLine(std::string_view line) {
  const std::vector<std::string_view> f = Split(line, ' ', /*skip_empty=*/true);
  if (f.size() < 8) return absl::InvalidArgumentError("fewer than 8 fields");
  Node n;
  n.id = std::string(f[0]);
  if (n.id.empty()) return absl::InvalidArgumentError("no node id");
  // ip:port@cport[,hostname]
  std::string_view addr = f[1];
  if (const size_t comma = addr.find(','); comma != std::string_view::npos) {
    n.hostname = std::string(addr.substr(comma + 1));
    addr = addr.substr(0, comma);
  }
  n.address = std::string(addr.substr(0, addr.find('@')));
  // Redis's node ids are kNodeIdBytes hex digits, and a host name is at most 255 bytes
  // (RFC 1035): longer is no node's, and everything that shows a node stays bounded.
  if (n.id.size() > kNodeIdBytes || (f[3] != "-" && f[3].size() > kNodeIdBytes)) {
    return absl::InvalidArgumentError("a node id longer than a node id");
  }
  if (n.address.size() > kMaxHostBytes || n.hostname.size() > kMaxHostBytes) {
    return absl::InvalidArgumentError("an address or host name longer than a host name");
  }
  for (std::string_view flag : Split(f[2], ',', /*skip_empty=*/false)) {
    if (flag == "myself") n.myself = true;
    if (flag == "master") n.primary = true;
    if (flag == "fail" || flag == "fail?") n.failed = true;
  }
  if (f[3] != "-") n.primary_id = std::string(f[3]);
  if (f[7] != "connected" && f[7] != "disconnected") {
    return absl::InvalidArgumentError(absl::StrCat("link state '", std::string(f[7]), "'"));
  }
  for (size_t i = 8; i < f.size(); ++i) {
    bool past_end = false;
    if (!ParseSlotField(f[i], n, &past_end)) {
      const std::string field(f[i].substr(0, 32));
      if (past_end) {
        return absl::OutOfRangeError(
            absl::StrCat("slot field '", field, "' is past the last slot, ", kSlots - 1));
      }
      return absl::InvalidArgumentError(absl::StrCat("slot field '", field, "'"));
    }
  }
  return n;
}

}  // namespace

int Node::SlotCount() const {
  int n = 0;
  for (const SlotRange& r : slots) n += r.last - r.first + 1;
  return n;
}

const Node* Topology::Myself() const {
  for (const Node& n : nodes) {
    if (n.myself) return &n;
  }
  return nullptr;
}

const Node* Topology::Owner(uint16_t slot) const {
  for (const Node& n : nodes) {
    for (const SlotRange& r : n.slots) {
      if (r.first <= slot && slot <= r.last) return &n;
    }
  }
  return nullptr;
}

int Topology::Shards() const {
  int shards = 0;
  for (const Node& n : nodes) shards += n.primary && !n.slots.empty();
  return shards;
}

absl::StatusOr<Topology> ParseClusterNodes(std::string_view text) {
  Topology t;
  int line_no = 0;
  for (std::string_view line : Split(text, '\n', /*skip_empty=*/false)) {
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) continue;
    if (t.nodes.size() == kMaxNodes) {
      return absl::ResourceExhaustedError(
          absl::StrCat("CLUSTER NODES: more than ", kMaxNodes, " nodes"));
    }
    absl::StatusOr<Node> n = ParseLine(line);
    if (!n.ok()) {
      return absl::Status(n.status().code(),
                          absl::StrCat("CLUSTER NODES line ", line_no, ": ", n.status().message()));
    }
    t.nodes.push_back(*std::move(n));
  }
  if (t.nodes.empty()) return absl::InvalidArgumentError("CLUSTER NODES: no node");
  // Each slot has one owner, listed once: a second listing is impossible, and would count
  // shards (and list nodes) that do not exist.
  std::vector<int> owner(kSlots, -1);
  for (size_t i = 0; i < t.nodes.size(); ++i) {
    for (const SlotRange& r : t.nodes[i].slots) {
      for (int s = r.first; s <= r.last; ++s) {
        if (owner[s] >= 0) {
          return absl::AlreadyExistsError(absl::StrCat(
              "CLUSTER NODES: slot ", s, " is listed twice, by nodes ",
              t.nodes[owner[s]].id.substr(0, 40), " and ", t.nodes[i].id.substr(0, 40)));
        }
        owner[s] = static_cast<int>(i);
      }
    }
  }
  return t;
}

}  // namespace hotkey::cluster
