#include "hotkey/privilege/drop.h"

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include <catch2/catch.hpp>

namespace hotkey::privilege {
namespace {

// A user database of root, the package's user and nobody.
absl::StatusOr<User> FakeLookup(std::string_view name) {
  if (name == "root") return User{"root", 0, 0};
  if (name == "toor") return User{"toor", 0, 0};
  if (name == "hotkeyd") return User{"hotkeyd", 998, 997};
  if (name == "nobody") return User{"nobody", 65534, 65534};
  return absl::NotFoundError("no such user");
}

absl::StatusOr<User> NoPackageUser(std::string_view name) {
  if (name == "hotkeyd") return absl::NotFoundError("no such user");
  return FakeLookup(name);
}

// Runs `body` in a forked child and returns its exit status (0: passed). The parent keeps
// its credentials whatever the child does.
int InChild(const std::function<int()>& body) {
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid == 0) _exit(body());
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

constexpr char kRootStatus[] =
    "Name:\thotkeyd\nUid:\t0\t0\t0\t0\nGid:\t0\t0\t0\t0\nCapInh:\t0000000000000000\n"
    "CapPrm:\t000001ffffffffff\nCapEff:\t000001ffffffffff\nCapBnd:\t000001ffffffffff\n"
    "CapAmb:\t0000000000000000\nNoNewPrivs:\t0\nSeccomp:\t0\n";
constexpr char kDroppedStatus[] =
    "Name:\thotkeyd\nUid:\t65534\t65534\t65534\t65534\nCapInh:\t0000000000000000\n"
    "CapPrm:\t0000000000000000\nCapEff:\t0000000000000000\nCapBnd:\t0000000000000000\n"
    "CapAmb:\t0000000000000000\nNoNewPrivs:\t1\n";

TEST_CASE("MakePlan: auto as root switches to the package user when it exists", "[privilege]") {
  absl::StatusOr<Plan> p = MakePlan("auto", 0, FakeLookup);
  REQUIRE(p.ok());
  CHECK_FALSE(p->keep_all);
  REQUIRE(p->switch_to);
  CHECK(p->switch_to->uid == 998);
  CHECK(p->switch_to->gid == 997);
}

// A machine with neither the package's user nor nobody (a minimal container image).
absl::StatusOr<User> NoUnprivilegedUser(std::string_view name) {
  if (name == "hotkeyd" || name == "nobody") return absl::NotFoundError("no such user");
  return FakeLookup(name);
}

TEST_CASE("MakePlan: auto as root without the package user switches to nobody, and says so",
          "[privilege]") {
  absl::StatusOr<Plan> p = MakePlan("auto", 0, NoPackageUser);
  REQUIRE(p.ok());
  CHECK_FALSE(p->keep_all);
  REQUIRE(p->switch_to);
  CHECK(p->switch_to->name == "nobody");
  CHECK(p->switch_to->uid == 65534);
  CHECK(p->fell_back);
  absl::StatusOr<Plan> package = MakePlan("auto", 0, FakeLookup);
  REQUIRE(package.ok());
  CHECK_FALSE(package->fell_back);
}

TEST_CASE("MakePlan: auto as root with no unprivileged user refuses, naming the fix",
          "[privilege]") {
  absl::StatusOr<Plan> p = MakePlan("auto", 0, NoUnprivilegedUser);
  REQUIRE(absl::IsFailedPrecondition(p.status()));
  CHECK(std::string(p.status().message()).find(kCreateUserCommand) != std::string::npos);
  CHECK(p.status().message().find("--run-as=root") != std::string_view::npos);
}

TEST_CASE("MakePlan: auto as root never keeps root when a user has uid 0", "[privilege]") {
  const auto hotkeyd_is_root = [](std::string_view name) -> absl::StatusOr<User> {
    if (name == "hotkeyd") return User{"hotkeyd", 0, 0};
    return FakeLookup(name);
  };
  CHECK(absl::IsInvalidArgument(MakePlan("auto", 0, hotkeyd_is_root).status()));
}

TEST_CASE("MakePlan: a lookup that fails for another reason than absence is an error",
          "[privilege]") {
  const auto broken = [](std::string_view) -> absl::StatusOr<User> {
    return absl::InternalError("nss down");
  };
  CHECK(absl::IsInternal(MakePlan("auto", 0, broken).status()));
}

TEST_CASE("MakePlan: not root, auto and empty drop capabilities only", "[privilege]") {
  for (std::string_view v : {"auto", "", "root"}) {
    absl::StatusOr<Plan> p = MakePlan(v, 998, FakeLookup);
    REQUIRE(p.ok());
    CHECK_FALSE(p->keep_all);
    CHECK_FALSE(p->switch_to);
  }
}

TEST_CASE("MakePlan: only root, said outright, keeps everything as root", "[privilege]") {
  absl::StatusOr<Plan> p = MakePlan("root", 0, FakeLookup);
  REQUIRE(p.ok());
  CHECK(p->keep_all);
  // An empty value is a mistake, not a request for root.
  CHECK(absl::IsInvalidArgument(MakePlan("", 0, FakeLookup).status()));
  CHECK(absl::IsInvalidArgument(MakePlan("", 0, NoUnprivilegedUser).status()));
}

TEST_CASE("MakePlan: a named user as root is switched to", "[privilege]") {
  absl::StatusOr<Plan> p = MakePlan("nobody", 0, FakeLookup);
  REQUIRE(p.ok());
  REQUIRE(p->switch_to);
  CHECK(p->switch_to->name == "nobody");
  CHECK(p->switch_to->uid == 65534);
}

TEST_CASE("MakePlan: an unknown user is NotFound", "[privilege]") {
  CHECK(absl::IsNotFound(MakePlan("nosuchuser", 0, FakeLookup).status()));
}

TEST_CASE("MakePlan: a user with uid 0 under another name is refused", "[privilege]") {
  CHECK(absl::IsInvalidArgument(MakePlan("toor", 0, FakeLookup).status()));
}

TEST_CASE("MakePlan: not root, another user cannot be switched to", "[privilege]") {
  CHECK(absl::IsFailedPrecondition(MakePlan("nobody", 998, FakeLookup).status()));
  absl::StatusOr<Plan> self = MakePlan("hotkeyd", 998, FakeLookup);
  REQUIRE(self.ok());
  CHECK_FALSE(self->switch_to);
  CHECK_FALSE(self->keep_all);
}

TEST_CASE("LookUpUser: finds root with uid 0, and not a made-up name", "[privilege]") {
  absl::StatusOr<User> root = LookUpUser("root");
  REQUIRE(root.ok());
  CHECK(root->uid == 0);
  CHECK(absl::IsNotFound(LookUpUser("no-such-user-hotkeyd-test").status()));
}

TEST_CASE("ParseStatus: reads uids, capability sets and no_new_privs", "[privilege]") {
  absl::StatusOr<ThreadCreds> t = ParseStatus(kRootStatus);
  REQUIRE(t.ok());
  CHECK(t->uid[0] == 0);
  CHECK(t->cap_eff == 0x1ffffffffffULL);
  CHECK(t->cap_bnd == 0x1ffffffffffULL);
  CHECK(t->cap_amb == 0);
  CHECK_FALSE(t->no_new_privs);
  absl::StatusOr<ThreadCreds> d = ParseStatus(kDroppedStatus);
  REQUIRE(d.ok());
  CHECK(d->uid[3] == 65534);
  CHECK(d->cap_eff == 0);
  CHECK(d->no_new_privs);
}

TEST_CASE("ParseStatus: a missing or malformed line is an error", "[privilege]") {
  CHECK(absl::IsInvalidArgument(ParseStatus("Uid:\t0\t0\t0\t0\n").status()));
  std::string bad = kDroppedStatus;
  bad.replace(bad.find("CapEff:\t0"), 9, "CapEff:\tz");
  CHECK(absl::IsInvalidArgument(ParseStatus(bad).status()));
  CHECK(absl::IsInvalidArgument(ParseStatus("").status()));
}

TEST_CASE("Check: flags a thread with capabilities, uid 0 or without no_new_privs", "[privilege]") {
  ThreadCreds dropped = *ParseStatus(kDroppedStatus);
  ThreadCreds root = *ParseStatus(kRootStatus);
  CHECK(Check({dropped, dropped}, true, true).ok());
  CHECK(absl::IsFailedPrecondition(Check({dropped, root}, false, false)));
  ThreadCreds uid0 = dropped;
  uid0.uid[2] = 0;  // a saved uid of 0 could take root back
  CHECK(Check({uid0}, false, true).ok());
  CHECK(absl::IsFailedPrecondition(Check({uid0}, true, true)));
  ThreadCreds nnp = dropped;
  nnp.no_new_privs = false;
  CHECK(Check({nnp}, true, false).ok());
  CHECK(absl::IsFailedPrecondition(Check({nnp}, true, true)));
}

TEST_CASE("ReadThreads: sees every thread of this process", "[privilege]") {
  std::atomic<bool> stop{false};
  std::thread t([&] {
    while (!stop) std::this_thread::yield();
  });
  absl::StatusOr<std::vector<ThreadCreds>> threads = ReadThreads();
  stop = true;
  t.join();
  REQUIRE(threads.ok());
  CHECK(threads->size() >= 2);
}

TEST_CASE("CheckAccess: a missing file is refused with its name", "[privilege]") {
  absl::Status s = CheckAccess("/nonexistent/hotkeyd-test", R_OK);
  CHECK(absl::IsPermissionDenied(s));
  CHECK(s.message().find("/nonexistent/hotkeyd-test") != std::string_view::npos);
  CHECK(CheckAccess("/", R_OK | X_OK).ok());
}

// A directory of its own for the file tests, removed at the end.
struct TempDir {
  std::string path;
  TempDir() {
    char tmpl[] = "/tmp/drop_test_XXXXXX";
    path = mkdtemp(tmpl);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  std::string Write(const std::string& name, mode_t mode) const {
    const std::string p = path + "/" + name;
    std::ofstream(p) << "x";
    chmod(p.c_str(), mode);
    return p;
  }
};

TEST_CASE("CheckNotWritableBy: a file only its owner writes, in a directory of its owner's, passes",
          "[privilege]") {
  TempDir dir;
  chmod(dir.path.c_str(), 0755);
  const User other{"other", geteuid() + 1000, getegid() + 1000};
  CHECK(CheckNotWritableBy(dir.Write("rules.yml", 0644), other).ok());
  CHECK(absl::IsNotFound(CheckNotWritableBy(dir.path + "/missing", other)));
}

TEST_CASE(
    "CheckNotWritableBy: the user's own file, a world- or group-writable file, or a "
    "directory the user may write in is refused",
    "[privilege]") {
  TempDir dir;
  chmod(dir.path.c_str(), 0755);
  const User owner{"owner", geteuid(), getegid()};
  const User other{"other", geteuid() + 1000, getegid() + 1000};
  const User group{"group", geteuid() + 1000, getegid()};
  const std::string own = dir.Write("own", 0600);
  absl::Status s = CheckNotWritableBy(own, owner);
  CHECK(absl::IsPermissionDenied(s));
  CHECK(s.message().find(own) != std::string_view::npos);
  CHECK(absl::IsPermissionDenied(CheckNotWritableBy(dir.Write("world", 0646), other)));
  CHECK(absl::IsPermissionDenied(CheckNotWritableBy(dir.Write("group", 0664), group)));
  CHECK(CheckNotWritableBy(dir.Write("group_ro", 0644), group).ok());
  // The directory: whoever may write in it may replace the file.
  chmod(dir.path.c_str(), 0777);
  CHECK(absl::IsPermissionDenied(CheckNotWritableBy(dir.Write("in_open_dir", 0644), other)));
  // ... unless the sticky bit keeps others' files theirs, as in /tmp.
  chmod(dir.path.c_str(), 01777);
  CHECK(CheckNotWritableBy(dir.Write("in_sticky_dir", 0644), other).ok());
}

TEST_CASE("Restrict then Drop: no thread keeps a capability, and no_new_privs is set",
          "[privilege]") {
  // Whoever runs the test: as root, the child switches to nobody; otherwise it drops the
  // capabilities it has (none, usually) and still must pass the check.
  const bool root = geteuid() == 0;
  CHECK(InChild([root] {
          absl::StatusOr<bool> bounded = Restrict();
          if (!bounded.ok() || *bounded != root) return 1;
          absl::StatusOr<Plan> plan = MakePlan(root ? "nobody" : "", geteuid(), LookUpUser);
          if (!plan.ok()) return 2;
          if (!Drop(*plan).ok()) return 3;
          absl::StatusOr<std::vector<ThreadCreds>> threads = ReadThreads();
          if (!threads.ok() || threads->size() != 1) return 4;
          if (!Check(*threads, root, true).ok()) return 5;
          if (root && (*threads)[0].cap_bnd != 0) return 6;
          return 0;
        }) == 0);
}

TEST_CASE(
    "Drop: as root, a thread that exists before the switch loses uid 0 and every "
    "capability too",
    "[privilege]") {
  if (geteuid() != 0) {
    WARN("not root: the switch of every thread is not tested");
    return;
  }
  CHECK(InChild([] {
          // Restrict() first, as a start does: the thread inherits no_new_privs and the
          // empty bounding set; the switch then clears its capabilities (glibc's setxid).
          if (!Restrict().ok()) return 1;
          std::atomic<int> stage{0};
          std::thread worker([&] {
            stage = 1;
            while (stage != 2) std::this_thread::yield();
          });
          while (stage != 1) std::this_thread::yield();
          absl::StatusOr<Plan> plan = MakePlan("nobody", 0, LookUpUser);
          if (!plan.ok() || !Drop(*plan).ok()) return 2;
          absl::StatusOr<std::vector<ThreadCreds>> threads = ReadThreads();
          stage = 2;
          worker.join();
          if (!threads.ok() || threads->size() != 2) return 3;
          if (!Check(*threads, true, true).ok()) return 4;
          for (const ThreadCreds& t : *threads) {
            if (t.uid[0] != 65534 || t.cap_bnd != 0) return 5;
          }
          return 0;
        }) == 0);
}

TEST_CASE("Drop: keep_all changes nothing", "[privilege]") {
  CHECK(InChild([] {
          const uid_t before = geteuid();
          Plan keep;
          keep.keep_all = true;
          if (!Drop(keep).ok()) return 1;
          return geteuid() == before ? 0 : 2;
        }) == 0);
}

}  // namespace
}  // namespace hotkey::privilege
