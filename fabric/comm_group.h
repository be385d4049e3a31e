#pragma once
// A communicator over a group of GPUs. Members arrive one by one with their part of each call (in call
// order per member); a call starts when every member has arrived. A call on idle, healthy links is priced
// on the fast path (offline, cached by signature); anything else (faults, degraded links, traffic on the
// links) runs as flows in the live flow model. Each member's callback runs at its completion.
// A member's GPU failing (lost, or an ECC error that needs a reset) aborts the communicator as NCCL's
// watchdog and ncclCommAbort do: every call queued or running fails for every member, and so does
// every later call; the survivors (or the reset GPU) go on in a new communicator.
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
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
  // The member on `device` failed with `cause`: the group is aborted. No-op for a device outside it.
  void member_failed(hal::DeviceId device, hal::Xid cause);
  bool member_down(int rank) const { return down_.at(static_cast<std::size_t>(rank)) != hal::Xid::none; }

 private:
  struct Call {
    std::vector<std::optional<hal::CollectiveOp>> ops;
    std::vector<hal::CollectiveDone> done;
    int arrived = 0;
  };
  struct Cached {
    std::vector<rt::Duration> done;  // per member, from the start
    std::vector<int> channels;       // every channel the plan uses, once
    std::vector<double> channel_bytes;  // wire bytes on each of `channels` (for link utilisation)
  };

  void start(Call& call);
  void run_call(const std::vector<hal::CollectiveOp>& ops, std::vector<hal::CollectiveDone>&& done);
  std::optional<std::string> disagreement(const std::vector<hal::CollectiveOp>& ops) const;
  std::vector<std::uint64_t> signature(const std::vector<hal::CollectiveOp>& ops) const;
  static std::size_t signature_hash(const std::vector<hal::CollectiveOp>& ops);  // as SignatureHash hashes signature(ops)
  bool fast_ok(const std::vector<int>& channels) const;
  void finish_fast(const Cached& c, std::vector<hal::CollectiveDone> done, const std::string& op_name);
  void run_exact(const CollectivePlan& plan, std::vector<hal::CollectiveDone> done, const std::string& op_name);
  void fail_all(std::vector<hal::CollectiveDone>& done, const hal::HalError& e);
  // A call in flight registers how to fail it; the id is forgotten when it completes.
  std::uint64_t track(std::function<void(const hal::HalError&)> abort);
  void untrack(std::uint64_t id) { running_.erase(id); }
  // The first member that is down, or -1.
  int first_down() const;

  Fabric& fabric_;
  CollectivePricer& pricer_;
  std::string name_;
  std::vector<hal::DeviceId> members_;
  bool fast_path_;
  std::deque<Call> calls_;
  // The buffers of the last call started, emptied: a call over a whole rack holds kilobytes of them,
  // which allocating afresh for every call made the allocator sweep its free lists each time.
  std::vector<std::optional<hal::CollectiveOp>> spare_slots_;
  std::vector<hal::CollectiveOp> spare_ops_;
  std::uint64_t first_call_ = 0;              // call number of calls_.front()
  std::vector<std::uint64_t> next_call_;      // per member
  // Hashed: an EP all-to-all's signature holds the whole byte matrix, which ordered lookups compare
  // many times over. A lookup reads the call's ops in place (SignatureView) rather than copying the
  // 40 KB key out of them on every call; the key is built only when a new signature is stored.
  struct SignatureView {
    const std::vector<hal::CollectiveOp>& ops;
    std::size_t hash;
  };
  struct SignatureHash {
    using is_transparent = void;
    std::size_t operator()(const std::vector<std::uint64_t>& key) const;
    std::size_t operator()(const SignatureView& view) const { return view.hash; }
  };
  struct SignatureEqual {
    using is_transparent = void;
    bool operator()(const std::vector<std::uint64_t>& a, const std::vector<std::uint64_t>& b) const { return a == b; }
    bool operator()(const SignatureView& view, const std::vector<std::uint64_t>& key) const;
    bool operator()(const std::vector<std::uint64_t>& key, const SignatureView& view) const { return (*this)(view, key); }
  };
  static constexpr std::size_t kMaxCachedSignatures = 256;
  std::unordered_map<std::vector<std::uint64_t>, Cached, SignatureHash, SignatureEqual> cache_;
  CommGroupStats stats_;
  std::vector<hal::Xid> down_;  // per member: why it failed, Xid::none while it has not
  std::map<std::uint64_t, std::function<void(const hal::HalError&)>> running_;
  std::uint64_t next_run_ = 1;
};

}  // namespace nvl::fabric
