// Tests of the --key.hash-secret-file reader (config/include/hotkey/config/hash_secret.h).

#include "hotkey/config/hash_secret.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <catch2/catch.hpp>

#include "test_util.h"

namespace hotkey::config {
namespace {

using Catch::Matchers::Contains;
using testing::Message;

class SecretFile {
 public:
  explicit SecretFile(const std::string& bytes)
      : path_(std::filesystem::temp_directory_path() /
              ("hotkey_secret_test_" + std::to_string(getpid()))) {
    std::ofstream(path_, std::ios::binary) << bytes;
  }
  ~SecretFile() { std::filesystem::remove(path_); }
  std::string path() const { return path_.string(); }

 private:
  std::filesystem::path path_;
};

TEST_CASE("Hash secret: no file gives the public label key", "[config][secret]") {
  absl::StatusOr<std::string> s = LoadKeyHashSecret("");
  REQUIRE(s.ok());
  CHECK(*s == kPublicLabelKey);
}

TEST_CASE("Hash secret: the file's bytes without trailing line ends", "[config][secret]") {
  const std::string secret("0123456789abcdef\0\xff", 18);
  SecretFile f(secret + "\r\n\n");
  absl::StatusOr<std::string> s = LoadKeyHashSecret(f.path());
  REQUIRE(s.ok());
  CHECK(*s == secret);
}

TEST_CASE("Hash secret: a short or missing file is an error naming it", "[config][secret]") {
  SecretFile f("short\n");
  absl::StatusOr<std::string> s = LoadKeyHashSecret(f.path());
  REQUIRE_FALSE(s.ok());
  CHECK(s.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK_THAT(Message(s), Contains(f.path()) && Contains("holds 5 bytes; use at least 16"));

  absl::StatusOr<std::string> m = LoadKeyHashSecret("/nonexistent/secret");
  REQUIRE_FALSE(m.ok());
  CHECK(m.status().code() == absl::StatusCode::kNotFound);
  CHECK_THAT(Message(m), Contains("cannot read --key.hash-secret-file /nonexistent/secret"));
}

}  // namespace
}  // namespace hotkey::config
