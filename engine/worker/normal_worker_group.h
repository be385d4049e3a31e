#pragma once
// The normal worker group: DP attention with the MoE experts spread over all the GPUs (EP), or split
// over all of them (MoE TP, NormalGroupConfig::expert_parallel), running decode and short prefills
// together. A DP rank is one GPU, or attention_tp GPUs that split its attention heads (joined by
// all-reduces every layer); under EP every GPU is an EP member holding whole experts. The ranks step
// in lockstep, because every MoE layer's all-to-all (or MoE TP all-gather) joins them; a rank with
// nothing to do runs an empty batch and still takes part, as SGLang does. Each DP rank has its own
// scheduler and KV cache (GPU HBM and a Grace tier). With SM partitions (green contexts, SGLang's
// PD-multiplexing) decode and prefill step apart: two lockstep loops over the same ranks, KV caches
// and schedulers, each on its own streams (SM share) and EP communicator.
#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "emu/rt/condition.h"
#include "emu/rt/runtime.h"
#include "engine/eplb/expert_placement.h"
#include "engine/exec/layer_kernels.h"
#include "engine/exec/moe_traffic.h"
#include "engine/exec/step_graph_builder.h"
#include "engine/hal/buffer.h"
#include "engine/hal/collectives.h"
#include "engine/hal/device.h"
#include "engine/kv/kv_cache_manager.h"
#include "engine/model/model_profile.h"
#include "engine/model/parallel_layout.h"
#include "engine/model/weight_footprint.h"
#include "engine/router/routing_policy.h"
#include "engine/sched/rank_scheduler.h"

namespace nvl::engine {

struct NormalGroupConfig {
  // GPUs per DP rank, splitting its attention heads (and dense FFN, shared expert, vocabulary): the
  // group's devices are dp x attention_tp, DP rank r on devices [r * tp, (r + 1) * tp).
  std::int64_t attention_tp = 1;
  // The system's number of this group's DP rank 0 (the router numbers the ranks of every instance in one
  // list): the rank the group's KV events and event-log records name.
  std::int32_t first_rank = 0;
  WeightDtypes weights;
  hal::DType kv_dtype = hal::DType::fp8;
  std::int64_t block_tokens = 64;
  // HBM kept for activations, graphs and comm buffers; unset: estimated from the model and scheduler.
  std::optional<std::uint64_t> activation_reserve_bytes;
  GraceTierPolicy grace_policy = GraceTierPolicy::off;
  std::uint64_t grace_bytes_per_rank = 0;
  SchedulerConfig scheduler;
  std::string scheduling_policy = "fcfs";
  std::int64_t redundant_experts = 0;
  // EPLB: every eplb_interval_steps steps (0: off) the experts are placed anew from the routed counts
  // the GPUs reported since the last rebalance (hal::StepOutcomes); the weights of every slot that changes move over NVLink (an
  // all-to-all on the EP group) before the next step.
  std::int64_t eplb_interval_steps = 0;
  // A rebalance happens only when it cuts the observed imbalance by this fraction: a placement that is
  // still good is not reshuffled for noise in the counts.
  double eplb_min_improvement = 0.02;
  // After a failed step with every live GPU healthy (a link or collective error), the step is retried on
  // a new communicator after this pause.
  rt::Duration failed_step_backoff = rt::ms(10);
  // Two-batch overlap, as SGLang's --enable-two-batch-overlap runs it: each rank's batch runs as two
  // micro-batches on two streams, one's all-to-all beside the other's compute. On prefill-heavy steps
  // (more prefill than decode tokens over the group), and on decode-only steps where every rank that
  // decodes has at least two requests (each micro-batch then reads the expert weights once more).
  bool two_batch_overlap = false;
  // Single-batch overlap, as SGLang's --enable-single-batch-overlap runs it on Blackwell: in every MoE
  // layer the combine's send kernels take `sbo_combine_sms` SMs (SGLANG_DEEPEP_LL_COMBINE_SEND_NUM_SMS:
  // 32 there, 3 on Hopper) and send each expert's outputs as the down GEMM, launched on the other SMs,
  // finishes them; the shared expert runs beside too. Needs expert parallelism; excludes two-batch
  // overlap.
  bool single_batch_overlap = false;
  int sbo_combine_sms = 32;
  // With EP at dp 1: false skips the dispatch and combine (StepGraphOptions::ep_all_to_all).
  bool moe_all_to_all = true;
  // SM partitions (green contexts): the SM share of each GPU's prefill stream, in (0, 1); decode gets
  // the rest. Decode steps then run every iteration beside the prefill chunks instead of waiting for
  // them in one batch. 0: one batch. Excludes two-batch overlap.
  double sm_partition_prefill = 0;
  // true: the routed experts spread whole over all the GPUs (EP). false: MoE TP, every expert split
  // over all the GPUs along its intermediate dimension: at dp 1 combined by the attention TP
  // all-reduce; at dp > 1 (TensorRT-LLM's attention DP with MoE TP) every GPU all-gathers all the DP
  // ranks' tokens before the experts and reduce-scatters the outputs back after them. No EPLB,
  // redundant experts or two-batch overlap then.
  bool expert_parallel = true;
};

// What a step delivered to a request on a rank, with the time it happened.
using TokenSink = std::function<void(std::int32_t rank, const StepOutcome& outcome)>;
// A request that can never run here (its prompt needs more KV than a rank has).
using RejectSink = std::function<void(std::int32_t rank, RequestId id, const std::string& reason)>;
// A step failed on a rank's GPU (an operation error: Xid, aborted collective): whoever watches health
// decides whether the rank is dead. Until remove_rank() or a retry, the group does not step.
using StepFailureSink = std::function<void(std::int32_t rank, const hal::HalError& error)>;
// The requests a removed rank held, as they stood.
using RequestsTaken = std::function<void(std::vector<RequestState> requests)>;

class NormalWorkerGroup {
 public:
  // Takes the weights and KV memory on every device at once: a model that does not fit is a HalError
  // naming the device, the bytes asked for and the bytes free. An attention_tp that does not divide
  // the GPUs or the model's attention heads is std::invalid_argument.
  NormalWorkerGroup(rt::Runtime& rt, const ModelProfile& model, std::vector<hal::Device*> devices,
                    hal::Collectives& collectives, NormalGroupConfig cfg, TokenSink on_tokens, RejectSink on_reject);

  // Starts the stepping fiber (a daemon: it waits for work when every rank is idle).
  void start();
  void submit(std::int32_t rank, RequestState request);
  bool cancel(std::int32_t rank, RequestId id);
  // P/D: the rank takes KV room for a request the prefill worker computes (nullopt: no room now),
  // then decodes it once its KV has arrived (its first token is delivered then), or prefills it
  // itself when the transfer failed for good.
  std::optional<AdmitPlan> receive(std::int32_t rank, RequestState request);
  void received(std::int32_t rank, RequestId id);
  void receive_failed(std::int32_t rank, RequestId id);

  bool fits(std::int32_t rank, const RequestState& r) const { return ranks_.at(static_cast<std::size_t>(rank)).sched->fits(r); }
  // What the router sees of a rank.
  RankLoad load(std::int32_t rank) const;
  // The rank's first GPU, and all of them: a rank is dead when any of them is, and under MLA each
  // holds the rank's whole KV (gpu_block_bytes).
  hal::DeviceId device_of(std::int32_t rank) const {
    return ranks_.at(static_cast<std::size_t>(rank)).gpus.front().device->id();
  }
  std::vector<hal::DeviceId> devices_of(std::int32_t rank) const;

  // DP ranks (each with its scheduler and KV cache), and GPUs per rank.
  std::int32_t ranks() const { return static_cast<std::int32_t>(ranks_.size()); }
  std::int64_t attention_tp() const { return tp_; }
  const RankScheduler& scheduler(std::int32_t rank) const { return *ranks_.at(static_cast<std::size_t>(rank)).sched; }
  KvCacheManager& kv(std::int32_t rank) { return *ranks_.at(static_cast<std::size_t>(rank)).kv; }
  const WeightFootprint& weights() const { return weights_; }
  // A rank's KV capacity, one copy of its requests' KV (what a block count and a transfer measure).
  std::uint64_t kv_bytes_per_rank() const { return kv_bytes_; }
  std::uint64_t activation_reserve_bytes() const { return reserve_bytes_; }
  // One block of a request's KV, and what each GPU of its rank holds of it (all of it for MLA, whose
  // latent every TP rank reads; 1/tp for GQA with KV heads split).
  std::uint64_t block_bytes() const { return block_bytes_; }
  std::uint64_t gpu_block_bytes() const { return gpu_block_bytes_; }
  std::uint64_t steps() const { return steps_; }

  // Faults (engine/worker/rank_recovery.cpp). A failed step is undone on every rank and reported to
  // the sink; the group then waits for remove_rank() (or, once every live GPU is healthy again, retries
  // on a new communicator after failed_step_backoff).
  void on_step_failure(StepFailureSink sink) { on_failure_ = std::move(sink); }
  bool live(std::int32_t rank) const { return ranks_.at(static_cast<std::size_t>(rank)).live; }
  std::int32_t live_ranks() const { return static_cast<std::int32_t>(live_.size()); }
  // Takes a dead rank out of the group: the survivors go on over a new EP communicator without any of
  // its GPUs, with the experts re-placed (ExpertPlacement::without_rank; the weights of experts only
  // they held reload from host memory). `taken` gets its requests as they stand, to continue
  // elsewhere; its GPU KV cache is dropped. A change asked for while a step runs applies when it ends.
  void remove_rank(std::int32_t rank, const std::string& cause, RequestsTaken taken);
  // A removed rank whose GPUs are healthy again (reset, worker restarted) rejoins with an empty KV cache.
  void restore_rank(std::int32_t rank);
  // The rank's worker process died: its next step fails, as the EP collectives would time out on it.
  void crash(std::int32_t rank);
  bool crashed(std::int32_t rank) const { return ranks_.at(static_cast<std::size_t>(rank)).crashed; }
  // The MoE imbalance (max rank share over the mean) of the current placement under the popularity
  // seen so far: the throughput cost of a shrunk group.
  double expert_imbalance() const { return placement_ ? placement_->imbalance(seen_load()) : 1.0; }
  // The routed pairs of the most loaded EP rank over the mean, summed over every step so far (what
  // sets the MoE time: the most loaded rank); 1 without EP or steps.
  double realized_expert_imbalance() const { return mean_pairs_ > 0 ? most_pairs_ / mean_pairs_ : 1.0; }

 private:
  // One GPU of a DP rank: an EP member, and TP rank `tp_rank` of its DP rank.
  struct Gpu {
    hal::Device* device = nullptr;
    std::int32_t tp_rank = 0;
    hal::Stream* stream = nullptr;
    std::optional<hal::Buffer> weights;
    std::optional<hal::Buffer> kv_gpu;
    std::optional<hal::Buffer> kv_grace;
    std::unique_ptr<StepGraphBuilder> builder;
    hal::Stream* stream_b = nullptr;  // two-batch overlap: the second micro-batch's stream and builder
    std::unique_ptr<StepGraphBuilder> builder_b;
    // Each stream's step exec, updated to every step's graph rather than instantiated anew.
    std::shared_ptr<hal::GraphExec> exec;
    std::shared_ptr<hal::GraphExec> exec_b;
    // SM partitions: the prefill side's stream (its SM share), builder and exec; the decode side runs
    // on `stream`.
    hal::Stream* stream_p = nullptr;
    std::unique_ptr<StepGraphBuilder> builder_p;
    std::shared_ptr<hal::GraphExec> exec_p;
    std::shared_ptr<hal::GpuEvent> copies_done;
    // The Grace tier's copies run beside the steps on streams of their own, as HiCache's cache
    // controller keeps a load stream and a write stream: loads for admitted requests that wait for
    // them, offloads that nothing waits for but a write-back eviction (offloads_done).
    hal::Stream* load_stream = nullptr;
    hal::Stream* offload_stream = nullptr;
    std::shared_ptr<hal::GpuEvent> offloads_done;
    std::uint64_t reload_bytes = 0;  // expert weights to load from host memory before the next step
  };
  struct Rank {
    std::vector<Gpu> gpus;
    std::shared_ptr<hal::CommGroup> tp_group;    // null at tp 1
    std::shared_ptr<hal::CommGroup> tp_group_b;  // the second micro-batch's all-reduces
    std::shared_ptr<hal::CommGroup> tp_group_p;  // the prefill side's all-reduces (SM partitions)
    std::unique_ptr<KvCacheManager> kv;
    std::unique_ptr<RankScheduler> sched;
    // Per side (lane()): the step planned and its batch.
    std::array<StepPlan, 2> plan;
    std::array<RankBatch, 2> batch;
    bool live = true;     // stepping with the group (false: removed after a fault)
    bool crashed = false;  // its worker process is dead
    bool leaving = false;  // removal asked for (applies after the running step): no longer routed to
  };
  // The step loop of one side: batch (one batch), or decode and prefill (SM partitions), each a fiber.
  bool sm_partitioned() const { return cfg_.sm_partition_prefill > 0; }
  static std::size_t lane(StepKind kind) { return kind == StepKind::prefill ? 1 : 0; }
  static hal::Stream& stream_of(Gpu& g, StepKind kind) { return kind == StepKind::prefill ? *g.stream_p : *g.stream; }
  void loop(StepKind kind);
  bool plan_all(StepKind kind);
  // Launches the planned step on every live rank and waits for it; false (the step undone) on failure.
  bool run_step(StepKind kind);
  void reload_experts(Gpu& g, hal::Stream& stream, std::size_t rank);
  // A step graph numbered for timelines (micro_batch: two-batch overlap's 0 or 1, else -1).
  hal::Graph numbered(hal::Graph step, std::int32_t micro_batch = -1) const;
  // Undoes the side's step on every live rank and reports the ranks the errors name; false.
  bool step_failed(StepKind kind, const std::vector<std::pair<std::int32_t, hal::HalError>>& failures);
  // A side's step is over (done, empty or failed): the rank changes asked for meanwhile apply once no
  // side steps.
  void step_over();
  // After a failed step: waits for the other side's step to end and the group to be repaired, or
  // retries on a new communicator.
  void await_repair();
  // A new EP communicator (and TP ones), placement and step builders over the live ranks.
  void rebuild_group(const std::string& why);
  // The MoE communicators (moe_group_ and its siblings) over `ids`, when the layout has them.
  void make_moe_groups(const std::vector<hal::DeviceId>& ids);
  // MoE TP: the routed-expert bytes each GPU holds when `live_ranks` DP ranks split every expert.
  std::uint64_t moe_tp_slice_bytes(std::size_t live_ranks) const;
  void make_tp_groups(Rank& rank, std::size_t index);
  // `member`: the rank's first GPU in the EP group (the i-th live rank's GPUs are members i * tp ...).
  void make_builders(Rank& rank, std::int32_t member);
  // Launches the KV copies the rank's cache asks for on each of its GPUs (each moves its own part):
  // a load on the load streams, its request scheduled once every GPU's part has landed; offloads on
  // the offload streams, which the side's next step waits for only under write-back (the blocks it
  // evicted are reused by that step).
  void issue_kv_copies(std::size_t rank, StepKind kind);
  void kv_loaded(std::size_t rank, RequestId id, const hal::HalError* error);
  bool two_batch_step() const;
  void launch_two_batches();
  // EP member m of the live ranks' GPUs.
  hal::Device& member_device(std::size_t member);
  // Asks each member's GPU how its `tokens[m]` tokens are routed, and counts what they report (under
  // EP; without it, the experts all the tokens chose).
  void route(std::span<const std::int64_t> tokens, MoeTraffic& traffic);
  // Every MoeTraffic on the current placement.
  void set_traffic_placement();
  // The experts' popularity from every count reported so far (uniform before any).
  ExpertLoad seen_load() const;
  // After each step: rebalance when due.
  void track_experts();
  void rebalance();

  rt::Runtime& rt_;
  const ModelProfile& model_;
  NormalGroupConfig cfg_;
  TokenSink on_tokens_;
  RejectSink on_reject_;
  WeightFootprint weights_;
  std::int64_t tp_ = 1;
  std::uint64_t block_bytes_ = 0;
  std::uint64_t gpu_block_bytes_ = 0;
  std::uint64_t kv_bytes_ = 0;
  std::uint64_t reserve_bytes_ = 0;
  LayerKernels kernels_;
  std::optional<ExpertPlacement> placement_;
  std::vector<std::uint64_t> routed_counts_;  // token-expert pairs per expert since the last rebalance
  std::vector<std::uint64_t> seen_counts_;    // the same since the start
  std::uint64_t expert_bytes_ = 0;            // one routed expert's weights, every MoE layer
  // Per side (lane()), and the second micro-batch's: the step's routing over the EP members (without
  // EP, over one rank holding every expert; none for a dense model).
  std::array<std::optional<MoeTraffic>, 2> traffic_;
  std::optional<MoeTraffic> traffic_b_;
  std::vector<std::vector<hal::RoutedExpert>> routed_;  // per member, the last routing drawn
  double most_pairs_ = 0, mean_pairs_ = 0;              // realized_expert_imbalance()'s sums
  // The communicator of every live GPU that the MoE collectives join: the EP all-to-alls, or under
  // attention DP + MoE TP the all-gather and reduce-scatter. Null on one GPU, or when the experts are
  // split by one DP rank's attention TP group.
  std::shared_ptr<hal::CommGroup> moe_group_;
  std::shared_ptr<hal::CommGroup> moe_group_b_;  // the second micro-batch's all-to-alls
  std::shared_ptr<hal::CommGroup> moe_group_p_;  // the prefill side's MoE collectives (SM partitions)
  bool moe_gather_ = false;                      // attention DP + MoE TP (not expert_parallel, dp > 1)
  std::vector<Rank> ranks_;
  std::array<std::vector<std::int64_t>, 2> tokens_;  // per side, per EP member (GPU) of the live ranks
  std::vector<std::int64_t> tokens_a_, tokens_b_;  // per micro-batch, under two-batch overlap
  hal::Collectives& collectives_;
  StepFailureSink on_failure_;
  std::vector<std::size_t> live_;  // the live ranks, ascending; their GPUs are the EP members in order
  std::vector<std::shared_ptr<hal::CommGroup>> retired_groups_;  // aborted ones, kept for late callbacks
  std::int64_t generation_ = 0;    // communicators built so far
  bool repaired_ = false;
  bool failed_ = false;                             // a step failed: no side steps until the repair
  int stepping_ = 0;                                // sides between planning a step and completing it
  std::vector<std::function<void()>> deferred_;     // rank changes asked for while stepping
  rt::Condition repair_;                            // a failed step waits here for a change
  rt::Condition between_;  // a side waits here for the other's step to end, or a change or repair to apply
  rt::Condition work_;   // an idle point: the stepping fibers wait here when every rank is idle
  std::array<bool, 2> new_work_{};
  std::uint64_t steps_ = 0;
  bool started_ = false;
};

}  // namespace nvl::engine
