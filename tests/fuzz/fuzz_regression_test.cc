// Replays fuzz/regressions/<target>/* and the seed corpora fuzz/corpus/<target>/* through
// the libFuzzer targets' entry points (fuzz/fuzz_util.h), in the ordinary build: an input
// that once crashed or broke a check must pass for good, whether or not clang and
// libFuzzer are around. A broken FUZZ_CHECK throws here, so the failing file is named.

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "fuzz_util.h"

namespace hotkey::fuzz {
namespace {

using Target = int (*)(const uint8_t*, size_t);

struct Entry {
  const char* name;
  Target target;
};

constexpr Entry kTargets[] = {
    {"fuzz_protocol", FuzzProtocol},
    {"fuzz_rules_file", FuzzRulesFile},
    {"fuzz_deserialize", FuzzDeserialize},
    {"fuzz_http", FuzzHttp},
    {"fuzz_resp", FuzzResp},
    {"fuzz_memcached", FuzzMemcached},
    {"fuzz_reassembly", FuzzReassembly},
    {"fuzz_tap", FuzzTap},
    {"fuzz_shard", FuzzShard},
    {"fuzz_cluster", FuzzCluster},
};

std::vector<std::filesystem::path> FilesUnder(const std::filesystem::path& dir) {
  std::vector<std::filesystem::path> out;
  if (!std::filesystem::is_directory(dir)) return out;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.is_regular_file()) out.push_back(e.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string ReadFile(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// Runs every file of fuzz/<kind>/<target>/; returns how many ran.
size_t Replay(const std::string& kind) {
  size_t ran = 0;
  for (const Entry& t : kTargets) {
    for (const auto& path : FilesUnder(std::filesystem::path(HOTKEY_FUZZ_DIR) / kind / t.name)) {
      INFO(path.string());
      const std::string bytes = ReadFile(path);
      CHECK_NOTHROW(t.target(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()));
      ++ran;
    }
  }
  return ran;
}

TEST_CASE("Fuzz: every saved crash input now passes its target", "[fuzz]") {
  CHECK(Replay("regressions") > 0);
}

TEST_CASE("Fuzz: every seed of the corpora passes its target", "[fuzz]") {
  // The seeds are valid and broken inputs of every form: a cheap smoke test of the
  // targets' own checks, and proof that the harnesses still build and run.
  CHECK(Replay("corpus") >= 5 * 5);
}

TEST_CASE("Fuzz: the targets accept empty and one-byte inputs", "[fuzz]") {
  const uint8_t byte = 0xff;
  for (const Entry& t : kTargets) {
    INFO(t.name);
    CHECK(t.target(nullptr, 0) == 0);
    CHECK(t.target(&byte, 1) == 0);
  }
}

}  // namespace
}  // namespace hotkey::fuzz
