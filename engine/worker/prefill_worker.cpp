#include "engine/worker/prefill_worker.h"

#include <algorithm>
#include <stdexcept>

#include "engine/model/activation_reserve.h"
#include "engine/model/kv_budget.h"
#include "engine/model/kv_footprint.h"
#include "engine/model/weight_dtypes.h"

namespace nvl::engine {

namespace {

// The TP degree (the GPU count), checked before anything is split by it.
std::int64_t checked_tp(const ModelProfile& model, std::size_t gpus) {
  const auto tp = static_cast<std::int64_t>(gpus);
  if (tp < 1) throw std::invalid_argument("prefill worker: needs at least one GPU");
  if (model.num_attention_heads % tp != 0) {
    throw std::invalid_argument("prefill worker: TP " + std::to_string(tp) + " does not divide " + model.name + "'s " +
                                std::to_string(model.num_attention_heads) + " attention heads");
  }
  return tp;
}

}  // namespace

PrefillWorker::PrefillWorker(rt::Runtime& rt, const ModelProfile& model, std::vector<hal::Device*> devices,
                             hal::Collectives& collectives, PrefillWorkerConfig cfg, PrefillDoneSink on_done,
                             KvReadySink on_kv_ready, PrefillRejectSink on_reject)
    : rt_(rt),
      model_(model),
      collectives_(collectives),
      cfg_(std::move(cfg)),
      on_done_(std::move(on_done)),
      on_kv_ready_(std::move(on_kv_ready)),
      on_reject_(std::move(on_reject)),
      kernels_(model, checked_tp(model, devices.size()), cfg_.weights, cfg_.kv_dtype),
      work_(rt, "prefill worker: new requests"),
      repair_(rt, "prefill worker: repair after a failed step") {
  work_.mark_idle_point();
  const std::int64_t tp = kernels_.tp();
  if (cfg_.kv_layer_groups < 1) throw std::invalid_argument("prefill worker: kv_layer_groups must be at least 1");
  if (cfg_.scheduler.draft_tokens != 0) throw std::invalid_argument("prefill worker: a prefill step drafts no MTP tokens");
  for (const hal::Device* d : devices) check_weight_dtypes(cfg_.weights, d->info());
  const bool ep = cfg_.expert_parallel && tp > 1;
  weights_ = weight_footprint_per_gpu(model, ParallelLayout{.tp = tp, .dp = 1, .ep = ep ? tp : 1}, cfg_.weights);

  const KvBytesPerToken kv = kv_bytes_per_token(model, cfg_.kv_dtype);
  // MLA keeps one latent per token that every head reads, so each TP rank holds all of it (the reason
  // SGLang runs DeepSeek attention data-parallel); GQA's KV heads split over the ranks when tp divides them.
  const bool split = !model.is_mla() && model.num_key_value_heads % tp == 0;
  kv_per_gpu_token_ = split ? kv.total() / static_cast<std::uint64_t>(tp) : kv.total();
  const std::uint64_t gpu_block_bytes = kv_per_gpu_token_ * static_cast<std::uint64_t>(cfg_.block_tokens);
  reserve_bytes_ = cfg_.activation_reserve_bytes.value_or(
      estimate_activation_reserve(model, cfg_.scheduler.token_budget, cfg_.scheduler.max_running, tp).total_bytes());

  std::vector<hal::DeviceId> ids;
  for (hal::Device* d : devices) ids.push_back(d->id());
  if (tp > 1) tp_group_ = collectives.create_group("prefill-tp" + std::to_string(tp), ids);
  if (ep) {
    rt::Rng& rng = rt.rng("prefill-expert-popularity");
    const ExpertLoad load = cfg_.expert_skew > 0 ? skewed_expert_load(model.n_routed_experts, cfg_.expert_skew, rng)
                                                 : uniform_expert_load(model.n_routed_experts);
    placement_.emplace(load, tp, 0);
    traffic_.emplace(*placement_, load, model.num_experts_per_tok);
    ep_group_ = collectives.create_group("prefill-ep" + std::to_string(tp), ids);
  }

  // Every GPU holds the same share, so the smallest HBM sets the block count of the whole worker.
  std::int64_t blocks = -1;
  gpus_.resize(static_cast<std::size_t>(tp));
  for (std::int64_t r = 0; r < tp; ++r) {
    Gpu& g = gpus_[static_cast<std::size_t>(r)];
    g.device = devices[static_cast<std::size_t>(r)];
    const std::string tag = "prefill rank " + std::to_string(r);
    g.weights = g.device->memory().allocate(weights_.total_bytes(), tag + " weights");
    const std::int64_t here = kv_blocks_left(*g.device, weights_.total_bytes(), reserve_bytes_, gpu_block_bytes);
    blocks = blocks < 0 ? here : std::min(blocks, here);
    g.stream = &g.device->create_stream(tag);
    g.builder = make_builder(r);
  }
  kv_bytes_per_gpu_ = static_cast<std::uint64_t>(blocks) * gpu_block_bytes;
  for (Gpu& g : gpus_) g.kv = g.device->memory().allocate(kv_bytes_per_gpu_, "prefill KV");
  // The cache counts a block by the request's KV it holds (one copy), which is what a transfer moves.
  kv_ = std::make_unique<KvCacheManager>(KvCacheConfig{.rank = 0,
                                                       .gpu_blocks = blocks,
                                                       .grace_blocks = 0,
                                                       .block_tokens = cfg_.block_tokens,
                                                       .block_bytes = kv.total() * static_cast<std::uint64_t>(cfg_.block_tokens),
                                                       .grace_policy = GraceTierPolicy::off});
  sched_ = std::make_unique<RankScheduler>(*kv_, cfg_.scheduler, make_scheduling_policy(cfg_.scheduling_policy));
  tokens_.resize(static_cast<std::size_t>(tp));
}

std::unique_ptr<StepGraphBuilder> PrefillWorker::make_builder(std::int64_t rank) const {
  return std::make_unique<StepGraphBuilder>(kernels_, traffic_ ? &*traffic_ : nullptr,
                                            StepGraphOptions{.ep_group = ep_group_,
                                                             .tp_group = tp_group_,
                                                             .rank = static_cast<std::int32_t>(rank),
                                                             .local_experts = weights_.expert_slots,
                                                             .mtp = false});
}

void PrefillWorker::start() {
  if (started_) throw std::logic_error("prefill worker started twice");
  started_ = true;
  rt_.spawn("prefill-worker", [this] { loop(); }, rt::SpawnOptions{.daemon = true});
}

void PrefillWorker::submit(RequestState request) {
  if (!live_) throw std::logic_error("prefill worker: a request submitted while it is taken down");
  request.max_output_tokens = 1;
  request.hold_kv_after_finish = cfg_.hold_kv_for_transfer;
  sched_->enqueue(std::move(request));
  new_work_ = true;
  work_.notify_all();
}

bool PrefillWorker::cancel(RequestId id) { return sched_->cancel(id); }

void PrefillWorker::release_kv(RequestId id) {
  if (!sched_->release_held(id)) {
    // Not held: a failed step put it back in the queue after its KV had all been sent (or its step is
    // still running). It need not run again.
    sched_->cancel(id);
    return;
  }
  new_work_ = true;  // the freed blocks may admit a waiting prompt
  work_.notify_all();
}

void PrefillWorker::launch_step(const StepPlan& plan) {
  batch_.prefills.clear();
  batch_.decodes.clear();
  struct Finishing {
    RequestId id;
    std::int64_t prompt_tokens;
  };
  std::vector<Finishing> finishing;
  for (const StepItem& item : plan.items) {
    batch_.prefills.push_back(PrefillSpan{item.context_tokens, item.new_tokens, item.last_chunk});
    if (item.last_chunk) finishing.push_back(Finishing{item.id, item.context_tokens + item.new_tokens});
  }
  // Under EP each rank dispatches its own slice of the (TP-replicated) batch.
  const std::int64_t n = batch_.tokens();
  const auto tp = static_cast<std::int64_t>(gpus_.size());
  for (std::int64_t r = 0; r < tp; ++r) tokens_[static_cast<std::size_t>(r)] = n * (r + 1) / tp - n * r / tp;

  const std::int64_t layers = model_.num_hidden_layers;
  const std::int64_t groups = finishing.empty() ? 1 : std::min(cfg_.kv_layer_groups, layers);
  for (std::int64_t k = 0; k < groups; ++k) {
    const std::int64_t first = layers * k / groups, end = layers * (k + 1) / groups;
    for (Gpu& g : gpus_) {
      g.stream->launch(g.device->instantiate(g.builder->build_layers(batch_, tokens_, first, end, k + 1 == groups)));
    }
    if (finishing.empty()) continue;
    // The group's collectives align the ranks, so rank 0's stream tells when every rank's layers are done.
    const std::uint64_t kv_per_token = kv_bytes_per_token_of_layers(model_, cfg_.kv_dtype, 0, end).total();
    gpus_.front().stream->add_callback([this, finishing, end, layers, kv_per_token](const hal::HalError* error) {
      if (error != nullptr || crashed_) return;  // the step failed (or its process died): it is undone
      for (const Finishing& f : finishing) {
        on_kv_ready_(f.id, end, layers, static_cast<std::uint64_t>(f.prompt_tokens) * kv_per_token);
      }
    });
  }
}

void PrefillWorker::loop() {
  for (;;) {
    apply_deferred();  // a take-down or return asked for while the last step ran
    new_work_ = false;
    const StepPlan plan = sched_->plan_step();
    for (RequestId id : plan.rejected) on_reject_(id, "prompt needs more KV blocks than the prefill worker holds");
    if (plan.empty()) {
      work_.wait([this] { return new_work_; });
      continue;
    }
    if (!run_step(plan)) {
      await_repair();
      continue;
    }
    for (const StepOutcome& o : sched_->complete_step(plan, [](RequestId) { return std::int64_t{0}; })) {
      if (o.finished) on_done_(o);
    }
    ++steps_;
  }
}

}  // namespace nvl::engine
