// EventStream's queue; see event_stream.h.

#include "hotkey/http/event_stream.h"

#include <utility>

namespace hotkey::http {

bool EventStream::Send(std::string_view bytes) {
  if (closed()) return false;
  if (bytes.size() > max_unsent_bytes_ - unsent_bytes()) {
    Finish(CloseReason::kSlow);
    return false;
  }
  if (bytes.empty()) return true;
  queue_.emplace_back(bytes);
  queued_ += bytes.size();
  if (wake_) wake_();
  return true;
}

bool EventStream::TakeFront(std::string* block) {
  if (queue_.empty()) return false;
  *block = std::move(queue_.front());
  queue_.pop_front();
  queued_ -= block->size();
  in_flight_ = block->size();
  return true;
}

void EventStream::Finish(CloseReason reason) {
  if (closed()) return;
  reason_ = reason;
  queue_.clear();
  queued_ = 0;
  in_flight_ = 0;
  // Moved out first: the call may drop the session, whose destructor must not find it.
  std::function<void()> wake = std::move(wake_);
  wake_ = nullptr;
  if (wake) wake();
}

}  // namespace hotkey::http
