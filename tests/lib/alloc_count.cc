// Replaces the global operator new/delete of the test executable it is linked into with
// malloc/free plus the per-thread count and size limit of alloc_count.h. Every form is
// replaced (plain, array, nothrow, sized and aligned), so sanitizers see matching pairs:
// Catch2 uses the nothrow forms, and aligned forms must be counted too.

#include "alloc_count.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <new>

namespace {
thread_local uint64_t t_allocations = 0;
thread_local size_t t_limit = 0;  // 0: no limit
thread_local size_t t_largest_refused = 0;

// Counts the request and applies the limit; throws std::bad_alloc past it.
void Admit(size_t n) {
  ++t_allocations;
  if (t_limit != 0 && n > t_limit) {
    t_largest_refused = std::max(t_largest_refused, n);
    throw std::bad_alloc();
  }
}

void* Allocate(size_t n) {
  Admit(n);
  if (void* p = std::malloc(std::max<size_t>(n, 1))) return p;
  throw std::bad_alloc();
}

void* AllocateAligned(size_t n, std::align_val_t a) {
  Admit(n);
  const size_t align = static_cast<size_t>(a);
  // aligned_alloc wants a size that is a multiple of the alignment.
  if (void* p = std::aligned_alloc(align, (std::max<size_t>(n, 1) + align - 1) / align * align)) {
    return p;
  }
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
void* operator new(size_t n, std::align_val_t a) { return AllocateAligned(n, a); }
void* operator new[](size_t n, std::align_val_t a) { return AllocateAligned(n, a); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, size_t, std::align_val_t) noexcept { std::free(p); }

namespace hotkey::testing {

uint64_t AllocationsOnThisThread() { return t_allocations; }

void SetAllocationLimitOnThisThread(size_t max_bytes) {
  t_limit = max_bytes;
  t_largest_refused = 0;
}

size_t LargestRefusedOnThisThread() { return t_largest_refused; }

}  // namespace hotkey::testing
