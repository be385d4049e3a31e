#pragma once
// A generation's updates handed from the runtime thread to a thread that blocks for them (a gRPC
// handler): push never blocks; pop waits up to a timeout so the reader can check for cancellation.
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>

#include "emu/live/live_engine.h"

namespace nvl::emu::live {

class UpdateQueue {
 public:
  void push(const StreamUpdate& u) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      updates_.push_back(u);
    }
    cv_.notify_one();
  }
  std::optional<StreamUpdate> pop(std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> lock(mu_);
    if (!cv_.wait_for(lock, timeout, [this] { return !updates_.empty(); })) return std::nullopt;
    StreamUpdate u = std::move(updates_.front());
    updates_.pop_front();
    return u;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<StreamUpdate> updates_;
};

}  // namespace nvl::emu::live
