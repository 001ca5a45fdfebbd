// Replaces the global operator new/delete of the test executable it is linked into with
// malloc/free
// plus a per-thread count of allocations (AllocationsOnThisThread() in alloc_count.h), so a
// test can pin "no allocation" on the thread that runs the code under test. Every
// unaligned form is replaced, as in tests/sketch/alloc_guard.cc, so sanitizers see
// matching pairs.

#include "alloc_count.h"

#include <cstdint>
#include <cstdlib>
#include <new>

namespace {
thread_local uint64_t t_allocations = 0;

void* Allocate(size_t n) {
  ++t_allocations;
  if (n == 0) n = 1;
  if (void* p = std::malloc(n)) return p;
  throw std::bad_alloc();
}
}  // namespace

void* operator new(size_t n) { return Allocate(n); }
void* operator new[](size_t n) { return Allocate(n); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }
void operator delete[](void* p, size_t) noexcept { std::free(p); }
void* operator new(size_t n, const std::nothrow_t&) noexcept {
  try {
    return Allocate(n);
  } catch (const std::bad_alloc&) {
    return nullptr;
  }
}
void* operator new[](size_t n, const std::nothrow_t& t) noexcept { return operator new(n, t); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }

namespace hotkey::testing {

uint64_t AllocationsOnThisThread() { return t_allocations; }

}  // namespace hotkey::testing
