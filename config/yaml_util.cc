#include "yaml_util.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <set>

#include "hotkey/config/values.h"

namespace hotkey::config::internal {

absl::Status ForEachEntry(const YAML::Node& map, std::string_view path, const MapWords& words,
                          const EntryHandler& handle) {
  std::set<std::string> seen;
  for (auto it = map.begin(); it != map.end(); ++it) {
    // Copies: `it->` returns a temporary proxy, so a reference to its members would dangle.
    const YAML::Node key = it->first;
    const YAML::Node value = it->second;
    if (!key.IsScalar()) return YamlError(key, path, words.key_not_scalar);
    const std::string key_path =
        path.empty() ? key.Scalar() : absl::StrCat(Av(path), ".", key.Scalar());
    if (!seen.insert(key.Scalar()).second) return YamlError(key, key_path, words.repeated);
    if (absl::Status s = handle(key, key_path, value); !s.ok()) return s;
  }
  return absl::OkStatus();
}

FileText ReadCappedFile(const std::string& path, size_t max_bytes) {
  FileText out;
  // O_NONBLOCK: opening a FIFO with no writer must not wait. Only a regular file is read,
  // checked on the descriptor it is read from, so the read is bounded by max_bytes and
  // never waits on a writer (a FIFO) or a device.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    out.problem = FileText::kCannotOpen;
    out.error = errno;
    return out;
  }
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    out.problem = FileText::kNotRegular;
    ::close(fd);
    return out;
  }
  std::unique_ptr<FILE, int (*)(FILE*)> file(::fdopen(fd, "rb"), &std::fclose);
  if (file == nullptr) {
    out.problem = FileText::kCannotOpen;
    out.error = errno;
    ::close(fd);
    return out;
  }
  char buffer[8192];
  while (size_t n = std::fread(buffer, 1, sizeof(buffer), file.get())) {
    out.text.append(buffer, n);
    if (out.text.size() > max_bytes) {
      out.problem = FileText::kTooLarge;
      out.text.clear();
      return out;
    }
  }
  if (std::ferror(file.get())) {
    out.problem = FileText::kReadError;
    out.error = errno;
    out.text.clear();
  }
  return out;
}

absl::StatusOr<std::string> ReadConfigFile(const std::string& path, std::string_view what,
                                           size_t max_bytes) {
  FileText file = ReadCappedFile(path, max_bytes);
  const std::string name = absl::StrCat(Av(what), " \"", path, "\"");
  switch (file.problem) {
    case FileText::kNone:
      break;
    case FileText::kCannotOpen: {
      std::string message = absl::StrCat("cannot open ", name, ": ", strerror(file.error));
      return file.error == ENOENT ? absl::NotFoundError(message)
                                  : absl::InvalidArgumentError(message);
    }
    case FileText::kNotRegular:
      return absl::InvalidArgumentError(
          absl::StrCat(name, " is not a regular file (a FIFO, a device or a directory)"));
    case FileText::kTooLarge:
      return absl::InvalidArgumentError(
          absl::StrCat(name, " is larger than ", FormatByteSize(max_bytes)));
    case FileText::kReadError:
      return absl::InvalidArgumentError(
          absl::StrCat("cannot read ", name, ": ", strerror(file.error)));
  }
  return std::move(file.text);
}

}  // namespace hotkey::config::internal
