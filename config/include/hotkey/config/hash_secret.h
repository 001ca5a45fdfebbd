// The key of hashed key labels (--key.hash-secret-file): read here so that the daemon is
// given the secret itself and reads no file.
//
// Without a file the key is a fixed public string: labels stay stable across restarts
// (Prometheus series continuity), but anyone can hash candidate keys and match them. A
// secret file of at least kMinHashSecretBytes closes that.
//
// Thread-safe.

#ifndef HOTKEY_CONFIG_HASH_SECRET_H_
#define HOTKEY_CONFIG_HASH_SECRET_H_

#include <cstddef>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace hotkey::config {

// The key used when no --key.hash-secret-file is given.
inline constexpr std::string_view kPublicLabelKey = "hotkeyd public label key";
// A shorter secret could be found by trying them all.
inline constexpr size_t kMinHashSecretBytes = 16;

// The content of `path` without trailing line ends, or kPublicLabelKey when `path` is
// empty. NotFound when the file cannot be read; InvalidArgument when it holds fewer than
// kMinHashSecretBytes bytes.
absl::StatusOr<std::string> LoadKeyHashSecret(const std::string& path);

}  // namespace hotkey::config

#endif  // HOTKEY_CONFIG_HASH_SECRET_H_
