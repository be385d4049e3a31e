#pragma once
// The prefill worker: one model instance over a TP group of GPUs (TP8 by default, optionally with the
// routed experts spread by EP over the same GPUs), running long prompts in chunks and finishing each
// request at its first token; the KV then moves to a normal worker (not here). The worker has one
// scheduler and one KV cache: every GPU of the group takes part in every token. Each GPU runs the same
// step graph as rank r of the TP group (attention over heads / tp), joined every layer by all-reduces
// (and, with EP, by the MoE all-to-alls).
//
// Pipeline parallelism (SGLang's chunked PP for long prompts): with `pipeline_stages` = pp the GPUs are
// pp TP groups of tp each, stage s on devices [s * tp, (s + 1) * tp) running its share of the layers
// (engine/model/weight_footprint.h: pipeline_stages). A step's activations (hidden x tokens, BF16) go
// from rank r of one stage to rank r of the next as a two-member send_recv collective (over NVLink
// within a rack), in graphs of their own (so a fault that cuts a layer graph short never leaves a
// peer waiting on a send it skipped). Stage s's KV lives on stage s's GPUs. Chunks overlap: once the first stage has handed a step on, the scheduler hears of it
// and the next step starts there while later stages still run the last one. A step that finishes
// prompts waits for every stage (the first token comes from the last), so a prompt's pipeline fills
// and drains once: pp - 1 stage times at each end, priced by what runs, not by a formula.
//
// Layer-wise KV: a step that finishes prompts runs each stage's layers as `kv_layer_groups` graphs of
// consecutive layers, each followed by a host callback, so on_kv_ready fires at the simulated time a
// group's layers have written their KV (stage 0's first) and a transfer of those layers may start
// while later layers still compute.
//
// DP attention (DEP prefill, `attention_dp` = dp > 1, no pipeline): the GPUs are dp attention ranks of
// tp each, DP rank d on devices [d * tp, (d + 1) * tp), each with its own scheduler and KV cache and its
// own prompts, the routed experts spread by EP over all of them, or (without expert_parallel: MoE TP,
// as TensorRT-LLM runs attention DP) every expert split over all of them, which all-gather every rank's
// tokens before the experts and reduce-scatter the outputs after. The ranks step in lockstep, because
// every MoE layer's collectives join them; a rank with nothing to do runs an empty batch and still takes
// part, as in the decoding group. Whoever submits picks the rank (SGLang's DP controller dispatches).
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
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
#include "engine/sched/rank_scheduler.h"

namespace nvl::engine {

struct PrefillWorkerConfig {
  WeightDtypes weights;
  hal::DType kv_dtype = hal::DType::fp8;
  std::int64_t block_tokens = 64;
  bool expert_parallel = false;  // TP + EP: routed experts whole, spread over the GPUs (else split by TP)
  bool moe_all_to_all = true;    // TP + EP: false skips the dispatch and combine (StepGraphOptions::ep_all_to_all)
  // HBM kept for activations, graphs and comm buffers; unset: estimated from the model and scheduler.
  std::optional<std::uint64_t> activation_reserve_bytes;
  SchedulerConfig scheduler{.token_budget = 16'384, .max_running = 64, .chunk_tokens = 16'384, .draft_tokens = 0};
  std::string scheduling_policy = "fcfs";
  std::int64_t kv_layer_groups = 4;  // graphs a finishing step is cut into per stage (1: KV ready at its end)
  // Pipeline stages: the devices are tp x pp, tp = devices / pp (1: one TP group, no pipeline).
  std::int64_t pipeline_stages = 1;
  // DP attention ranks: the devices are dp x tp; above 1 needs one pipeline stage.
  std::int64_t attention_dp = 1;
  // Keep each request's KV after its first token until release_kv(): it is still being transferred.
  bool hold_kv_for_transfer = false;
  // After a failed step with every GPU healthy (a link or collective error), the step is retried on new
  // communicators after this pause.
  rt::Duration failed_step_backoff = rt::ms(10);
};

// The first `layers_done` of `total_layers` layers of the request's KV are written for its whole
// prompt: `bytes_so_far` bytes (one copy; the GPUs of the group hold the rest). Runs on the runtime
// loop, not in a fiber: it must not block.
using KvReadySink =
    std::function<void(RequestId id, std::int64_t layers_done, std::int64_t total_layers, std::uint64_t bytes_so_far)>;
// The request's prompt is prefilled and its first token sampled.
using PrefillDoneSink = std::function<void(const StepOutcome& outcome)>;
// A request that can never run here (its prompt needs more KV than the worker holds).
using PrefillRejectSink = std::function<void(RequestId id, const std::string& reason)>;
// A step failed (an operation error: Xid, aborted TP/EP collective, the worker process gone): whoever
// watches health decides whether the worker is dead. Until take_down() or a retry, it does not step.
using PrefillFailureSink = std::function<void(const hal::HalError& error)>;

class PrefillWorker {
 public:
  // Takes the weights and KV memory on every device: a model that does not fit is a HalError naming
  // the device; a TP degree that does not divide the heads, experts that do not spread evenly over
  // a stage's GPUs under EP, pipeline stages that do not divide the devices or leave a stage
  // without layers, or DP ranks beside pipeline stages, is std::invalid_argument.
  PrefillWorker(rt::Runtime& rt, const ModelProfile& model, std::vector<hal::Device*> devices,
                hal::Collectives& collectives, PrefillWorkerConfig cfg, PrefillDoneSink on_done,
                KvReadySink on_kv_ready, PrefillRejectSink on_reject);

  // Starts the stepping fiber (a daemon: it waits for work when idle).
  void start();
  // The request is prefilled only, on DP rank `rank`: it finishes at its first token whatever
  // max_output_tokens says.
  void submit(std::int32_t rank, RequestState request);
  bool cancel(RequestId id);
  // With hold_kv_for_transfer: the request's KV was sent (or given up on) and may be reused now.
  void release_kv(RequestId id);

  std::int64_t tp() const { return kernels_.tp(); }
  std::int64_t pp() const { return static_cast<std::int64_t>(stages_.size()); }
  std::int32_t ranks() const { return static_cast<std::int32_t>(ranks_.size()); }
  // The GPUs of DP rank `rank` in pipeline stage `stage` (its TP group), which hold its KV.
  std::vector<hal::Device*> devices_of(std::int64_t stage, std::int32_t rank) const;
  const RankScheduler& scheduler(std::int32_t rank = 0) const { return *dp_rank(rank).sched; }
  KvCacheManager& kv(std::int32_t rank = 0) { return *dp_rank(rank).kv; }
  // What each GPU of a stage holds; the layers it runs.
  const WeightFootprint& weights(std::int64_t stage = 0) const { return stage_at(stage).weights; }
  const PipelineStage& layers(std::int64_t stage = 0) const { return stage_at(stage).layers; }
  // KV bytes each GPU of a stage holds per token, of its stage's layers only: MLA's latent is one per
  // token, so every TP rank keeps all of it; GQA's KV heads are split over the ranks.
  std::uint64_t kv_bytes_per_token_per_gpu(std::int64_t stage = 0) const { return stage_at(stage).kv_per_gpu_token; }
  std::uint64_t kv_bytes_per_gpu(std::int64_t stage = 0) const { return stage_at(stage).kv_bytes_per_gpu; }
  std::uint64_t activation_reserve_bytes() const { return reserve_bytes_; }
  std::uint64_t steps() const { return steps_; }
  // Prompts DP rank `rank` finished.
  std::uint64_t prefilled(std::int32_t rank) const { return dp_rank(rank).prefilled; }

  // Faults (engine/worker/prefill_recovery.cpp). A failed step is undone and reported to the sink; the
  // worker then waits for take_down() (or, once its GPUs are all healthy, retries on new communicators
  // after failed_step_backoff).
  void on_step_failure(PrefillFailureSink sink) { on_failure_ = std::move(sink); }
  // The worker process dies: its state is gone, its next step (or the one running) fails.
  void crash();
  bool crashed() const { return crashed_; }
  bool live() const { return live_; }
  // Takes the dead worker out: every request it holds (queued, running, KV held for a transfer) is
  // dropped with its KV cache. A change asked for while a step runs applies when it ends.
  void take_down(const std::string& cause);
  // Its GPUs healthy again (reset, process restarted): back with new communicators and an empty cache.
  void restore();

 private:
  struct Gpu {
    hal::Device* device = nullptr;
    hal::Stream* stream = nullptr;
    std::optional<hal::Buffer> weights;
    std::optional<hal::Buffer> kv;
    std::unique_ptr<StepGraphBuilder> builder;
  };
  // One pipeline stage over gpus_[s * dp * tp, (s + 1) * dp * tp): each DP rank's TP group, and with EP
  // one EP group over all of them (or, DP ranks under MoE TP, one group for the token all-gathers).
  struct Stage {
    PipelineStage layers;
    WeightFootprint weights;
    std::uint64_t kv_per_gpu_token = 0;
    std::uint64_t kv_bytes_per_gpu = 0;
    std::vector<std::shared_ptr<hal::CommGroup>> tp_groups;  // per DP rank; none at tp 1
    std::shared_ptr<hal::CommGroup> ep_group;
    std::shared_ptr<hal::CommGroup> moe_tp_group;  // DP ranks under MoE TP: the token all-gathers
    std::vector<std::shared_ptr<hal::CommGroup>> to_next;  // rank r and rank r of the next stage
    std::optional<MoeTraffic> traffic;  // with EP: the step's routing over the stage's GPUs
  };
  // One DP rank's scheduler and KV cache, and its part of the step.
  struct DpRank {
    std::unique_ptr<KvCacheManager> kv;
    std::unique_ptr<RankScheduler> sched;
    StepPlan plan;
    RankBatch batch;
    std::uint64_t prefilled = 0;
  };
  const Stage& stage_at(std::int64_t s) const { return stages_.at(static_cast<std::size_t>(s)); }
  const DpRank& dp_rank(std::int32_t r) const { return ranks_.at(static_cast<std::size_t>(r)); }
  std::int64_t members() const { return ranks() * tp(); }  // GPUs of a stage: its EP members
  // GPU `rank` of stage `stage`, counted over the stage's DP ranks (DP rank d's TP rank t is d * tp + t).
  Gpu& gpu(std::int64_t stage, std::int64_t rank) { return gpus_[static_cast<std::size_t>(stage * members() + rank)]; }
  void loop();
  // Each DP rank plans its part of the step (rejections reported); false when none has work.
  bool plan_all();
  void launch_step();
  // Stage s's routing of the step's tokens, as its GPUs report it.
  void route(Stage& stage, std::int64_t s);
  // Stage s's activations of `tokens` to the next stage: each rank's send graph, then the next stage's receives.
  void hand_on(std::int64_t s, std::int64_t tokens);
  std::unique_ptr<StepGraphBuilder> make_builder(const Stage& stage, std::int64_t member) const;
  // Stage s's TP, EP and hand-on groups, named after the stage (and the communicator generation).
  void create_groups(std::int64_t s, const std::string& suffix);
  // Launches the planned step and waits for what the next one needs: every GPU, or with pp > 1 and no
  // prompt finishing, only the first stage's; false (the step undone) on failure.
  bool run_step();
  // Waits for the later stages' work still running; false on failure.
  bool drain();
  // A failed step (planned: the one in the ranks' plans) or drain: undone, reported, and what later
  // stages had not confirmed started again.
  void step_failed(bool planned, const hal::HalError& failure);
  // Requests whose chunks the scheduler counted before the later stages ran them, started again from
  // scratch after a failure (and the prefix cache dropped: it may hold those chunks' blocks).
  void restart_unconfirmed();
  // After a failed step: waits for take_down(), or retries on new communicators.
  void await_repair();
  // New TP (and EP) communicators and step builders: the old ones were aborted with the fault.
  void rebuild_groups(const std::string& why);
  void apply_or_defer(std::function<void()> change);
  void apply_deferred();

  rt::Runtime& rt_;
  const ModelProfile& model_;
  hal::Collectives& collectives_;
  PrefillWorkerConfig cfg_;
  PrefillDoneSink on_done_;
  KvReadySink on_kv_ready_;
  PrefillRejectSink on_reject_;
  std::uint64_t reserve_bytes_ = 0;
  LayerKernels kernels_;
  std::optional<ExpertPlacement> placement_;
  std::vector<std::vector<hal::RoutedExpert>> routed_;  // per EP member, the last routing drawn
  std::vector<Stage> stages_;
  std::vector<Gpu> gpus_;  // stage-major, then DP rank, then TP rank
  hal::SharedCollectiveOp send_, receive_;  // the last hand-on's parts, kept while its size stays
  bool drained_ = true;                     // no stage runs work of a step the scheduler has counted
  std::vector<RequestId> unconfirmed_;      // requests of steps counted before every stage ran them
  std::vector<DpRank> ranks_;
  std::vector<std::int64_t> tokens_;  // tokens each EP member dispatches (its slice of its DP rank's batch)
  rt::Condition work_;   // an idle point: the stepping fiber waits here when there is nothing to run
  bool new_work_ = false;
  std::uint64_t steps_ = 0;
  bool started_ = false;
  // Faults.
  PrefillFailureSink on_failure_;
  bool live_ = true;      // false: taken down after a fault, until restore()
  bool crashed_ = false;  // the worker process is dead
  bool stepping_ = false;
  bool repaired_ = false;
  std::vector<std::function<void()>> deferred_;  // take_down / restore asked for while a step ran
  rt::Condition repair_;                         // a failed step waits here for take_down or a retry
  std::int64_t generation_ = 0;                  // communicators built so far
  std::vector<std::shared_ptr<hal::CommGroup>> retired_groups_;  // aborted ones, kept for late callbacks
};

}  // namespace nvl::engine
