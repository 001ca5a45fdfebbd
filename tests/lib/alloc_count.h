// Allocation hooks for tests (alloc_count.cc, which replaces the global operator new and
// delete of the test executable it is linked into: link it into one executable at most
// once). Both are per thread, so a test pins what the code under test does on its own
// thread whatever other threads do:
//  - a count of the allocations made, for tests that pin "no allocation";
//  - an optional limit on a single allocation's size: while armed, a larger request throws
//    std::bad_alloc instead of being attempted, and is recorded. It lets a test prove that
//    a hostile buffer is rejected without the code first allocating what the buffer
//    claims, and without the test exhausting the machine.

#ifndef HOTKEY_TESTS_LIB_ALLOC_COUNT_H_
#define HOTKEY_TESTS_LIB_ALLOC_COUNT_H_

#include <cstddef>
#include <cstdint>

namespace hotkey::testing {

// Allocations made so far by this thread through operator new (any form).
uint64_t AllocationsOnThisThread();

// Arms (max_bytes > 0) or disarms (0) this thread's limit, and clears what it refused.
void SetAllocationLimitOnThisThread(size_t max_bytes);
// The largest allocation this thread's limit refused since it was last set (0 if none).
size_t LargestRefusedOnThisThread();

}  // namespace hotkey::testing

#endif  // HOTKEY_TESTS_LIB_ALLOC_COUNT_H_
