#include "hotkey/config/hash_secret.h"

#include <fstream>
#include <iterator>

#include "absl/strings/str_cat.h"

namespace hotkey::config {

absl::StatusOr<std::string> LoadKeyHashSecret(const std::string& path) {
  if (path.empty()) return std::string(kPublicLabelKey);
  std::ifstream f(path, std::ios::binary);
  if (!f) return absl::NotFoundError(absl::StrCat("cannot read --key.hash-secret-file ", path));
  std::string secret((std::istreambuf_iterator<char>(f)), {});
  while (!secret.empty() && (secret.back() == '\n' || secret.back() == '\r')) secret.pop_back();
  if (secret.size() < kMinHashSecretBytes) {
    return absl::InvalidArgumentError(absl::StrCat("--key.hash-secret-file ", path, " holds ",
                                                   secret.size(), " bytes; use at least ",
                                                   kMinHashSecretBytes, " random bytes"));
  }
  return secret;
}

}  // namespace hotkey::config
