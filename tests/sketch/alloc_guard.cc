// Replaces the global operator new/delete of the sketch_test executable with malloc/free
// plus an optional per-allocation size limit (ScopedAllocationLimit in test_util.h).
//
// Why: a hostile serialised buffer may claim a 4 GiB sketch or a 64 GiB key table; the
// test must show such a buffer is rejected before that memory is asked for, without the
// test itself exhausting the machine. With the limit armed, an oversized request throws
// std::bad_alloc (which the test turns into a failure) instead of being attempted.
// The limit is off unless a test arms it; tests run on one thread.

#include <algorithm>
#include <cstdlib>
#include <new>

#include "test_util.h"

namespace {
size_t g_limit = 0;  // 0: no limit
size_t g_largest_refused = 0;

void* Allocate(size_t n) {
  if (g_limit != 0 && n > g_limit) {
    if (n > g_largest_refused) g_largest_refused = n;
    throw std::bad_alloc();
  }
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
// The nothrow forms too (Catch2 uses them): every unaligned new/delete pair must be ours, or
// AddressSanitizer sees its own operator new freed by our free().
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
// The aligned forms (the tracker's lobby buckets are cache-line aligned), under the same limit.
void* operator new(size_t n, std::align_val_t a) {
  if (g_limit != 0 && n > g_limit) {
    if (n > g_largest_refused) g_largest_refused = n;
    throw std::bad_alloc();
  }
  const size_t align = static_cast<size_t>(a);
  // aligned_alloc wants a size that is a multiple of the alignment.
  if (void* p = std::aligned_alloc(align, (std::max<size_t>(n, 1) + align - 1) / align * align)) {
    return p;
  }
  throw std::bad_alloc();
}
void* operator new[](size_t n, std::align_val_t a) { return operator new(n, a); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, size_t, std::align_val_t) noexcept { std::free(p); }

namespace hotkey::sketch::testing {

ScopedAllocationLimit::ScopedAllocationLimit(size_t max_bytes) {
  g_limit = max_bytes;
  g_largest_refused = 0;
}
ScopedAllocationLimit::~ScopedAllocationLimit() { g_limit = 0; }
size_t ScopedAllocationLimit::largest_refused() const { return g_largest_refused; }

}  // namespace hotkey::sketch::testing
