#include "engine/worker/prefill_worker.h"

#include <algorithm>
#include <stdexcept>

#include "engine/model/activation_reserve.h"
#include "engine/model/kv_budget.h"
#include "engine/model/kv_footprint.h"
#include "engine/model/weight_dtypes.h"

namespace nvl::engine {

namespace {

// The TP degree (the GPUs of one DP rank of one pipeline stage), checked before anything is split by it.
std::int64_t checked_tp(const ModelProfile& model, std::size_t gpus, const PrefillWorkerConfig& cfg) {
  const auto n = static_cast<std::int64_t>(gpus);
  const std::int64_t pp = cfg.pipeline_stages, dp = cfg.attention_dp;
  if (n < 1) throw std::invalid_argument("prefill worker: needs at least one GPU");
  if (pp < 1 || n % pp != 0) {
    throw std::invalid_argument("prefill worker: " + std::to_string(pp) + " pipeline stages do not divide its " +
                                std::to_string(n) + " GPUs");
  }
  if (dp < 1 || n % dp != 0) {
    throw std::invalid_argument("prefill worker: " + std::to_string(dp) + " DP attention ranks do not divide its " +
                                std::to_string(n) + " GPUs");
  }
  if (dp > 1 && pp > 1) throw std::invalid_argument("prefill worker: DP attention ranks with pipeline stages are not modelled");
  const std::int64_t tp = n / (pp * dp);
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
      kernels_(model, checked_tp(model, devices.size(), cfg_), cfg_.weights, cfg_.kv_dtype),
      work_(rt, "prefill worker: new requests"),
      repair_(rt, "prefill worker: repair after a failed step") {
  work_.mark_idle_point();
  const std::int64_t tp = kernels_.tp();
  if (cfg_.kv_layer_groups < 1) throw std::invalid_argument("prefill worker: kv_layer_groups must be at least 1");
  if (cfg_.scheduler.draft_tokens != 0) throw std::invalid_argument("prefill worker: a prefill step drafts no MTP tokens");
  for (const hal::Device* d : devices) check_weight_dtypes(cfg_.weights, d->info());
  const std::int64_t dp = cfg_.attention_dp;
  const std::int64_t members = tp * dp;  // a stage's GPUs
  const bool ep = cfg_.expert_parallel && members > 1;
  if (!cfg_.moe_all_to_all && (!ep || dp != 1)) {
    throw std::invalid_argument("prefill worker: EP without all-to-alls needs EP over the TP group (dp 1)");
  }
  const ParallelLayout layout{.tp = tp, .dp = dp, .ep = ep ? members : 1};

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
    // Placed once, evenly: the instance knows nothing of the popularity, and rebalances never.
    placement_.emplace(uniform_expert_load(model.n_routed_experts), members, 0);
    for (Stage& stage : stages_) stage.traffic.emplace(*placement_);
  }
  gpus_.resize(devices.size());
  for (std::size_t i = 0; i < devices.size(); ++i) gpus_[i].device = devices[i];
  ranks_.resize(static_cast<std::size_t>(dp));
  for (std::int64_t s = 0; s < pp(); ++s) create_groups(s, "");

  // Every GPU of a stage holds the same share, so the smallest room for blocks sets the block count
  // of the whole worker.
  std::int64_t blocks = -1;
  for (std::int64_t s = 0; s < pp(); ++s) {
    const Stage& stage = stages_[static_cast<std::size_t>(s)];
    const std::uint64_t gpu_block_bytes = stage.kv_per_gpu_token * static_cast<std::uint64_t>(cfg_.block_tokens);
    for (std::int64_t m = 0; m < members; ++m) {
      Gpu& g = gpu(s, m);
      const std::string tag = (pp() > 1 ? "prefill stage " + std::to_string(s) + " rank "
                               : dp > 1 ? "prefill DP rank " + std::to_string(m / tp) + " TP rank "
                                        : "prefill rank ") +
                              std::to_string(m % tp);
      g.weights = g.device->memory().allocate(stage.weights.total_bytes(), tag + " weights");
      const std::int64_t here = kv_blocks_left(*g.device, stage.weights.total_bytes(), reserve_bytes_, gpu_block_bytes);
      blocks = blocks < 0 ? here : std::min(blocks, here);
      g.stream = &g.device->create_stream(tag);
      g.builder = make_builder(stage, m);
    }
  }
  for (std::int64_t s = 0; s < pp(); ++s) {
    Stage& stage = stages_[static_cast<std::size_t>(s)];
    stage.kv_bytes_per_gpu = static_cast<std::uint64_t>(blocks) * stage.kv_per_gpu_token *
                             static_cast<std::uint64_t>(cfg_.block_tokens);
    for (std::int64_t m = 0; m < members; ++m) {
      gpu(s, m).kv = gpu(s, m).device->memory().allocate(stage.kv_bytes_per_gpu, "prefill KV");
    }
  }
  // The cache counts a block by the request's KV it holds (one copy), which is what a transfer moves.
  for (std::int64_t d = 0; d < dp; ++d) {
    DpRank& rank = ranks_[static_cast<std::size_t>(d)];
    rank.kv = std::make_unique<KvCacheManager>(KvCacheConfig{.rank = static_cast<std::int32_t>(d),
                                                             .gpu_blocks = blocks,
                                                             .grace_blocks = 0,
                                                             .block_tokens = cfg_.block_tokens,
                                                             .block_bytes = kv_bytes_per_token(model, cfg_.kv_dtype).total() * static_cast<std::uint64_t>(cfg_.block_tokens),
                                                             .grace_policy = GraceTierPolicy::off});
    rank.sched = std::make_unique<RankScheduler>(*rank.kv, cfg_.scheduler, make_scheduling_policy(cfg_.scheduling_policy));
  }
  tokens_.resize(static_cast<std::size_t>(members));
}

std::vector<hal::Device*> PrefillWorker::devices_of(std::int64_t stage, std::int32_t rank) const {
  std::vector<hal::Device*> devices;
  const std::size_t first = static_cast<std::size_t>(stage * members() + rank * tp());
  for (std::size_t i = first; i < first + static_cast<std::size_t>(tp()); ++i) devices.push_back(gpus_.at(i).device);
  return devices;
}

void PrefillWorker::create_groups(std::int64_t s, const std::string& suffix) {
  Stage& stage = stages_[static_cast<std::size_t>(s)];
  const std::int64_t tp = this->tp();
  const auto ids_of = [&](std::int64_t first, std::int64_t count) {
    std::vector<hal::DeviceId> ids;
    for (std::int64_t m = first; m < first + count; ++m) ids.push_back(gpu(s, m).device->id());
    return ids;
  };
  const std::string name = std::to_string(tp) + (pp() > 1 ? ".s" + std::to_string(s) : "") + suffix;
  stage.tp_groups.clear();
  for (std::int32_t d = 0; tp > 1 && d < ranks(); ++d) {
    stage.tp_groups.push_back(collectives_.create_group(
        "prefill-tp" + name + (ranks() > 1 ? ".d" + std::to_string(d) : ""), ids_of(d * tp, tp)));
  }
  if (placement_) {
    const std::string ep_name = ranks() > 1 ? std::to_string(members()) + suffix : name;
    stage.ep_group = collectives_.create_group("prefill-ep" + ep_name, ids_of(0, members()));
  } else if (ranks() > 1) {
    stage.moe_tp_group = collectives_.create_group("prefill-moe-tp" + std::to_string(members()) + suffix, ids_of(0, members()));
  }
  stage.to_next.clear();
  if (stage.layers.last) return;
  for (std::int64_t r = 0; r < tp; ++r) {
    stage.to_next.push_back(collectives_.create_group(
        "prefill-pp" + std::to_string(s) + "to" + std::to_string(s + 1) + ".r" + std::to_string(r) + suffix,
        {gpu(s, r).device->id(), gpu(s + 1, r).device->id()}));
  }
}

std::unique_ptr<StepGraphBuilder> PrefillWorker::make_builder(const Stage& stage, std::int64_t member) const {
  const std::int64_t tp = this->tp();
  return std::make_unique<StepGraphBuilder>(
      kernels_, stage.traffic ? &*stage.traffic : nullptr,
      StepGraphOptions{.ep_group = stage.ep_group,
                       .tp_group = stage.tp_groups.empty() ? nullptr : stage.tp_groups[static_cast<std::size_t>(member / tp)],
                       .rank = static_cast<std::int32_t>(member),
                       .local_experts = stage.weights.expert_slots,
                       .mtp = false,
                       .tp_rank = ranks() > 1 ? std::optional<std::int32_t>(static_cast<std::int32_t>(member % tp)) : std::nullopt,
                       .moe_tp_group = stage.moe_tp_group,
                       .ep_all_to_all = cfg_.moe_all_to_all});
}

void PrefillWorker::start() {
  if (started_) throw std::logic_error("prefill worker started twice");
  started_ = true;
  rt_.spawn("prefill-worker", [this] { loop(); }, rt::SpawnOptions{.daemon = true});
}

void PrefillWorker::submit(std::int32_t rank, RequestState request) {
  if (!live_) throw std::logic_error("prefill worker: a request submitted while it is taken down");
  request.max_output_tokens = 1;
  request.hold_kv_after_finish = cfg_.hold_kv_for_transfer;
  ranks_.at(static_cast<std::size_t>(rank)).sched->enqueue(std::move(request));
  new_work_ = true;
  work_.notify_all();
}

bool PrefillWorker::cancel(RequestId id) {
  bool found = false;
  for (DpRank& r : ranks_) found = r.sched->cancel(id) || found;
  return found;
}

void PrefillWorker::release_kv(RequestId id) {
  if (std::none_of(ranks_.begin(), ranks_.end(), [id](DpRank& r) { return r.sched->release_held(id); })) {
    // Not held: a failed step put it back in the queue after its KV had all been sent (or its step is
    // still running). It need not run again.
    cancel(id);
    return;
  }
  new_work_ = true;  // the freed blocks may admit a waiting prompt
  work_.notify_all();
}

void PrefillWorker::launch_step() {
  struct Finishing {
    RequestId id;
    std::int64_t prompt_tokens;
  };
  std::vector<std::vector<Finishing>> finishing(ranks_.size());
  bool any_finishing = false;
  const std::int64_t tp = this->tp();
  std::int64_t n = 0;  // tokens of DP rank 0: what each pipeline stage hands on
  for (std::size_t d = 0; d < ranks_.size(); ++d) {
    DpRank& rank = ranks_[d];
    rank.batch.prefills.clear();
    rank.batch.decodes.clear();
    for (const StepItem& item : rank.plan.items) {
      rank.batch.prefills.push_back(PrefillSpan{item.context_tokens, item.new_tokens, item.last_chunk});
      if (item.last_chunk) finishing[d].push_back(Finishing{item.id, item.context_tokens + item.new_tokens});
    }
    any_finishing = any_finishing || !finishing[d].empty();
    // Under EP each GPU dispatches its own slice of its (TP-replicated) DP rank's batch.
    const std::int64_t tokens = rank.batch.tokens();
    if (d == 0) n = tokens;
    for (std::int64_t t = 0; t < tp; ++t) {
      tokens_[d * static_cast<std::size_t>(tp) + static_cast<std::size_t>(t)] = tp_slice(tokens, t, tp);
    }
  }

  const std::int64_t layers = model_.num_hidden_layers;
  for (std::int64_t s = 0; s < pp(); ++s) {
    Stage& stage = stages_[static_cast<std::size_t>(s)];
    if (stage.traffic) route(stage, s);
    const PipelineStage& range = stage.layers;
    const std::int64_t own = range.end_layer - range.first_layer;
    // Every rank cuts its layers alike: the EP collectives of a layer group join them all.
    const std::int64_t groups = any_finishing ? std::min(cfg_.kv_layer_groups, own) : 1;
    for (std::int64_t k = 0; k < groups; ++k) {
      const std::int64_t first = range.first_layer + own * k / groups, end = range.first_layer + own * (k + 1) / groups;
      for (std::int64_t m = 0; m < members(); ++m) {
        Gpu& g = gpu(s, m);
        const RankBatch& batch = ranks_[static_cast<std::size_t>(m / tp)].batch;
        hal::Graph step = g.builder->build_layers(batch, tokens_, first, end, range.last && k + 1 == groups);
        step.label().step = static_cast<std::int64_t>(steps_);
        g.stream->launch(g.device->instantiate(step));
      }
      if (!any_finishing) continue;
      // Layers that share a DSA indexer (IndexShare) store no indexer keys: count the bytes per layer.
      const std::uint64_t kv_per_token = kv_bytes_per_token_of_layers(model_, cfg_.kv_dtype, 0, end).total();
      for (std::size_t d = 0; d < ranks_.size(); ++d) {
        if (finishing[d].empty()) continue;
        // The rank's TP collectives align its GPUs, so its first GPU's stream tells when all of them
        // have written the group's layers.
        gpu(s, static_cast<std::int64_t>(d) * tp)
            .stream->add_callback([this, done = finishing[d], end, layers, kv_per_token](const hal::HalError* error) {
              if (error != nullptr || crashed_) return;  // the step failed (or its process died): it is undone
              for (const Finishing& f : done) {
                on_kv_ready_(f.id, end, layers, static_cast<std::uint64_t>(f.prompt_tokens) * kv_per_token);
              }
            });
      }
    }
    if (!range.last) hand_on(s, n);
  }
}

void PrefillWorker::route(Stage& stage, std::int64_t s) {
  routed_.resize(tokens_.size());
  for (std::size_t m = 0; m < tokens_.size(); ++m) {
    gpu(s, static_cast<std::int64_t>(m))
        .device->outcomes()
        .route_tokens(tokens_[m], model_.num_experts_per_tok, model_.n_routed_experts, routed_[m]);
  }
  stage.traffic->assign(routed_);
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

bool PrefillWorker::plan_all() {
  bool any = false;
  for (DpRank& rank : ranks_) {
    rank.plan = rank.sched->plan_step();
    for (RequestId id : rank.plan.rejected) on_reject_(id, "prompt needs more KV blocks than the prefill worker holds");
    any = any || !rank.plan.empty();
  }
  return any;
}

void PrefillWorker::loop() {
  for (;;) {
    apply_deferred();  // a take-down or return asked for while the last step ran
    new_work_ = false;
    if (!plan_all()) {
      if (!drained_) {
        // Later stages still run chunks the scheduler has counted: their outcome first, then new work.
        if (!drain()) await_repair();
        continue;
      }
      work_.wait([this] { return new_work_; });
      continue;
    }
    if (!run_step()) {
      await_repair();
      continue;
    }
    for (DpRank& rank : ranks_) {
      for (const StepOutcome& o : rank.sched->complete_step(rank.plan, [](RequestId) { return std::int64_t{0}; })) {
        if (!o.finished) continue;
        ++rank.prefilled;
        on_done_(o);
      }
    }
    ++steps_;
  }
}

}  // namespace nvl::engine
