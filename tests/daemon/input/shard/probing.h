// A Prober on its own io_context, for the tests: Next() runs one round and returns its
// measurement.

#ifndef HOTKEY_TESTS_SHARD_PROBING_H_
#define HOTKEY_TESTS_SHARD_PROBING_H_

#include <utility>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <catch2/catch.hpp>

#include "hotkey/shard/prober.h"

namespace hotkey::shard {

class Probing {
 public:
  Probing(config::ShardOptions options, const clock::Clock& clock)
      : prober_(io_, std::move(options), clock,
                [this](const Measurement& m) { got_.push_back(m); }) {}
  Measurement Next() {
    const size_t n = got_.size();
    prober_.Probe();
    io_.restart();
    while (got_.size() == n) REQUIRE(io_.run_one() > 0);
    return got_.back();
  }

 private:
  boost::asio::io_context io_;
  std::vector<Measurement> got_;
  Prober prober_;
};

}  // namespace hotkey::shard

#endif  // HOTKEY_TESTS_SHARD_PROBING_H_
