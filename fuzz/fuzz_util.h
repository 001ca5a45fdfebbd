// Helpers shared by the libFuzzer targets in fuzz/ and their regression replay
// (tests/fuzz/fuzz_regression_test.cc).
//
// Each target is a function FuzzX(data, size) here; fuzz_X.cc also defines libFuzzer's
// LLVMFuzzerTestOneInput for it, unless HOTKEY_FUZZ_NO_MAIN is defined, which is how the
// regression test links all of them into one ordinary (g++) executable.
//
// FUZZ_CHECK is assert() that stays on in NDEBUG builds: a broken invariant is a finding.
// Under libFuzzer it aborts, so the input is saved; in the regression test it throws, so
// Catch2 names the file that failed and goes on with the others.

#ifndef HOTKEY_FUZZ_FUZZ_UTIL_H_
#define HOTKEY_FUZZ_FUZZ_UTIL_H_

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#ifdef HOTKEY_FUZZ_NO_MAIN
#define HOTKEY_FUZZ_FAIL(msg) throw std::logic_error(msg)
#else
#define HOTKEY_FUZZ_FAIL(msg) (std::fputs((msg).c_str(), stderr), std::abort())
#endif

#define FUZZ_CHECK(cond)                                                        \
  do {                                                                          \
    if (!(cond)) {                                                              \
      HOTKEY_FUZZ_FAIL(std::string(__FILE__) + ":" + std::to_string(__LINE__) + \
                       ": FUZZ_CHECK failed: " #cond "\n");                     \
    }                                                                           \
  } while (0)

// FUZZ_CHECK for an absl::Status or StatusOr: the message goes into the report.
#define FUZZ_CHECK_OK(expr)                                                                       \
  do {                                                                                            \
    const auto& fuzz_check_ok_value = (expr);                                                     \
    if (!::hotkey::fuzz::internal::StatusOf(fuzz_check_ok_value).ok()) {                          \
      HOTKEY_FUZZ_FAIL(                                                                           \
          std::string(__FILE__) + ":" + std::to_string(__LINE__) +                                \
          ": FUZZ_CHECK_OK failed: " #expr ": " +                                                 \
          std::string(::hotkey::fuzz::internal::StatusOf(fuzz_check_ok_value).message()) + "\n"); \
    }                                                                                             \
  } while (0)

namespace hotkey::fuzz {

namespace internal {
inline const absl::Status& StatusOf(const absl::Status& s) { return s; }
template <class T>
const absl::Status& StatusOf(const absl::StatusOr<T>& s) {
  return s.status();
}
}  // namespace internal

// The targets; each returns 0 (libFuzzer's convention) and never throws but through a
// FUZZ_CHECK in the regression build.
int FuzzProtocol(const uint8_t* data, size_t size);
int FuzzRulesFile(const uint8_t* data, size_t size);
int FuzzDeserialize(const uint8_t* data, size_t size);
int FuzzHttp(const uint8_t* data, size_t size);
int FuzzResp(const uint8_t* data, size_t size);
int FuzzMemcached(const uint8_t* data, size_t size);
int FuzzReassembly(const uint8_t* data, size_t size);
int FuzzTap(const uint8_t* data, size_t size);
int FuzzShard(const uint8_t* data, size_t size);
int FuzzCluster(const uint8_t* data, size_t size);

}  // namespace hotkey::fuzz

#endif  // HOTKEY_FUZZ_FUZZ_UTIL_H_
