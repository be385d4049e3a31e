#pragma once
// Test double of hal::CommGroup: a collective finishes a fixed latency after its last member
// arrives (or fails every member when told to). Records when each member arrived.
#include <map>
#include <string>
#include <vector>

#include "emu/rt/runtime.h"
#include "engine/hal/collectives.h"

namespace nvl::fakegpu::testing {

class FixedLatencyGroup final : public hal::CommGroup {
 public:
  FixedLatencyGroup(rt::Runtime& rt, std::string name, std::vector<hal::DeviceId> members, rt::Duration latency)
      : rt_(rt), name_(std::move(name)), members_(std::move(members)), latency_(latency) {}

  const std::string& name() const override { return name_; }
  const std::vector<hal::DeviceId>& members() const override { return members_; }

  void arrive(int rank, hal::SharedCollectiveOp op, hal::CollectiveDone done) override {
    arrivals.push_back({rank, op->name, rt_.now()});
    pending_.push_back(std::move(done));
    if (pending_.size() < members_.size()) return;
    auto dones = std::move(pending_);
    pending_.clear();
    const bool failing = fail_next;
    fail_next = false;
    rt_.call_after(latency_, [this, dones = std::move(dones), failing] {
      const hal::HalError error(-1, "collective '" + name_ + "'", hal::Xid::nvlink_error, "injected by the test");
      for (const auto& d : dones) d(failing ? &error : nullptr);
    });
  }

  // Repeated calls take their span, and are not recorded as arrivals.
  void repeat(int, hal::SharedCollectiveOp, std::size_t, rt::Duration, rt::Duration span,
              hal::CollectiveDone done) override {
    rt_.call_after(span, [done = std::move(done)] { done(nullptr); });
  }

  struct Arrival {
    int rank;
    std::string op;
    rt::Time at;
  };
  std::vector<Arrival> arrivals;
  bool fail_next = false;

 private:
  rt::Runtime& rt_;
  std::string name_;
  std::vector<hal::DeviceId> members_;
  rt::Duration latency_;
  std::vector<hal::CollectiveDone> pending_;
};

}  // namespace nvl::fakegpu::testing
