#include "hotkey/source/report_buffer.h"

#include <cassert>
#include <cstddef>
#include <mutex>
#include <new>
#include <utility>
#include <vector>

namespace hotkey::source {

namespace {
// A shared_ptr control block with our deleter and allocator takes about 64 bytes on
// libstdc++; blocks are of one size so any freed block fits the next.
constexpr size_t kBlockBytes = 128;
}  // namespace

struct ReportBuffer::Pool {
  ~Pool() {
    for (void* b : free_blocks) ::operator delete(b);
  }

  // Makes room so that returning every report and block never reallocates the lists
  // (a return runs in a reader's shared_ptr destructor). Caller holds mu.
  void Reserve() {
    free.reserve(total);
    free_blocks.reserve(total + 1);
  }

  mutable std::mutex mu;
  int total = 0;                                    // reports made; guarded by mu
  uint64_t skipped = 0;                             // guarded by mu
  std::vector<std::unique_ptr<SourceReport>> free;  // guarded by mu
  std::vector<void*> free_blocks;                   // of kBlockBytes; guarded by mu
  std::shared_ptr<const SourceReport> latest;       // guarded by mu
};

namespace {

using PoolPtr = std::shared_ptr<ReportBuffer::Pool>;

}  // namespace

// The deleter and allocator are friends in spirit: they reach Pool through the pointer.
struct Recycle {
  PoolPtr pool;
  void operator()(SourceReport* r) const {
    std::lock_guard<std::mutex> l(pool->mu);
    pool->free.emplace_back(r);  // reserved: no allocation
  }
};

template <class T>
struct BlockAllocator {
  using value_type = T;
  explicit BlockAllocator(PoolPtr p) : pool(std::move(p)) {}
  template <class U>
  BlockAllocator(const BlockAllocator<U>& o) : pool(o.pool) {}  // NOLINT: rebinding

  T* allocate(size_t n) {
    static_assert(sizeof(T) <= kBlockBytes && alignof(T) <= alignof(std::max_align_t));
    assert(n == 1);
    (void)n;
    {
      std::lock_guard<std::mutex> l(pool->mu);
      if (!pool->free_blocks.empty()) {
        void* b = pool->free_blocks.back();
        pool->free_blocks.pop_back();
        return static_cast<T*>(b);
      }
    }
    return static_cast<T*>(::operator new(kBlockBytes));
  }
  void deallocate(T* p, size_t) {
    std::lock_guard<std::mutex> l(pool->mu);
    pool->free_blocks.push_back(p);  // reserved: no allocation
  }
  template <class U>
  bool operator==(const BlockAllocator<U>& o) const {
    return pool == o.pool;
  }

  PoolPtr pool;
};

ReportBuffer::ReportBuffer(const sketch::HeavyHitters& prototype)
    : pool_(std::make_shared<Pool>()) {
  std::lock_guard<std::mutex> l(pool_->mu);
  pool_->total = kSlots;
  pool_->Reserve();
  for (int i = 0; i < kSlots; ++i) {
    pool_->free.push_back(std::make_unique<SourceReport>(SourceReport{{}, prototype, {}, {}}));
  }
}

ReportBuffer::~ReportBuffer() {
  // The latest report's control block holds the pool: let go of it here, outside the
  // lock (dropping it may return it to the pool, which takes the lock).
  std::shared_ptr<const SourceReport> last;
  {
    std::lock_guard<std::mutex> l(pool_->mu);
    last = std::move(pool_->latest);
  }
}

void ReportBuffer::EnableSlots(const source::SlotCounts& prototype) {
  std::lock_guard<std::mutex> l(pool_->mu);
  for (std::unique_ptr<SourceReport>& r : pool_->free) r->slots.emplace(prototype);
}

std::shared_ptr<const SourceReport> ReportBuffer::Publish(absl::Time time,
                                                          const sketch::HeavyHitters& tracker,
                                                          const source::SlotCounts* slots,
                                                          const SourceCounters& counters) {
  std::unique_ptr<SourceReport> slot;
  {
    std::lock_guard<std::mutex> l(pool_->mu);
    if (!pool_->free.empty()) {
      slot = std::move(pool_->free.back());
      pool_->free.pop_back();
    } else if (pool_->total < kMaxReports) {
      ++pool_->total;  // every report is held by a reader: make one more
      pool_->Reserve();
    } else {
      ++pool_->skipped;  // every report allowed is held: the memory stays bounded
      return nullptr;
    }
  }
  if (slot) {
    slot->time = time;
    slot->tracker = tracker;  // same options: every vector keeps its buffer
    slot->counters = counters;
    if (slots) slot->slots = *slots;  // the same: same shape
  } else {
    slot = std::make_unique<SourceReport>(SourceReport{time, tracker, counters, {}});
    if (slots) slot->slots.emplace(*slots);
  }
  std::shared_ptr<const SourceReport> report(slot.release(), Recycle{pool_},
                                             BlockAllocator<SourceReport>(pool_));
  std::shared_ptr<const SourceReport> previous;
  {
    std::lock_guard<std::mutex> l(pool_->mu);
    previous = std::exchange(pool_->latest, report);
  }
  // The previous latest is released here, outside the lock.
  return report;
}

std::shared_ptr<const SourceReport> ReportBuffer::Latest() const {
  std::lock_guard<std::mutex> l(pool_->mu);
  return pool_->latest;
}

int ReportBuffer::reports() const {
  std::lock_guard<std::mutex> l(pool_->mu);
  return pool_->total;
}

uint64_t ReportBuffer::skipped() const {
  std::lock_guard<std::mutex> l(pool_->mu);
  return pool_->skipped;
}

}  // namespace hotkey::source
