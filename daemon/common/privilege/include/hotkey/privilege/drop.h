// Least privilege after setup: a process started as root (or holding capabilities, as a
// systemd unit's AmbientCapabilities= gives) opens what needs privilege (a packet
// capture, listening sockets, files), then switches to an unprivileged user and gives up
// every capability, as tcpdump does with -Z before it parses a packet.
//
// Linux keeps credentials per thread. glibc's setgroups/setgid/setuid change every thread
// of the process (its "setxid" broadcast), and the kernel clears a thread's permitted,
// effective and ambient capabilities when it leaves uid 0 for good (capabilities(7),
// "Effect of user ID changes on capabilities"). Everything else is per thread and only
// inherited by threads created later: the capability sets of a process that is not root,
// the bounding set and no_new_privs. Hence two calls:
//
//   1. Restrict(), before the process creates any thread: no_new_privs, an empty ambient
//      set and (with CAP_SETPCAP) an empty bounding set. None of these takes away a
//      capability the process holds now, so setup still works.
//   2. Drop(plan), once setup is done: the user switch (every thread), then empty
//      capability sets on the calling thread. A process that is not root must call it
//      before it creates any thread, since its other threads would keep their sets.
//
// Then VerifyThreads() reads /proc/self/task/*/status and fails if any thread still has
// uid 0 (after a switch) or any capability, so a start never claims a drop that did not
// happen.
//
// Reference: capabilities(7), prctl(2) PR_SET_NO_NEW_PRIVS, PR_CAPBSET_DROP,
// PR_CAP_AMBIENT; setuid(2) "C library/kernel differences".
//
// Thread-safety: call these from one thread, at start; they change the whole process.

#ifndef HOTKEY_PRIVILEGE_DROP_H_
#define HOTKEY_PRIVILEGE_DROP_H_

#include <sys/types.h>

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace hotkey::privilege {

// The --run-as value that means "an unprivileged user, whichever exists": as root, switch
// to kPackageUser, or to kFallbackUser where there is no kPackageUser; refuse to start when
// neither exists. Not root: drop capabilities only.
inline constexpr std::string_view kRunAsAuto = "auto";
// The --run-as value that keeps root and every capability. Only this value does: a typo, an
// empty value or a missing user never leaves the daemon root.
inline constexpr std::string_view kRunAsRoot = "root";
// The system user the Debian package creates.
inline constexpr std::string_view kPackageUser = "hotkeyd";
// The user kRunAsAuto falls back to: every Linux distribution has it. Other daemons may run
// as it too, which is why kPackageUser comes first.
inline constexpr std::string_view kFallbackUser = "nobody";
// The command that creates kPackageUser, said when neither user exists.
inline constexpr std::string_view kCreateUserCommand =
    "useradd --system --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin "
    "hotkeyd";

// An account to switch to.
struct User {
  std::string name;
  uid_t uid = 0;
  gid_t gid = 0;
};

// Looks `name` up in the user database (getpwnam_r). NotFound when there is no such user.
absl::StatusOr<User> LookUpUser(std::string_view name);

// What Drop() does, decided from --run-as and the identity the process started with.
struct Plan {
  // --run-as=root, as root: nothing changes. (Said in the log.)
  bool keep_all = false;
  // Set: setgroups({gid}), setgid, setuid to this user, on every thread.
  std::optional<User> switch_to;
  // kRunAsAuto found no kPackageUser and chose kFallbackUser. (Said in the log.)
  bool fell_back = false;
};

// The plan for `run_as` (the flag's value) in a process whose effective uid is `euid`.
// `lookup` finds users (LookUpUser outside tests). Never keeps root unless `run_as` is
// kRunAsRoot.
//   - kRunAsRoot: keep_all when euid is 0; when not root there is nothing to keep but
//     capabilities, which are still dropped.
//   - kRunAsAuto: as root, switch to kPackageUser if `lookup` finds it, else to
//     kFallbackUser (fell_back), else FailedPrecondition naming kCreateUserCommand; not
//     root: drop capabilities only.
//   - "": as root, InvalidArgument (an empty value must not mean root); not root,
//     capabilities only.
//   - any other name: as root, switch to it (NotFound if it does not exist); not root, the
//     name must be this process's own user (FailedPrecondition otherwise: only root can
//     switch).
// A user found with uid 0 is refused (InvalidArgument): that is root by another name.
absl::StatusOr<Plan> MakePlan(std::string_view run_as, uid_t euid,
                              const std::function<absl::StatusOr<User>(std::string_view)>& lookup);

// Step 1 above: no_new_privs; the ambient set cleared; the bounding set emptied when the
// process holds CAP_SETPCAP (a root start; systemd's CapabilityBoundingSet= does it for a
// unit). Returns whether the bounding set was emptied.
absl::StatusOr<bool> Restrict();

// Step 2 above. With plan.keep_all, does nothing.
absl::Status Drop(const Plan& plan);

// One thread's credentials, from /proc/<pid>/task/<tid>/status.
struct ThreadCreds {
  int tid = 0;
  uid_t uid[4] = {0, 0, 0, 0};  // real, effective, saved, filesystem
  uint64_t cap_prm = 0;
  uint64_t cap_eff = 0;
  uint64_t cap_amb = 0;
  uint64_t cap_bnd = 0;
  bool no_new_privs = false;
};

// Parses the Uid:, CapPrm:, CapEff:, CapAmb:, CapBnd: and NoNewPrivs: lines of a status
// file. InvalidArgument when one is missing or malformed.
absl::StatusOr<ThreadCreds> ParseStatus(std::string_view status);

// Every thread of this process, read from /proc/self/task.
absl::StatusOr<std::vector<ThreadCreds>> ReadThreads();

// Fails (FailedPrecondition, naming the thread) when a thread has any permitted, effective
// or ambient capability, or, when `expect_unprivileged_uid`, any uid 0, or, when
// `expect_no_new_privs`, no_new_privs unset.
absl::Status Check(const std::vector<ThreadCreds>& threads, bool expect_unprivileged_uid,
                   bool expect_no_new_privs);

// Whether the current user may do `mode` (R_OK, W_OK, X_OK, as access(2)) on `path`;
// PermissionDenied naming the path and the errno text otherwise. Run it after Drop() to
// learn whether files the process re-reads or rewrites later stay usable.
absl::Status CheckAccess(const std::string& path, int mode);

// Whether `user` could change what a process running as root reads from `path`: the file
// or its directory belongs to `user`, or grants write to `user`'s group or to everyone (a
// directory with the sticky bit, as /tmp, lets others replace only their own files).
// PermissionDenied naming the path when it could; NotFound when the file does not exist.
// Run it on every file read as root, before it is read, so that nothing the unprivileged
// user can write is parsed with root's privileges.
absl::Status CheckNotWritableBy(const std::string& path, const User& user);

}  // namespace hotkey::privilege

#endif  // HOTKEY_PRIVILEGE_DROP_H_
