#include "hotkey/shard/reply.h"

#include <charconv>
#include <cstdint>

#include "absl/strings/str_cat.h"

namespace hotkey::shard {

absl::StatusOr<std::optional<Reply>> ParseRespReply(std::string_view buffer, size_t max_bytes) {
  if (buffer.empty()) return std::nullopt;
  const size_t eol = buffer.find("\r\n");
  if (eol == std::string_view::npos) {
    if (buffer.size() > max_bytes) {
      return absl::ResourceExhaustedError(absl::StrCat("reply line over ", max_bytes, " bytes"));
    }
    return std::nullopt;
  }
  const char type = buffer[0];
  const std::string_view line = buffer.substr(1, eol - 1);
  switch (type) {
    case '+':
      return Reply{Reply::Kind::kSimple, line, eol + 2};
    case '-':
      return Reply{Reply::Kind::kError, line, eol + 2};
    case '$': {
      if (line == "-1") return Reply{Reply::Kind::kNull, {}, eol + 2};
      uint64_t n = 0;
      const auto [end, ec] = std::from_chars(line.data(), line.data() + line.size(), n);
      if (line.empty() || ec != std::errc() || end != line.data() + line.size()) {
        return absl::InvalidArgumentError("bad bulk string length");
      }
      if (n > max_bytes) {
        return absl::ResourceExhaustedError(
            absl::StrCat("reply of ", n, " bytes, over the cap of ", max_bytes));
      }
      const size_t start = eol + 2;
      if (buffer.size() < start + n + 2) return std::nullopt;
      if (buffer.substr(start + n, 2) != "\r\n") {
        return absl::InvalidArgumentError("bulk string not ended by CRLF");
      }
      return Reply{Reply::Kind::kBulk, buffer.substr(start, n), start + n + 2};
    }
    default:
      return absl::InvalidArgumentError(absl::StrCat(
          "unexpected reply type (byte ", static_cast<int>(static_cast<unsigned char>(type)), ")"));
  }
}

absl::StatusOr<std::optional<Reply>> ParseMemcachedReply(std::string_view buffer,
                                                         std::string_view terminal,
                                                         size_t max_bytes) {
  for (size_t at = 0;;) {
    const size_t eol = buffer.find("\r\n", at);
    if (eol == std::string_view::npos) break;
    const std::string_view line = buffer.substr(at, eol - at);
    if (line == terminal) return Reply{Reply::Kind::kBulk, buffer.substr(0, at), eol + 2};
    if (line == "ERROR" || line.starts_with("CLIENT_ERROR") || line.starts_with("SERVER_ERROR")) {
      return Reply{Reply::Kind::kError, line, eol + 2};
    }
    at = eol + 2;
  }
  if (buffer.size() > max_bytes) {
    return absl::ResourceExhaustedError(absl::StrCat("reply over ", max_bytes, " bytes"));
  }
  return std::nullopt;
}

}  // namespace hotkey::shard
