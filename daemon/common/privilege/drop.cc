// Privilege drop after setup (drop.h).

#include "hotkey/privilege/drop.h"

#include <dirent.h>
#include <grp.h>
#include <pwd.h>
#include <sys/capability.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace hotkey::privilege {
namespace {

// Debian 12's Abseil has its own string_view class (config/absl_compat.h): our API speaks
// std::string_view, and this converts at the calls into Abseil.
absl::string_view Av(std::string_view s) { return absl::string_view(s.data(), s.size()); }

absl::Status Errno(std::string_view what, int err) {
  return absl::Status(
      err == EPERM ? absl::StatusCode::kPermissionDenied : absl::StatusCode::kInternal,
      absl::StrCat(Av(what), ": ", std::strerror(err)));
}

// Clears the calling thread's permitted, effective and inheritable sets. Makes no capset
// call when they are empty already: a systemd unit's SystemCallFilter=~@privileged refuses
// capset, and a unit without capabilities has nothing to drop.
absl::Status ClearCapabilities() {
  cap_t none = cap_init();  // all three sets empty
  if (none == nullptr) return Errno("cap_init", errno);
  cap_t now = cap_get_proc();
  if (now == nullptr) {
    cap_free(none);
    return Errno("cap_get_proc", errno);
  }
  const bool empty = cap_compare(now, none) == 0;
  cap_free(now);
  const int rc = empty ? 0 : cap_set_proc(none);
  const int err = errno;
  cap_free(none);
  if (rc != 0) return Errno("cannot clear the capability sets (cap_set_proc)", err);
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<User> LookUpUser(std::string_view name) {
  const std::string n(name);
  passwd pw;
  passwd* found = nullptr;
  long size = sysconf(_SC_GETPW_R_SIZE_MAX);
  std::string buf(size > 0 ? static_cast<size_t>(size) : 16384, '\0');
  int err;
  while ((err = getpwnam_r(n.c_str(), &pw, buf.data(), buf.size(), &found)) == ERANGE &&
         buf.size() < (1u << 20)) {
    buf.resize(buf.size() * 2);
  }
  if (err != 0) return Errno(absl::StrCat("cannot look up user \"", n, "\""), err);
  if (found == nullptr) {
    return absl::NotFoundError(absl::StrCat("no user \"", n, "\" on this system"));
  }
  return User{n, pw.pw_uid, pw.pw_gid};
}

absl::StatusOr<Plan> MakePlan(std::string_view run_as, uid_t euid,
                              const std::function<absl::StatusOr<User>(std::string_view)>& lookup) {
  Plan plan;
  const auto not_root = [](std::string_view name) {
    return absl::InvalidArgumentError(absl::StrCat(
        "user \"", Av(name), "\" has uid 0: that is root; pass --run-as=root to keep root"));
  };
  if (run_as == kRunAsRoot) {
    plan.keep_all = euid == 0;
    return plan;
  }
  if (euid != 0 && (run_as.empty() || run_as == kRunAsAuto)) return plan;
  if (run_as.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--run-as is empty: name the user to switch to (or ", Av(kRunAsAuto),
                     "); only --run-as=root keeps root, which is dangerous"));
  }
  if (run_as == kRunAsAuto) {
    for (std::string_view name : {kPackageUser, kFallbackUser}) {
      absl::StatusOr<User> user = lookup(name);
      if (!user.ok()) {
        if (!absl::IsNotFound(user.status())) return user.status();
        continue;
      }
      if (user->uid == 0) return not_root(name);
      plan.fell_back = name != kPackageUser;
      plan.switch_to = *std::move(user);
      return plan;
    }
    return absl::FailedPreconditionError(absl::StrCat(
        "started as root, and neither a \"", Av(kPackageUser), "\" nor a \"", Av(kFallbackUser),
        "\" user exists to switch to: create one with `", Av(kCreateUserCommand),
        "`, or name another with --run-as=<user> (--run-as=root keeps root: dangerous)"));
  }
  absl::StatusOr<User> user = lookup(run_as);
  if (!user.ok()) return user.status();
  if (user->uid == 0) return not_root(run_as);
  if (euid != 0) {
    if (user->uid != euid) {
      return absl::FailedPreconditionError(
          absl::StrCat("cannot switch to user \"", Av(run_as), "\" (uid ", user->uid,
                       "): hotkeyd runs as uid ", euid, ", and only root can switch"));
    }
    return plan;  // already that user: capabilities only
  }
  plan.switch_to = *std::move(user);
  return plan;
}

absl::StatusOr<bool> Restrict() {
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return Errno("PR_SET_NO_NEW_PRIVS", errno);
  if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0) {
    return Errno("PR_CAP_AMBIENT_CLEAR_ALL", errno);
  }
  cap_t caps = cap_get_proc();
  if (caps == nullptr) return Errno("cap_get_proc", errno);
  cap_flag_value_t setpcap = CAP_CLEAR;
  cap_get_flag(caps, CAP_SETPCAP, CAP_EFFECTIVE, &setpcap);
  cap_free(caps);
  if (setpcap != CAP_SET) return false;
  // Every capability the running kernel knows, which may be more than this libcap's.
  for (cap_value_t c = 0; CAP_IS_SUPPORTED(c); ++c) {
    if (cap_drop_bound(c) != 0) return Errno(absl::StrCat("cap_drop_bound(", c, ")"), errno);
  }
  return true;
}

absl::Status Drop(const Plan& plan) {
  if (plan.keep_all) return absl::OkStatus();
  if (plan.switch_to) {
    const User& u = *plan.switch_to;
    const gid_t groups[1] = {u.gid};
    // glibc applies each of these to every thread; the order matters: the group calls need
    // root, which setuid gives up.
    if (setgroups(1, groups) != 0) return Errno("setgroups", errno);
    if (setresgid(u.gid, u.gid, u.gid) != 0) return Errno("setresgid", errno);
    if (setresuid(u.uid, u.uid, u.uid) != 0) return Errno("setresuid", errno);
    // No way back: a process that could regain uid 0 has not dropped anything.
    if (setuid(0) == 0) {
      return absl::InternalError("setuid(0) succeeded after the switch: root is not gone");
    }
  }
  return ClearCapabilities();
}

absl::StatusOr<ThreadCreds> ParseStatus(std::string_view status) {
  ThreadCreds t;
  int seen = 0;
  auto hex = [](absl::string_view v, uint64_t* out) {
    v = absl::StripAsciiWhitespace(v);
    const auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), *out, 16);
    return ec == std::errc() && p == v.data() + v.size() && !v.empty();
  };
  for (absl::string_view line : absl::StrSplit(Av(status), '\n')) {
    const size_t colon = line.find(':');
    if (colon == absl::string_view::npos) continue;
    const absl::string_view name = line.substr(0, colon);
    const absl::string_view value = line.substr(colon + 1);
    bool ok = true;
    if (name == "Uid") {
      std::vector<absl::string_view> f =
          absl::StrSplit(value, absl::ByAnyChar(" \t"), absl::SkipEmpty());
      ok = f.size() == 4;
      for (size_t i = 0; ok && i < 4; ++i) {
        uint32_t u;
        ok = absl::SimpleAtoi(f[i], &u);
        t.uid[i] = u;
      }
      seen |= 1;
    } else if (name == "CapPrm") {
      ok = hex(value, &t.cap_prm), seen |= 2;
    } else if (name == "CapEff") {
      ok = hex(value, &t.cap_eff), seen |= 4;
    } else if (name == "CapAmb") {
      ok = hex(value, &t.cap_amb), seen |= 8;
    } else if (name == "CapBnd") {
      ok = hex(value, &t.cap_bnd), seen |= 16;
    } else if (name == "NoNewPrivs") {
      uint32_t v;
      ok = absl::SimpleAtoi(absl::StripAsciiWhitespace(value), &v) && v <= 1;
      t.no_new_privs = v == 1;
      seen |= 32;
    }
    if (!ok) {
      return absl::InvalidArgumentError(absl::StrCat("malformed status line \"", line, "\""));
    }
  }
  if (seen != 63) {
    return absl::InvalidArgumentError(
        "status lacks one of Uid, CapPrm, CapEff, CapAmb, CapBnd, NoNewPrivs");
  }
  return t;
}

absl::StatusOr<std::vector<ThreadCreds>> ReadThreads() {
  DIR* dir = opendir("/proc/self/task");
  if (dir == nullptr) return Errno("cannot list /proc/self/task", errno);
  std::vector<ThreadCreds> threads;
  absl::Status status;
  while (const dirent* e = readdir(dir)) {
    int tid;
    if (!absl::SimpleAtoi(e->d_name, &tid)) continue;  // . and ..
    std::ifstream in(absl::StrCat("/proc/self/task/", tid, "/status"));
    if (!in) continue;  // the thread has exited
    std::stringstream text;
    text << in.rdbuf();
    absl::StatusOr<ThreadCreds> t = ParseStatus(text.str());
    if (!t.ok()) {
      status = t.status();
      break;
    }
    t->tid = tid;
    threads.push_back(*t);
  }
  closedir(dir);
  if (!status.ok()) return status;
  return threads;
}

absl::Status Check(const std::vector<ThreadCreds>& threads, bool expect_unprivileged_uid,
                   bool expect_no_new_privs) {
  for (const ThreadCreds& t : threads) {
    if (t.cap_prm != 0 || t.cap_eff != 0 || t.cap_amb != 0) {
      return absl::FailedPreconditionError(
          absl::StrFormat("thread %d keeps capabilities (CapPrm %016x, CapEff %016x, CapAmb %016x)",
                          t.tid, t.cap_prm, t.cap_eff, t.cap_amb));
    }
    if (expect_unprivileged_uid &&
        (t.uid[0] == 0 || t.uid[1] == 0 || t.uid[2] == 0 || t.uid[3] == 0)) {
      return absl::FailedPreconditionError(
          absl::StrFormat("thread %d keeps uid 0 (Uid %u %u %u %u)", t.tid, t.uid[0], t.uid[1],
                          t.uid[2], t.uid[3]));
    }
    if (expect_no_new_privs && !t.no_new_privs) {
      return absl::FailedPreconditionError(absl::StrFormat("thread %d lacks no_new_privs", t.tid));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckAccess(const std::string& path, int mode) {
  if (access(path.c_str(), mode) == 0) return absl::OkStatus();
  const int err = errno;
  return absl::PermissionDeniedError(absl::StrCat("\"", path, "\": ", std::strerror(err)));
}

absl::Status CheckNotWritableBy(const std::string& path, const User& user) {
  struct stat file;
  if (stat(path.c_str(), &file) != 0) {
    const int err = errno;
    if (err == ENOENT) return absl::NotFoundError(absl::StrCat("\"", path, "\": no such file"));
    return absl::PermissionDeniedError(absl::StrCat("\"", path, "\": ", std::strerror(err)));
  }
  // Whether `user` may write what `st` describes, as the kernel decides for a process with
  // that uid and only that group (Drop() sets exactly these).
  const auto writable = [&user](const struct stat& st) {
    if (st.st_uid == user.uid) return true;  // an owner may chmod it writable
    if (st.st_gid == user.gid && (st.st_mode & S_IWGRP) != 0) return true;
    return (st.st_mode & S_IWOTH) != 0;
  };
  std::filesystem::path parent = std::filesystem::path(path).parent_path();
  if (parent.empty()) parent = ".";
  struct stat dir;
  if (stat(parent.c_str(), &dir) != 0) {
    const int err = errno;
    return absl::PermissionDeniedError(
        absl::StrCat("\"", parent.string(), "\": ", std::strerror(err)));
  }
  const bool sticky_protects =
      (dir.st_mode & S_ISVTX) != 0 && dir.st_uid != user.uid && file.st_uid != user.uid;
  std::string who;
  if (writable(file)) {
    who = "the file";
  } else if (writable(dir) && !sticky_protects) {
    who = absl::StrCat("its directory \"", parent.string(), "\"");
  } else {
    return absl::OkStatus();
  }
  return absl::PermissionDeniedError(absl::StrCat(
      "\"", path, "\" is read as root, but user \"", user.name, "\" (uid ", user.uid,
      ") can change it: ", who,
      " is writable by that user; make it root's (chown root: and chmod go-w), or start "
      "hotkeyd as that user"));
}

}  // namespace hotkey::privilege
