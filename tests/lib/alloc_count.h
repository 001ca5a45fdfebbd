// A per-thread count of the allocations made through operator new, for tests that pin "no
// allocation" (alloc_count.cc, which replaces the global operator new and delete of the
// test executable it is linked into: link it into one executable at most once).

#ifndef HOTKEY_TESTS_LIB_ALLOC_COUNT_H_
#define HOTKEY_TESTS_LIB_ALLOC_COUNT_H_

#include <cstdint>

namespace hotkey::testing {

// Allocations made so far by this thread through operator new.
uint64_t AllocationsOnThisThread();

}  // namespace hotkey::testing

#endif  // HOTKEY_TESTS_LIB_ALLOC_COUNT_H_
