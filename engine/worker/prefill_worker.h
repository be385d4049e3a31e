#pragma once
// The prefill worker: one model instance over a TP group of GPUs (TP8 by default, optionally with the
// routed experts spread by EP over the same GPUs), running long prompts in chunks and finishing each
// request at its first token; the KV then moves to a normal worker (not here). The worker has one
// scheduler and one KV cache: every GPU of the group takes part in every token. Each GPU runs the same
// step graph as rank r of the TP group (attention over heads / tp), joined every layer by all-reduces
// (and, with EP, by the MoE all-to-alls).
//
// Layer-wise KV: a step that finishes prompts runs as `kv_layer_groups` graphs of consecutive layers,
// each followed by a host callback, so on_kv_ready fires at the simulated time a group's layers have
// written their KV and a transfer of those layers may start while later layers still compute.
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
  double expert_skew = 0;        // Zipf skew of expert popularity under EP (0: uniform)
  // HBM kept for activations, graphs and comm buffers; unset: estimated from the model and scheduler.
  std::optional<std::uint64_t> activation_reserve_bytes;
  SchedulerConfig scheduler{.token_budget = 16'384, .max_running = 64, .chunk_tokens = 16'384, .draft_tokens = 0};
  std::string scheduling_policy = "fcfs";
  std::int64_t kv_layer_groups = 4;  // graphs a finishing step is cut into (1: KV ready only at the end)
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
  // the device; a TP degree that does not divide the heads, or experts that do not spread evenly over
  // the GPUs under EP, is std::invalid_argument.
  PrefillWorker(rt::Runtime& rt, const ModelProfile& model, std::vector<hal::Device*> devices,
                hal::Collectives& collectives, PrefillWorkerConfig cfg, PrefillDoneSink on_done,
                KvReadySink on_kv_ready, PrefillRejectSink on_reject);

  // Starts the stepping fiber (a daemon: it waits for work when idle).
  void start();
  // The request is prefilled only: it finishes at its first token whatever max_output_tokens says.
  void submit(RequestState request);
  bool cancel(RequestId id);
  // With hold_kv_for_transfer: the request's KV was sent (or given up on) and may be reused now.
  void release_kv(RequestId id);

  std::int64_t tp() const { return static_cast<std::int64_t>(gpus_.size()); }
  const RankScheduler& scheduler() const { return *sched_; }
  KvCacheManager& kv() { return *kv_; }
  const WeightFootprint& weights() const { return weights_; }
  // KV bytes each GPU holds per token: MLA's latent is one per token, so every TP rank keeps all of
  // it; GQA's KV heads are split over the ranks.
  std::uint64_t kv_bytes_per_token_per_gpu() const { return kv_per_gpu_token_; }
  std::uint64_t kv_bytes_per_gpu() const { return kv_bytes_per_gpu_; }
  std::uint64_t activation_reserve_bytes() const { return reserve_bytes_; }
  std::uint64_t steps() const { return steps_; }

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
  void loop();
  void launch_step(const StepPlan& plan);
  std::unique_ptr<StepGraphBuilder> make_builder(std::int64_t rank) const;
  // Launches the step on every GPU and waits for it; false (the step undone) on failure.
  bool run_step(const StepPlan& plan);
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
  WeightFootprint weights_;
  std::uint64_t kv_per_gpu_token_ = 0;
  std::uint64_t kv_bytes_per_gpu_ = 0;
  std::uint64_t reserve_bytes_ = 0;
  LayerKernels kernels_;
  std::optional<ExpertPlacement> placement_;
  std::optional<MoeTraffic> traffic_;
  std::shared_ptr<hal::CommGroup> tp_group_;
  std::shared_ptr<hal::CommGroup> ep_group_;
  std::vector<Gpu> gpus_;
  std::unique_ptr<KvCacheManager> kv_;
  std::unique_ptr<RankScheduler> sched_;
  RankBatch batch_;
  std::vector<std::int64_t> tokens_;  // tokens each EP rank dispatches (its slice of the batch)
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
