#pragma once
// A communicator over a group of GPUs. Members arrive one by one with their part of each call (in call
// order per member); a call starts when every member has arrived. A call on healthy links without flows
// on them is priced on the fast path (offline, cached by signature) and holds its links, sharing them with
// other held calls there (Fabric::hold); anything else (faults, degraded links, flows on the links) runs
// as flows in the live flow model. Each member's callback runs at its completion.
// A member's GPU failing (lost, or an ECC error that needs a reset) aborts the communicator as NCCL's
// watchdog and ncclCommAbort do: every call queued or running fails for every member, and so does
// every later call; the survivors (or the reset GPU) go on in a new communicator.
#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/hal/collectives.h"
#include "fabric/arrival_queue.h"
#include "fabric/collective_pricer.h"
#include "fabric/crossbar_all_to_all.h"
#include "fabric/fabric.h"

namespace nvl::fabric {

struct CommGroupStats {
  std::uint64_t calls = 0;
  std::uint64_t fast = 0;         // priced on the fast path
  std::uint64_t priced = 0;       // fast-path cache misses (a new signature)
  std::uint64_t exact = 0;        // run as live flows
  std::uint64_t repeats = 0;      // fast-forwarded runs of repeated calls
  std::uint64_t slowed = 0;       // fast-path calls and repeats slowed by other traffic on their links
  std::uint64_t failed = 0;
};

class FabricCommGroup final : public hal::CommGroup {
 public:
  FabricCommGroup(Fabric& fabric, CollectivePricer& pricer, std::string name, std::vector<hal::DeviceId> members,
                  bool fast_path);

  const std::string& name() const override { return name_; }
  const std::vector<hal::DeviceId>& members() const override { return members_; }
  // rank out of range is std::out_of_range; a call whose members disagree fails for every member.
  void arrive(int rank, hal::SharedCollectiveOp op, hal::CollectiveDone done) override;
  // The repeated calls are held on their links as priced traffic (Fabric::hold): `times` calls' bytes
  // over the span from the last member's arrival to the latest member's end, moving from the latest
  // member's lead on.
  void repeat(int rank, hal::SharedCollectiveOp op, std::size_t times, rt::Duration lead, rt::Duration span,
              hal::CollectiveDone done) override;

  const CommGroupStats& stats() const { return stats_; }
  // The member on `device` failed with `cause`: the group is aborted. No-op for a device outside it.
  void member_failed(hal::DeviceId device, hal::Xid cause);
  bool member_down(int rank) const { return down_.at(static_cast<std::size_t>(rank)) != hal::Xid::none; }

 private:
  using Ops = std::vector<hal::SharedCollectiveOp>;  // a call's parts by member rank
  struct Call {
    Ops ops;  // member r's part, once it has arrived
    std::vector<hal::CollectiveDone> done;
  };
  struct Repeat {
    Ops ops;
    std::vector<hal::CollectiveDone> done;
    std::vector<rt::Time> end;  // per member: when its repeated calls end on idle links
    rt::Time moving;            // when the last member's calls start to move data
    std::size_t times = 0;
  };
  struct Cached {
    std::shared_ptr<const std::vector<int>> channels;  // every channel the plan uses, once, ascending
    std::shared_ptr<const std::vector<double>> channel_bytes;  // wire bytes on each of `channels`
    std::shared_ptr<const std::vector<int>> channel_flows;     // the plan's flows crossing each
    std::shared_ptr<const std::vector<double>> channel_seconds;  // when each carries its last byte
    rt::Duration wire_from;  // the launch: the data moves from then on (channel_seconds count from it)
    // The members by completion time (from the start), earliest first; members finishing together share
    // one event (a symmetric collective has one).
    std::vector<rt::Duration> finish;  // the distinct times
    std::vector<int> finish_end;       // the members done at finish[g]: by_finish[finish_end[g-1] .. finish_end[g])
    std::vector<int> by_finish;
    // The parts of the last call found to have this signature: a call of these very objects has it too
    // (they are immutable, and kept alive here so their addresses cannot be reused).
    Ops ops;
  };
  // Traffic held on the fast path (a priced call, or repeated calls), from its start until its last
  // member is done. Kept in fast_runs_ and reused (its buffers with it); its timers and hold name it by
  // its slot there. Members are done at their finish times, or, once other traffic slowed it, all at
  // once when the held traffic has drained.
  struct FastRun {
    std::vector<hal::CollectiveDone> done;
    std::vector<rt::TimerHandle> timers;
    std::vector<int> finish_end, by_finish;  // the cache entry's: a later miss may drop the entry
    std::string op;                          // the op's name, for the error if a link is lost under it
    std::uint64_t hold = 0;
    std::size_t groups = 0;   // finish times
    std::size_t pending = 0;  // finish times still to come (the last `pending` groups)
    std::uint64_t id = 0;
  };

  void start(Call& call);
  void run_call(const Ops& ops, std::vector<hal::CollectiveDone>& done);
  std::optional<std::string> disagreement(const Ops& ops) const;
  static std::size_t signature_hash(const Ops& ops);
  static bool same_signature(const Ops& a, const Ops& b);
  // The plan priced offline; with `fast_only` nothing unless fast_ok (no channel of it degraded or carrying
  // uncapped flows).
  std::optional<Cached> price_plan(const CollectivePlan& plan, bool fast_only);
  // The entry for a priced call: its held traffic, and its members grouped by completion time.
  static Cached cached(std::vector<int> channels, std::vector<double> channel_bytes, std::vector<int> channel_flows,
                       std::vector<double> channel_seconds, rt::Duration wire_from,
                       const std::vector<rt::Duration>& done);
  // A call of `c` as held traffic; or `times` calls of it repeated, each moving its data from `lead`
  // into its period.
  static Fabric::HeldTraffic held(const Cached& c);
  static Fabric::HeldTraffic held_repeated(const Cached& c, std::size_t times, rt::Duration lead);
  void start_repeat(Repeat& r);
  bool fast_ok(const std::vector<int>& channels) const;
  // Holds `traffic` and finishes the members at now + finish[g] (groups as in Cached). Takes the
  // callbacks (leaving `done` the run's emptied buffer).
  void run_held(const Fabric::HeldTraffic& traffic, const std::vector<rt::Duration>& finish,
                const std::vector<int>& finish_end, const std::vector<int>& by_finish,
                std::vector<hal::CollectiveDone>& done, const std::string& op);
  void fast_slowed(std::uint32_t slot);
  void fast_members_done(std::uint32_t slot, std::uint32_t group);
  void fast_link_lost(std::uint32_t slot, int channel);
  void fast_aborted(std::uint32_t slot, const hal::HalError& e);
  void run_exact(CollectivePlan plan, std::vector<hal::CollectiveDone> done, const std::string& op_name);
  std::string op_name(const std::string& op) const { return "collective " + name_ + "/" + op; }
  // Failing members. A member's part fails from the runtime loop, as for a call that never starts.
  void fail_later(hal::CollectiveDone done, const hal::HalError& e);
  // The members of a call still waiting (whose callback has not run) fail, in member order: at once (a
  // link lost under the call) or from the runtime loop.
  void fail_waiting(std::vector<hal::CollectiveDone>& done, const hal::HalError& e, bool at_once);
  // A call that cannot run fails for every member, recorded.
  void fail_call(std::vector<hal::CollectiveDone>& done, const hal::HalError& e);
  // A call in flight registers how to fail it; the id is forgotten when it completes.
  std::uint64_t track(std::function<void(const hal::HalError&)> abort);
  void untrack(std::uint64_t id);

  Fabric& fabric_;
  CollectivePricer& pricer_;
  std::string name_;
  std::vector<hal::DeviceId> members_;
  bool fast_path_;
  ArrivalQueue<Call> calls_;
  std::vector<Call> spare_calls_;             // calls started, kept for their buffers
  ArrivalQueue<Repeat> repeats_;
  std::vector<Repeat> spare_repeats_;         // repeats started, kept for their buffers
  std::deque<FastRun> fast_runs_;             // a deque: a run's callbacks may start another run
  std::vector<std::uint32_t> free_fast_runs_;  // slots of fast_runs_ not in flight
  CollectivePlan plan_;                       // the last plan made, kept for its buffers
  // An all-to-all on one switch layer is priced without a plan; its answer's buffers are kept.
  CrossbarAllToAll crossbar_;
  CrossbarAllToAll::Priced crossbar_priced_;
  // Hashed: an EP all-to-all's signature holds the whole byte matrix, which ordered lookups compare
  // many times over. A lookup reads the call's ops in place (SignatureView) rather than copying the
  // 40 KB key out of them on every call; the key is built only when a new signature is stored, and
  // keeps the hash its lookup computed (a stored key is never hashed again).
  struct SignatureView {
    const Ops& ops;
    std::size_t hash;
  };
  struct SignatureKey {
    explicit SignatureKey(std::size_t h) : hash(h) {}  // a scratch entry's: no words, equal to no signature
    SignatureKey(const Ops& ops, std::size_t h);
    std::size_t hash;
    std::vector<std::uint64_t> words;
  };
  struct SignatureHash {
    using is_transparent = void;
    std::size_t operator()(const SignatureKey& key) const { return key.hash; }
    std::size_t operator()(const SignatureView& view) const { return view.hash; }
  };
  struct SignatureEqual {
    using is_transparent = void;
    bool operator()(const SignatureKey& a, const SignatureKey& b) const { return a.hash == b.hash && a.words == b.words; }
    bool operator()(const SignatureView& view, const SignatureKey& key) const;
    bool operator()(const SignatureKey& key, const SignatureView& view) const { return (*this)(view, key); }
  };
  static constexpr std::size_t kMaxCachedSignatures = 256;
  using Cache = std::unordered_map<SignatureKey, Cached, SignatureHash, SignatureEqual>;
  Cache cache_;
  // The hashes of the last signatures priced and not stored, and entries for them (found by their hash
  // and signature, or as recent ones by their objects): three, so that one is always free beside the two
  // recent ones.
  std::array<std::size_t, 8> missed_{};
  std::size_t next_missed_ = 0;
  std::array<std::optional<Cache::value_type>, 3> scratch_;
  // The entries of the last two signatures used, most recent first. A decode graph replays its layer
  // body, so a call mostly repeats one of them, mostly with the very same op objects.
  std::array<Cache::value_type*, 2> recent_{};
  // The recent entry last seen with these very objects (their agreement was checked then), or null.
  Cache::value_type* same_objects_entry(const Ops& ops) const;
  // The entry of the call's signature, or null: the recent ones compared in place (no hash needed),
  // then the cache. The entry found keeps the call's objects. `hash` gets the signature's hash if it
  // was needed.
  Cache::value_type* find_entry(const Ops& ops, std::optional<std::size_t>& hash);
  void used(Cache::value_type& entry);
  // The entry for a call's parts: found, or planned and priced (null when the call cannot run, having
  // failed it, or when `fast_only` and not fast_ok, leaving plan_ its plan).
  Cache::value_type* entry_for(const Ops& ops, std::vector<hal::CollectiveDone>& done, bool fast_only);
  CommGroupStats stats_;
  std::vector<hal::Xid> down_;  // per member: why it failed, Xid::none while it has not
  int first_down_ = -1;         // the first member that is down, or -1 (checked on every arrival)
  // By id (ascending): few calls are in flight at once.
  std::vector<std::pair<std::uint64_t, std::function<void(const hal::HalError&)>>> running_;
  std::uint64_t next_run_ = 1;
};

}  // namespace nvl::fabric
