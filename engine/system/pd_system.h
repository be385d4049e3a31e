#pragma once
// The serving system of one deployment: the router, the decoding instances (each a lockstep group of
// DP ranks with EP: decode-only, mixed with short prefills, or aggregated) and the prefill instances
// (each a TP/EP/PP prefill worker) whose KV moves to the chosen DP rank of any decoding instance layer
// group by layer group while the prefill continues. The router numbers the DP ranks of every decoding
// instance in one list, instance after instance, and picks the rank (so the instance) and the prefill
// instance of each request. Every message between the frontend,
// the router, the ranks and the prefill worker is a control-plane protobuf (ControlPlane): over the
// host network when there is one, directly otherwise. A request never disappears: when its KV cannot
// be moved (on either path) it is prefilled on its DP rank instead; when a control message is lost it
// fails with the reason.
#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "emu/rt/runtime.h"
#include "engine/hal/network.h"
#include "engine/hal/rdma.h"
#include "engine/kv/kv_transfer.h"
#include "engine/router/fetch_planner.h"
#include "engine/router/load_view.h"
#include "engine/router/router.h"
#include "engine/system/control_plane.h"
#include "engine/system/health_monitor.h"
#include "engine/system/request_timing.h"
#include "engine/worker/normal_worker_group.h"
#include "engine/worker/prefill_worker.h"

namespace nvl::engine {

struct PdSystemConfig {
  RouterConfig router;
  KvTransferConfig transfer;
  // Fetch a prefix another rank holds (GPU peer-to-peer or a peer's Grace memory) when that is cheaper
  // than recomputing it (needs RDMA).
  bool fetch_remote_prefix = true;
  FetchCosts fetch;
  // Share of the GPU's dense FP8 peak a prefill sustains, for the recompute side of that choice
  // (estimate: DeepGEMM reaches 78% on large GEMMs; attention and communication take some of the rest).
  double prefill_efficiency = 0.6;
  // Every rank publishes its load this often while there is work (the router routes from the last
  // reports, plus what it has sent since): about one decode step, as Dynamo's workers publish per step.
  rt::Duration load_report_interval = rt::ms(10);
  // The normal GPUs' KV is one pool over NVLink: a prefix on any rank's GPU is read, not recomputed,
  // so routing need not follow the cache (router policy "pooled").
  bool kv_pool = false;
  // Noticing dead ranks, and how long a GPU reset and a worker restart take (engine/system/pd_recovery.cpp).
  HealthConfig health;
};

// Tokens as they are delivered: `count` more for request `id` (first: the first token is among them).
using TokenStream = std::function<void(RequestId id, std::int64_t count, bool first, bool finished)>;
// A request is over (finished, or failed with a reason in its timing).
using RequestDone = std::function<void(const RequestTiming& timing)>;
// The answer to a health check: whether the rank says it is healthy, and what it or the network said.
using HealthDone = std::function<void(bool healthy, const std::string& detail)>;

// Where a decoding instance's prompts are prefilled.
enum class LocalPrefill : std::uint8_t {
  below_threshold,  // mixed: prompts whose uncached part is under the router's threshold, here
  never,            // decode: every prompt on a prefill instance (here only when none is up)
  always,           // aggregated: every prompt here (no P/D)
};

// One instance of a pool that decodes: its GPUs (DP rank r on gpus [r*tp, (r+1)*tp)) and its group.
struct DecodeInstance {
  std::string name;  // "<pool>/<index>", in logs
  std::vector<hal::Device*> gpus;
  NormalGroupConfig group;
  LocalPrefill local_prefill = LocalPrefill::below_threshold;
};

// One instance of a prefill pool.
struct PrefillInstance {
  std::string name;
  std::vector<hal::Device*> gpus;
  PrefillWorkerConfig worker;
};

struct PdDeployment {
  std::vector<DecodeInstance> decode;    // at least one; their DP ranks are the router's ranks, in order
  std::vector<PrefillInstance> prefill;  // none: every prompt prefilled on its DP rank
  PdSystemConfig system;
};

class PdSystem {
 public:
  // Builds the workers on their GPUs (clear errors when the model does not fit) and starts them.
  // `rdma` carries the KV from the prefill worker (needed when there is one). With `network`, the
  // control messages cross the host network as protobufs, with its latency (and its faults).
  PdSystem(rt::Runtime& rt, const ModelProfile& model, hal::Collectives& collectives, hal::Rdma* rdma,
           PdDeployment deployment, TokenStream on_tokens, RequestDone on_done, hal::Network* network = nullptr);

  void submit(RequestState request);
  // Stops a request wherever it is (at the router, queued or running on a rank, prefilling, its KV
  // moving) and frees its KV; it ends with the failure "cancelled". False when it is not in flight.
  bool cancel(RequestId id);
  // Asks a rank whether it is healthy; a check lost on the way counts as unhealthy.
  void check_health(std::int32_t rank, HealthDone done);

  const Router& router() const { return router_; }
  const LoadView& load_view() const { return view_; }
  const ControlPlane& control() const { return control_; }
  // The DP ranks over every decoding instance (the router's ranks), and each one's instance.
  std::int32_t ranks() const { return static_cast<std::int32_t>(slots_.size()); }
  NormalWorkerGroup& group_of(std::int32_t rank) { return *groups_.at(slot(rank).group); }
  const NormalWorkerGroup& group_of(std::int32_t rank) const { return *groups_.at(slot(rank).group); }
  std::int32_t local_rank(std::int32_t rank) const { return slot(rank).local; }
  KvCacheManager& kv(std::int32_t rank) { return group_of(rank).kv(local_rank(rank)); }
  const RankScheduler& scheduler(std::int32_t rank) const { return group_of(rank).scheduler(local_rank(rank)); }
  bool rank_live(std::int32_t rank) const { return group_of(rank).live(local_rank(rank)); }
  // The DP rank whose GPUs hold `gpu` (nullopt: not a decoding GPU).
  std::optional<std::int32_t> rank_of_gpu(hal::DeviceId gpu) const;
  std::size_t decode_instances() const { return groups_.size(); }
  NormalWorkerGroup& decode_instance(std::size_t i) { return *groups_.at(i); }
  std::size_t prefill_instances() const { return prefills_.size(); }
  PrefillWorker& prefill(std::size_t instance) { return *prefills_.at(instance).worker; }
  // The prefill instance whose GPUs hold `gpu` (nullopt: not a prefill GPU).
  std::optional<std::size_t> prefill_of_gpu(hal::DeviceId gpu) const;
  std::uint64_t transfer_bytes() const;
  // Requests routed on each path as the router finally sent them (the Router counts its first guess,
  // before a prefix fetch or a pool's role changes it).
  std::uint64_t routed(PrefillPath path) const { return routed_[static_cast<std::size_t>(path)]; }
  // Requests the router sent to each decoding instance, and prompts each prefill instance prefilled.
  std::uint64_t routed_to_instance(std::size_t instance) const { return routed_to_instance_.at(instance); }
  std::uint64_t prefilled_by(std::size_t instance) const { return prefills_.at(instance).prefilled; }
  std::size_t in_flight() const { return timings_.size(); }
  std::size_t pending() const { return pending_.size(); }

  // Faults (engine/system/pd_recovery.cpp). A rank declared dead (health check or operation error,
  // after the detection delay) leaves the group; its requests continue on healthy ranks from the tokens
  // already delivered (their KV recomputed, or loaded from Grace where the prefix is cached there).
  // Xid 48 and crashed workers come back after the reset / restart time.
  // The worker process of a DP rank dies: its state is gone, its requests re-run elsewhere.
  void crash_worker(std::int32_t rank);
  // A prefill instance is declared dead the same way (its step fails, or a health check finds one of
  // its GPUs unhealthy or its process gone). While it is out the router sends long prompts to the other
  // prefill instances (to local prefill when none is up), and the requests it held (queued, running,
  // their KV not all moved) are prefilled on their DP rank instead. Back after the GPU reset (Xid 48) or
  // the restart; a lost GPU (Xid 79) keeps it out.
  void crash_prefill_worker(std::size_t instance = 0);
  bool prefill_worker_down(std::size_t instance = 0) const { return prefills_.at(instance).down.has_value(); }
  const std::vector<hal::Device*>& prefill_gpus_of(std::size_t instance) const { return prefills_.at(instance).gpus; }
  // The router restarts: its prefix index is gone and is rebuilt from the ranks' republished KV events.
  void restart_router();
  // The rank's Grace memory lost its KV blocks: they leave the index; later hits are recomputed.
  std::int64_t grace_memory_error(std::int32_t rank);
  const HealthMonitor& health() const { return *health_; }

 private:
  struct Moving {
    std::int32_t rank = 0;
    std::size_t prefill = 0;     // the prefill instance computing it
    double share = 1.0;          // of the prompt's KV that the decode rank does not already hold
    std::uint64_t sent = 0;      // bytes of the prompt's KV reported ready so far (one copy, all layers done)
    std::int64_t layers_sent = 0;
    std::size_t pushes = 0;      // pushes in flight
    bool all_layers = false;     // the last layer group was reported
    std::string error;           // a push failed for good: why
  };
  // Endpoints.
  void on_router(const proto::ControlMessage& m);
  void on_rank(std::int32_t rank, const proto::ControlMessage& m);
  void on_prefill(std::size_t instance, const proto::ControlMessage& m);
  void on_frontend(const proto::ControlMessage& m);
  void on_lost(const proto::ControlMessage& m, const std::string& why);

  // Router.
  void route(RequestState request);
  void router_cancel(const proto::Cancel& c);
  // Ranks.
  void rank_schedule(std::int32_t rank, const proto::ScheduleOnRank& s);
  void rank_receive(std::int32_t rank, std::size_t prefill_instance, RequestState request);
  void rank_cancel(std::int32_t rank, const proto::Cancel& c);
  void rank_transfer_done(std::int32_t rank, const proto::KvTransferDone& d);
  // The prefill instance for a long prompt: the live one with the fewest prompt tokens sent to it and
  // not yet prefilled (nullopt: none is up).
  std::optional<std::size_t> choose_prefill() const;
  // The request no longer counts against the prefill instance the router sent it to.
  void forget_prefill(RequestId id);
  // The prompt's KV will not come from the prefill worker (`cause`, logged with `error`): the rank
  // prefills it itself, in the KV room it took for the transfer.
  void reprefill(std::int32_t rank, RequestId id, std::string_view cause, const std::string& error);
  void on_normal_tokens(std::int32_t rank, const StepOutcome& o);
  void publish_loads();
  // A rank's load may change: a report follows within the interval (none while nothing changes, so
  // that an idle or stuck system does not tick forever).
  void arm_load_reports();
  // Prefill worker.
  void prefill_schedule(std::size_t instance, const proto::ScheduleOnRank& s);
  void on_kv_ready(RequestId id, std::int64_t layers_done, std::int64_t total, std::uint64_t bytes_so_far);
  void maybe_received(RequestId id);
  // Frontend.
  void on_chunk(const proto::TokenChunk& c);
  // Every health check of `rank` still waiting gets this answer.
  void answer_health(std::int32_t rank, bool healthy, const std::string& detail);
  void finish(RequestId id, const std::string& failure);

  // Sends the frontend the end of a request that failed (`why`) or was cancelled.
  void end_request(hal::Address from, RequestId id, const std::string& why);
  // A lost message leaves the request nowhere: stop it everywhere and fail it with the reason.
  void abandon(RequestId id, const std::string& why);
  bool live(RequestId id) const { return timings_.contains(id) && !cancelled_.contains(id); }
  void retry_pending();
  hal::MemoryRegion region_of(hal::DeviceId device, bool grace);
  hal::MemoryRegion prefill_region(std::size_t instance);
  hal::Address rank_address(std::int32_t rank) const { return rank_addresses_.at(static_cast<std::size_t>(rank)); }
  // A global DP rank's instance and its rank inside it.
  struct RankSlot {
    std::size_t group = 0;
    std::int32_t local = 0;
    LocalPrefill local_prefill = LocalPrefill::below_threshold;
  };
  const RankSlot& slot(std::int32_t rank) const { return slots_.at(static_cast<std::size_t>(rank)); }
  hal::DeviceId device_of(std::int32_t rank) const { return group_of(rank).device_of(local_rank(rank)); }
  // Every DP rank's requests, tokens and failures reach the system under its global rank.
  void add_decode_instance(rt::Runtime& rt, const ModelProfile& model, hal::Collectives& collectives, DecodeInstance d);
  void add_prefill_instance(rt::Runtime& rt, const ModelProfile& model, hal::Collectives& collectives,
                            PrefillInstance p);
  std::int64_t block_tokens() const { return router_.config().block_tokens; }

  rt::Runtime& rt_;
  PdSystemConfig cfg_;
  TokenStream on_tokens_;
  RequestDone on_done_;
  Router router_;
  LoadView view_;
  ControlPlane control_;
  std::vector<std::unique_ptr<NormalWorkerGroup>> groups_;
  std::vector<RankSlot> slots_;
  std::vector<std::int32_t> first_rank_;  // per decoding instance: its first global rank
  // A prefill instance as the system sees it: its worker, address, KV transfer and state.
  struct PrefillSlot {
    std::unique_ptr<PrefillWorker> worker;
    std::vector<hal::Device*> gpus;
    hal::Address address;
    std::vector<KvTransfer> transfers;   // per pipeline stage: its layers' KV leaves from its GPUs
    hal::MemoryRegion region;            // on its first GPU: where a cached prefix is sent
    std::optional<std::string> down;     // declared dead: the fault
    std::int64_t outstanding_tokens = 0;  // prompt tokens the router sent it, not yet prefilled
    std::uint64_t prefilled = 0;          // prompts it finished
  };
  std::vector<PrefillSlot> prefills_;
  std::array<std::uint64_t, 2> routed_{};
  std::vector<std::uint64_t> routed_to_instance_;
  std::map<RequestId, std::pair<std::size_t, std::int64_t>> prefill_sent_;  // request -> (instance, tokens)
  hal::Rdma* rdma_ = nullptr;
  std::map<hal::DeviceId, hal::Device*> devices_;  // every GPU of the deployment
  std::uint64_t kv_bytes_per_token_ = 0;  // one copy, all layers, at the normal group's KV dtype
  std::map<std::pair<hal::DeviceId, bool>, hal::MemoryRegion> regions_;  // (GPU, its Grace?) -> region
  std::map<RequestId, RequestTiming> timings_;  // the frontend's record of each request in flight
  std::set<RequestId> cancelled_;               // cancelled, its end not yet at the frontend
  std::map<RequestId, Moving> moving_;
  std::map<RequestId, std::int64_t> produced_;  // tokens each request's rank has streamed so far
  std::deque<RequestState> pending_;  // long prompts waiting for KV room on their rank
  bool retrying_ = false;
  hal::Address frontend_address_;
  hal::Address router_address_;
  std::vector<hal::Address> rank_addresses_;
  std::vector<std::optional<proto::LoadReport>> last_reported_;  // per rank: the last load it published
  bool reporting_ = false;                        // the load report timer is armed
  std::map<std::int32_t, std::vector<HealthDone>> health_waiting_;  // per rank
  // Faults.
  void start_recovery();
  void declare_dead(std::int32_t rank, const std::string& why);
  void declare_prefill_dead(std::size_t instance, const std::string& why);
  // What is wrong with a prefill instance now (nullopt: healthy, or out already).
  std::optional<std::string> prefill_probe(std::size_t instance) const;
  bool any_prefill_up() const;
  std::int32_t live_ranks() const;  // over every decoding instance
  void migrate(std::int32_t rank, std::vector<RequestState> requests, const std::string& why);
  // A request that reached a rank declared dead goes back to the router (true). One moved off a dead
  // rank resumes here from its delivered tokens: on the local path (its prefix fetched first where the
  // router found one, e.g. in the dead rank's Grace memory) it goes on as usual (false); sent for the
  // prefill worker it is prefilled here instead (true).
  bool redirect(std::int32_t rank, RequestState& request, bool prefill_path);
  std::optional<HealthMonitor> health_;
  std::map<RequestId, std::int64_t> resume_from_;  // moved off a dead rank: output tokens delivered
  std::map<std::int32_t, std::string> dead_why_;    // declared ranks not back yet: the fault
};

}  // namespace nvl::engine
