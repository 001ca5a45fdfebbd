// Key slots and hash tags against Redis itself: a redis-server in cluster mode, started on a
// Unix socket in a temporary directory, answers CLUSTER KEYSLOT for every key the test
// computes.

#include "hotkey/cluster/slot.h"

#include <unistd.h>

#include <charconv>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "absl/strings/str_cat.h"
#include "unix_socket.h"

namespace hotkey::cluster {
namespace {

TEST_CASE("Slot: CRC16/XMODEM's check value and the hash-tag rule", "[cluster]") {
  CHECK(Crc16("123456789") == 0x31C3);
  CHECK(Crc16("") == 0);
  CHECK(HashTag("user:{42}:name") == "42");
  CHECK_FALSE(HashTag("{}x"));
  CHECK_FALSE(HashTag("x{"));
  CHECK_FALSE(HashTag("}{x"));
  CHECK_FALSE(HashTag("plain"));
  CHECK(HashTag("{{a}}") == "{a");
  CHECK(HashTag("a{b}{c}") == "b");
  CHECK(HashTag("{}{a}") == std::nullopt);  // the first '{' decides: its tag is empty
  CHECK(KeySlot("user:{42}:name") == KeySlot("42"));
  CHECK(KeySlot("{}x") == (Crc16("{}x") & 16383));
  const std::string binary("\0{\xff\0}", 5);
  CHECK(HashTag(binary) == std::string_view("\xff\0", 2));
}

// A redis-server in cluster mode on a Unix socket, shut down (and its directory removed) at
// the end of the test.
class Server {
 public:
  Server() {
    char tmpl[] = "/tmp/hotkey-slot-XXXXXX";
    REQUIRE(::mkdtemp(tmpl) != nullptr);
    dir_ = tmpl;
    const std::string cmd = absl::StrCat(
        HOTKEY_REDIS_SERVER, " --port 0 --unixsocket ", dir_, "/redis.sock --cluster-enabled yes",
        " --cluster-config-file ", dir_, "/nodes.conf --dir ", dir_,
        " --save '' --appendonly no --daemonize yes --pidfile ", dir_, "/redis.pid", " --logfile ",
        dir_, "/redis.log");
    REQUIRE(std::system(cmd.c_str()) == 0);
    for (int i = 0; i < 100 && fd_ < 0; ++i) {
      fd_ = testing::ConnectUnix(dir_ + "/redis.sock");
      if (fd_ < 0) ::usleep(50'000);
    }
    REQUIRE(fd_ >= 0);
  }
  ~Server() {
    if (fd_ >= 0) {
      const std::string shutdown = "*2\r\n$8\r\nSHUTDOWN\r\n$6\r\nNOSAVE\r\n";
      (void)testing::WriteAll(fd_, shutdown);
      ::close(fd_);
    }
    for (int i = 0; i < 100 && std::filesystem::exists(dir_ + "/redis.sock"); ++i) {
      ::usleep(20'000);
    }
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  // CLUSTER KEYSLOT of each key, pipelined.
  std::vector<int> KeySlots(const std::vector<std::string>& keys) {
    std::string out;
    for (const std::string& k : keys) {
      absl::StrAppend(&out, "*3\r\n$7\r\nCLUSTER\r\n$7\r\nKEYSLOT\r\n$", k.size(), "\r\n", k,
                      "\r\n");
    }
    REQUIRE(testing::WriteAll(fd_, out));
    std::vector<int> slots;
    std::string in;
    char buf[65536];
    size_t pos = 0;
    while (slots.size() < keys.size()) {
      const size_t eol = in.find("\r\n", pos);
      if (eol == std::string::npos) {
        const ssize_t n = ::read(fd_, buf, sizeof(buf));
        REQUIRE(n > 0);
        in.append(buf, static_cast<size_t>(n));
        continue;
      }
      const std::string_view line(in.data() + pos, eol - pos);
      INFO(line);
      REQUIRE(line.starts_with(":"));
      int slot = -1;
      REQUIRE(std::from_chars(line.data() + 1, line.data() + line.size(), slot).ec == std::errc());
      slots.push_back(slot);
      pos = eol + 2;
    }
    return slots;
  }

 private:
  std::string dir_;
  int fd_ = -1;
};

TEST_CASE("Slot: KeySlot equals a real redis-server's CLUSTER KEYSLOT", "[cluster][redis]") {
  std::vector<std::string> keys = {"",
                                   "a",
                                   "{",
                                   "}",
                                   "{}",
                                   "}{",
                                   "{a",
                                   "a}",
                                   "{a}",
                                   "{}{a}",
                                   "{a}{b}",
                                   "a{b}c",
                                   "{{a}}",
                                   "}{a}",
                                   "foo{}{bar}",
                                   "foo{{bar}}zap",
                                   "foo{bar}{zap}",
                                   "{user1000}.following",
                                   "123456789",
                                   "user:{42}:name",
                                   std::string("\0", 1),
                                   std::string("\0{\xff\0}", 5),
                                   std::string("{\0}", 3),
                                   std::string(1000, 'x'),
                                   absl::StrCat("{", std::string(300, 'k'), "}")};
  // Random keys over an alphabet rich in braces and with every byte value, 0 to 40 bytes.
  std::mt19937 gen(42);
  std::uniform_int_distribution<int> len(0, 40), pick(0, 9), byte(0, 255);
  for (int i = 0; i < 20000; ++i) {
    std::string k;
    for (int n = len(gen); n > 0; --n) {
      const int p = pick(gen);
      k.push_back(p < 2 ? '{' : p < 4 ? '}' : p < 6 ? 'a' + p : static_cast<char>(byte(gen)));
    }
    keys.push_back(std::move(k));
  }
  Server server;
  const std::vector<int> want = server.KeySlots(keys);
  REQUIRE(want.size() == keys.size());
  int tagged = 0;
  for (size_t i = 0; i < keys.size(); ++i) {
    INFO("key " << i << " of " << keys[i].size() << " bytes");
    CHECK(KeySlot(keys[i]) == want[i]);
    tagged += HashTag(keys[i]).has_value();
  }
  // The random keys exercise both rules.
  CHECK(tagged > 2000);
  CHECK(tagged < 18000);
}

}  // namespace
}  // namespace hotkey::cluster
