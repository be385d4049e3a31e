#pragma once
// A communicator over a group of GPUs. Members arrive one by one with their part of each call (in call
// order per member); a call starts when every member has arrived. A call on idle, healthy links is priced
// on the fast path (offline, cached by signature); anything else (faults, degraded links, traffic on the
// links) runs as flows in the live flow model. Each member's callback runs at its completion.
#include <cstdint>
#include <deque>
#include <optional>
#include <unordered_map>
#include <vector>

#include "engine/hal/collectives.h"
#include "fabric/collective_pricer.h"
#include "fabric/fabric.h"

namespace nvl::fabric {

struct CommGroupStats {
  std::uint64_t calls = 0;
  std::uint64_t fast = 0;         // priced on the fast path
  std::uint64_t priced = 0;       // fast-path cache misses (a new signature)
  std::uint64_t exact = 0;        // run as live flows
  std::uint64_t failed = 0;
};

class FabricCommGroup final : public hal::CommGroup {
 public:
  FabricCommGroup(Fabric& fabric, CollectivePricer& pricer, std::string name, std::vector<hal::DeviceId> members,
                  bool fast_path);

  const std::string& name() const override { return name_; }
  const std::vector<hal::DeviceId>& members() const override { return members_; }
  // rank out of range is std::out_of_range; a call whose members disagree fails for every member.
  void arrive(int rank, const hal::CollectiveOp& op, hal::CollectiveDone done) override;

  const CommGroupStats& stats() const { return stats_; }

 private:
  struct Call {
    std::vector<std::optional<hal::CollectiveOp>> ops;
    std::vector<hal::CollectiveDone> done;
    int arrived = 0;
  };
  struct Cached {
    std::vector<rt::Duration> done;  // per member, from the start
    std::vector<int> channels;       // every channel the plan uses, once
  };

  void start(Call& call);
  std::optional<std::string> disagreement(const std::vector<hal::CollectiveOp>& ops) const;
  std::vector<std::uint64_t> signature(const std::vector<hal::CollectiveOp>& ops) const;
  bool fast_ok(const std::vector<int>& channels) const;
  void finish_fast(const Cached& c, std::vector<hal::CollectiveDone> done, const std::string& op_name);
  void run_exact(const CollectivePlan& plan, std::vector<hal::CollectiveDone> done, const std::string& op_name);
  void fail_all(std::vector<hal::CollectiveDone>& done, const hal::HalError& e);

  Fabric& fabric_;
  CollectivePricer& pricer_;
  std::string name_;
  std::vector<hal::DeviceId> members_;
  bool fast_path_;
  std::deque<Call> calls_;
  std::uint64_t first_call_ = 0;              // call number of calls_.front()
  std::vector<std::uint64_t> next_call_;      // per member
  // Hashed: an EP all-to-all's signature holds the whole byte matrix, which ordered lookups compare
  // many times over.
  struct SignatureHash {
    std::size_t operator()(const std::vector<std::uint64_t>& key) const;
  };
  std::unordered_map<std::vector<std::uint64_t>, Cached, SignatureHash> cache_;
  CommGroupStats stats_;
};

}  // namespace nvl::fabric
