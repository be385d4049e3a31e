#include "engine/worker/prefill_worker.h"

#include <algorithm>
#include <stdexcept>

#include "engine/model/activation_reserve.h"
#include "engine/model/kv_budget.h"
#include "engine/model/kv_footprint.h"
#include "engine/model/weight_dtypes.h"

namespace nvl::engine {

namespace {

// The TP degree (the GPUs of one pipeline stage), checked before anything is split by it.
std::int64_t checked_tp(const ModelProfile& model, std::size_t gpus, std::int64_t pp) {
  const auto n = static_cast<std::int64_t>(gpus);
  if (n < 1) throw std::invalid_argument("prefill worker: needs at least one GPU");
  if (pp < 1 || n % pp != 0) {
    throw std::invalid_argument("prefill worker: " + std::to_string(pp) + " pipeline stages do not divide its " +
                                std::to_string(n) + " GPUs");
  }
  const std::int64_t tp = n / pp;
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
      kernels_(model, checked_tp(model, devices.size(), cfg_.pipeline_stages), cfg_.weights, cfg_.kv_dtype),
      work_(rt, "prefill worker: new requests"),
      repair_(rt, "prefill worker: repair after a failed step") {
  work_.mark_idle_point();
  const std::int64_t tp = kernels_.tp();
  if (cfg_.kv_layer_groups < 1) throw std::invalid_argument("prefill worker: kv_layer_groups must be at least 1");
  if (cfg_.scheduler.draft_tokens != 0) throw std::invalid_argument("prefill worker: a prefill step drafts no MTP tokens");
  for (const hal::Device* d : devices) check_weight_dtypes(cfg_.weights, d->info());
  const bool ep = cfg_.expert_parallel && tp > 1;
  const ParallelLayout layout{.tp = tp, .dp = 1, .ep = ep ? tp : 1};

  // MLA keeps one latent per token that every head reads, so each TP rank holds all of it (the reason
  // SGLang runs DeepSeek attention data-parallel); GQA's KV heads split over the ranks when tp divides them.
  const bool split = !model.is_mla() && model.num_key_value_heads % tp == 0;
  for (const PipelineStage& layers : pipeline_stages(model, cfg_.pipeline_stages)) {
    Stage& stage = stages_.emplace_back();
    stage.layers = layers;
    stage.weights = weight_footprint_per_gpu(model, layout, cfg_.weights, layers);
    // A stage keeps the KV of its own layers only (IndexShare layers hold no indexer keys).
    const std::uint64_t per_token = kv_bytes_per_token_of_layers(model, cfg_.kv_dtype, layers.first_layer, layers.end_layer).total();
    stage.kv_per_gpu_token = split ? per_token / static_cast<std::uint64_t>(tp) : per_token;
  }
  reserve_bytes_ = cfg_.activation_reserve_bytes.value_or(
      estimate_activation_reserve(model, cfg_.scheduler.token_budget, cfg_.scheduler.max_running, tp).total_bytes());

  if (ep) {
    rt::Rng& rng = rt.rng("prefill-expert-popularity");
    const ExpertLoad load = cfg_.expert_skew > 0 ? skewed_expert_load(model.n_routed_experts, cfg_.expert_skew, rng)
                                                 : uniform_expert_load(model.n_routed_experts);
    placement_.emplace(load, tp, 0);
    traffic_.emplace(*placement_, load, model.num_experts_per_tok);
  }
  gpus_.resize(devices.size());
  for (std::size_t i = 0; i < devices.size(); ++i) gpus_[i].device = devices[i];
  for (std::int64_t s = 0; s < pp(); ++s) create_groups(s, "");

  // Every GPU of a stage holds the same share, so the smallest room for blocks sets the block count
  // of the whole worker.
  std::int64_t blocks = -1;
  for (std::int64_t s = 0; s < pp(); ++s) {
    const Stage& stage = stages_[static_cast<std::size_t>(s)];
    const std::uint64_t gpu_block_bytes = stage.kv_per_gpu_token * static_cast<std::uint64_t>(cfg_.block_tokens);
    for (std::int64_t r = 0; r < tp; ++r) {
      Gpu& g = gpu(s, r);
      const std::string tag =
          (pp() > 1 ? "prefill stage " + std::to_string(s) + " rank " : "prefill rank ") + std::to_string(r);
      g.weights = g.device->memory().allocate(stage.weights.total_bytes(), tag + " weights");
      const std::int64_t here = kv_blocks_left(*g.device, stage.weights.total_bytes(), reserve_bytes_, gpu_block_bytes);
      blocks = blocks < 0 ? here : std::min(blocks, here);
      g.stream = &g.device->create_stream(tag);
      g.builder = make_builder(stage, r);
    }
  }
  for (std::int64_t s = 0; s < pp(); ++s) {
    Stage& stage = stages_[static_cast<std::size_t>(s)];
    stage.kv_bytes_per_gpu = static_cast<std::uint64_t>(blocks) * stage.kv_per_gpu_token *
                             static_cast<std::uint64_t>(cfg_.block_tokens);
    for (std::int64_t r = 0; r < tp; ++r) {
      gpu(s, r).kv = gpu(s, r).device->memory().allocate(stage.kv_bytes_per_gpu, "prefill KV");
    }
  }
  // The cache counts a block by the request's KV it holds (one copy), which is what a transfer moves.
  kv_ = std::make_unique<KvCacheManager>(KvCacheConfig{.rank = 0,
                                                       .gpu_blocks = blocks,
                                                       .grace_blocks = 0,
                                                       .block_tokens = cfg_.block_tokens,
                                                       .block_bytes = kv_bytes_per_token(model, cfg_.kv_dtype).total() * static_cast<std::uint64_t>(cfg_.block_tokens),
                                                       .grace_policy = GraceTierPolicy::off});
  sched_ = std::make_unique<RankScheduler>(*kv_, cfg_.scheduler, make_scheduling_policy(cfg_.scheduling_policy));
  tokens_.resize(static_cast<std::size_t>(tp));
}

void PrefillWorker::create_groups(std::int64_t s, const std::string& suffix) {
  Stage& stage = stages_[static_cast<std::size_t>(s)];
  const std::int64_t tp = this->tp();
  std::vector<hal::DeviceId> ids;
  for (std::int64_t r = 0; r < tp; ++r) ids.push_back(gpu(s, r).device->id());
  const std::string name = std::to_string(tp) + (pp() > 1 ? ".s" + std::to_string(s) : "") + suffix;
  if (tp > 1) stage.tp_group = collectives_.create_group("prefill-tp" + name, ids);
  if (placement_) stage.ep_group = collectives_.create_group("prefill-ep" + name, ids);
  stage.to_next.clear();
  if (stage.layers.last) return;
  for (std::int64_t r = 0; r < tp; ++r) {
    stage.to_next.push_back(collectives_.create_group(
        "prefill-pp" + std::to_string(s) + "to" + std::to_string(s + 1) + ".r" + std::to_string(r) + suffix,
        {gpu(s, r).device->id(), gpu(s + 1, r).device->id()}));
  }
}

std::unique_ptr<StepGraphBuilder> PrefillWorker::make_builder(const Stage& stage, std::int64_t rank) const {
  return std::make_unique<StepGraphBuilder>(kernels_, traffic_ ? &*traffic_ : nullptr,
                                            StepGraphOptions{.ep_group = stage.ep_group,
                                                             .tp_group = stage.tp_group,
                                                             .rank = static_cast<std::int32_t>(rank),
                                                             .local_experts = stage.weights.expert_slots,
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
  const std::int64_t tp = this->tp();
  for (std::int64_t r = 0; r < tp; ++r) tokens_[static_cast<std::size_t>(r)] = n * (r + 1) / tp - n * r / tp;

  const std::int64_t layers = model_.num_hidden_layers;
  for (std::int64_t s = 0; s < pp(); ++s) {
    const PipelineStage& range = stages_[static_cast<std::size_t>(s)].layers;
    const std::int64_t own = range.end_layer - range.first_layer;
    const std::int64_t groups = finishing.empty() ? 1 : std::min(cfg_.kv_layer_groups, own);
    for (std::int64_t k = 0; k < groups; ++k) {
      const std::int64_t first = range.first_layer + own * k / groups, end = range.first_layer + own * (k + 1) / groups;
      for (std::int64_t r = 0; r < tp; ++r) {
        Gpu& g = gpu(s, r);
        g.stream->launch(
            g.device->instantiate(g.builder->build_layers(batch_, tokens_, first, end, range.last && k + 1 == groups)));
      }
      if (finishing.empty()) continue;
      // The group's collectives align the stage's ranks, so its rank 0's stream tells when every
      // rank's layers are done.
      // Layers that share a DSA indexer (IndexShare) store no indexer keys: count the bytes per layer.
      const std::uint64_t kv_per_token = kv_bytes_per_token_of_layers(model_, cfg_.kv_dtype, 0, end).total();
      gpu(s, 0).stream->add_callback([this, finishing, end, layers, kv_per_token](const hal::HalError* error) {
        if (error != nullptr || crashed_) return;  // the step failed (or its process died): it is undone
        for (const Finishing& f : finishing) {
          on_kv_ready_(f.id, end, layers, static_cast<std::uint64_t>(f.prompt_tokens) * kv_per_token);
        }
      });
    }
    if (!range.last) hand_on(s, n);
  }
}

void PrefillWorker::hand_on(std::int64_t s, std::int64_t tokens) {
  const auto bytes = static_cast<std::uint64_t>(tokens * model_.hidden_size * 2);  // BF16 hidden states
  if (!send_ || send_->bytes != bytes) {
    hal::CollectiveOp op;
    op.kind = hal::CollectiveKind::send_recv;
    op.name = "pp.activations";
    op.bytes = bytes;
    op.peer = 1;
    send_ = std::make_shared<const hal::CollectiveOp>(op);
    op.bytes = 0;
    op.peer = -1;
    receive_ = std::make_shared<const hal::CollectiveOp>(std::move(op));
  }
  // Every rank of the next stage needs the whole hidden state (TP replicates it after the all-reduce),
  // so rank r sends its copy to rank r there: tp flows side by side and no gather after. Each receive
  // is launched before its send, so an enqueue that throws (a lost GPU) leaves no send unmatched.
  const Stage& stage = stages_[static_cast<std::size_t>(s)];
  for (std::int64_t r = 0; r < tp(); ++r) {
    const auto& pair = stage.to_next[static_cast<std::size_t>(r)];
    Gpu& to = gpu(s + 1, r);
    hal::Graph receive("pp.receive");
    receive.add(hal::CollectiveCall{pair, 1, receive_});
    to.stream->launch(to.device->instantiate(receive));
    Gpu& from = gpu(s, r);
    hal::Graph send("pp.send");
    send.add(hal::CollectiveCall{pair, 0, send_});
    from.stream->launch(from.device->instantiate(send));
  }
}

void PrefillWorker::loop() {
  for (;;) {
    apply_deferred();  // a take-down or return asked for while the last step ran
    new_work_ = false;
    const StepPlan plan = sched_->plan_step();
    for (RequestId id : plan.rejected) on_reject_(id, "prompt needs more KV blocks than the prefill worker holds");
    if (plan.empty()) {
      if (!drained_) {
        // Later stages still run chunks the scheduler has counted: their outcome first, then new work.
        if (!drain()) await_repair();
        continue;
      }
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
