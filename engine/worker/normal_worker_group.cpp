#include "engine/worker/normal_worker_group.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <numeric>
#include <stdexcept>
#include <string>
#include <utility>

#include "engine/eplb/expert_moves.h"
#include "engine/exec/two_batch_split.h"
#include "engine/model/activation_reserve.h"
#include "engine/model/kv_budget.h"
#include "engine/model/kv_footprint.h"
#include "engine/model/weight_dtypes.h"

namespace nvl::engine {

namespace {

// The attention TP degree, checked before anything is split by it.
std::int64_t checked_tp(const ModelProfile& model, std::int64_t tp, std::size_t gpus) {
  const auto n = static_cast<std::int64_t>(gpus);
  if (n < 1) throw std::invalid_argument("normal worker group: needs at least one GPU");
  if (tp < 1 || n % tp != 0) {
    throw std::invalid_argument("normal worker group: attention TP " + std::to_string(tp) + " does not divide its " +
                                std::to_string(n) + " GPUs into DP ranks");
  }
  if (model.num_attention_heads % tp != 0) {
    throw std::invalid_argument("normal worker group: attention TP " + std::to_string(tp) + " does not divide " +
                                model.name + "'s " + std::to_string(model.num_attention_heads) + " attention heads");
  }
  return tp;
}

}  // namespace

NormalWorkerGroup::NormalWorkerGroup(rt::Runtime& rt, const ModelProfile& model, std::vector<hal::Device*> devices,
                                     hal::Collectives& collectives, NormalGroupConfig cfg, TokenSink on_tokens,
                                     RejectSink on_reject)
    : rt_(rt),
      model_(model),
      cfg_(std::move(cfg)),
      on_tokens_(std::move(on_tokens)),
      on_reject_(std::move(on_reject)),
      tp_(checked_tp(model, cfg_.attention_tp, devices.size())),
      kernels_(model, tp_, cfg_.weights, cfg_.kv_dtype),
      collectives_(collectives),
      repair_(rt, "normal group: repair after a failed step"),
      between_(rt, "normal group: between steps"),
      work_(rt, "normal group: new requests") {
  work_.mark_idle_point();
  const auto n = static_cast<std::int64_t>(devices.size());
  for (const hal::Device* d : devices) check_weight_dtypes(cfg_.weights, d->info());
  if (cfg_.scheduler.draft_tokens > 0 && model.num_nextn_predict_layers == 0) {
    throw std::invalid_argument("normal worker group: draft tokens need MTP modules, and " + model.name + " has none");
  }
  const std::int64_t dp = n / tp_;
  const ParallelLayout layout{
      .tp = tp_, .dp = dp, .ep = cfg_.expert_parallel ? n : 1, .redundant_experts = cfg_.redundant_experts};
  weights_ = weight_footprint_per_gpu(model, layout, cfg_.weights);
  const std::uint64_t per_token = kv_bytes_per_token(model, cfg_.kv_dtype, true).total();
  block_bytes_ = per_token * static_cast<std::uint64_t>(cfg_.block_tokens);
  // MLA (and DSA) keeps one latent per token that every head reads, so each TP rank of a DP rank holds
  // the whole KV of its rank's requests, as SGLang replicates MLA KV over attention-TP ranks: a DP
  // rank holds what one of its GPUs holds. GQA's KV heads split over the ranks when tp divides them.
  const bool split = !model.is_mla() && model.num_key_value_heads % tp_ == 0;
  gpu_block_bytes_ = split ? per_token / static_cast<std::uint64_t>(tp_) * static_cast<std::uint64_t>(cfg_.block_tokens)
                           : block_bytes_;
  const std::int64_t sampled = cfg_.scheduler.max_running * (1 + cfg_.scheduler.draft_tokens);
  reserve_bytes_ = cfg_.activation_reserve_bytes.value_or(
      estimate_activation_reserve(model, cfg_.scheduler.token_budget, sampled, tp_).total_bytes());

  if (cfg_.eplb_interval_steps < 0 || !(cfg_.eplb_min_improvement >= 0 && cfg_.eplb_min_improvement < 1)) {
    throw std::invalid_argument(
        "normal worker group: eplb_interval_steps must be >= 0 and eplb_min_improvement in [0, 1)");
  }
  if (cfg_.sm_partition_prefill != 0 && !(cfg_.sm_partition_prefill > 0 && cfg_.sm_partition_prefill < 1)) {
    throw std::invalid_argument("normal worker group: sm_partition_prefill must be 0 (one batch) or in (0, 1)");
  }
  if (sm_partitioned() && cfg_.two_batch_overlap) {
    throw std::invalid_argument("normal worker group: SM partitions and two-batch overlap exclude each other");
  }
  if (cfg_.single_batch_overlap) {
    if (cfg_.two_batch_overlap) {
      throw std::invalid_argument("normal worker group: single-batch and two-batch overlap exclude each other");
    }
    const int sms = devices.front()->info().sm_count;
    if (cfg_.sbo_combine_sms < 1 || cfg_.sbo_combine_sms >= sms) {
      throw std::invalid_argument("normal worker group: sbo_combine_sms " + std::to_string(cfg_.sbo_combine_sms) +
                                  " must leave the down GEMM some of the " + std::to_string(sms) + " SMs (1 to " +
                                  std::to_string(sms - 1) + ")");
    }
  }
  if (!cfg_.moe_all_to_all && (!cfg_.expert_parallel || n < 2 || dp != 1 || cfg_.two_batch_overlap ||
                               cfg_.single_batch_overlap)) {
    throw std::invalid_argument(
        "normal worker group: EP without all-to-alls needs EP over one attention TP group (dp 1), without "
        "two- or single-batch overlap");
  }
  std::vector<hal::DeviceId> ids;
  for (hal::Device* d : devices) ids.push_back(d->id());
  if (n > 1 && cfg_.expert_parallel) {
    // Nothing is known of the popularity before the first steps: the experts start spread evenly, as an
    // engine started without a recorded expert distribution places them.
    placement_.emplace(uniform_expert_load(model.n_routed_experts), n, cfg_.redundant_experts);
    for (auto& t : traffic_) t.emplace(*placement_);
    traffic_b_.emplace(*placement_);
    expert_bytes_ = weights_.routed_expert_bytes / static_cast<std::uint64_t>(weights_.expert_slots);
    routed_counts_.assign(static_cast<std::size_t>(model.n_routed_experts), 0);
    seen_counts_.assign(static_cast<std::size_t>(model.n_routed_experts), 0);
  } else if (cfg_.two_batch_overlap || cfg_.single_batch_overlap) {
    throw std::invalid_argument(std::string("normal worker group: ") +
                                (cfg_.two_batch_overlap ? "two" : "single") +
                                "-batch overlap needs expert parallelism (two or more GPUs)");
  } else if (cfg_.eplb_interval_steps > 0) {
    throw std::invalid_argument("normal worker group: EPLB rebalancing needs expert parallelism (two or more GPUs)");
  }
  if (!placement_ && model.n_routed_experts > 0) {
    // Without EP every GPU holds a slice of every expert and reads the slices of those the step's tokens
    // chose: the routing is kept as the whole model on one rank.
    for (auto& t : traffic_) t.emplace(ExpertPlacement(uniform_expert_load(model.n_routed_experts), 1, 0));
  }
  moe_gather_ = !cfg_.expert_parallel && dp > 1;
  make_moe_groups(ids);

  ranks_.resize(static_cast<std::size_t>(dp));
  for (std::int64_t r = 0; r < dp; ++r) {
    Rank& rank = ranks_[static_cast<std::size_t>(r)];
    const std::string tag = "normal rank " + std::to_string(r);
    const auto gpu_tag = [&](const Gpu& g) { return tp_ == 1 ? tag : tag + " TP " + std::to_string(g.tp_rank); };
    rank.gpus.resize(static_cast<std::size_t>(tp_));
    for (std::int64_t t = 0; t < tp_; ++t) {
      Gpu& g = rank.gpus[static_cast<std::size_t>(t)];
      g.device = devices[static_cast<std::size_t>(r * tp_ + t)];
      g.tp_rank = static_cast<std::int32_t>(t);
      g.weights = g.device->memory().allocate(weights_.total_bytes(), gpu_tag(g) + " weights");
    }
    // Every GPU of the rank holds the same blocks, so its smallest HBM left sets the rank's count.
    std::int64_t gpu_blocks = -1;
    for (Gpu& g : rank.gpus) {
      const std::int64_t here = kv_blocks_left(*g.device, weights_.total_bytes(), reserve_bytes_, gpu_block_bytes_);
      gpu_blocks = gpu_blocks < 0 ? here : std::min(gpu_blocks, here);
    }
    kv_bytes_ = static_cast<std::uint64_t>(gpu_blocks) * block_bytes_;
    // Each GPU keeps its part of the Grace tier in its own Grace memory (under MLA a whole copy), as
    // each TP rank of SGLang's HiCache has its own host pool.
    const std::int64_t grace_blocks = cfg_.grace_policy == GraceTierPolicy::off
                                          ? 0
                                          : static_cast<std::int64_t>(cfg_.grace_bytes_per_rank / block_bytes_);
    for (Gpu& g : rank.gpus) {
      g.kv_gpu =
          g.device->memory().allocate(static_cast<std::uint64_t>(gpu_blocks) * gpu_block_bytes_, gpu_tag(g) + " KV");
      if (cfg_.grace_policy != GraceTierPolicy::off) {
        g.kv_grace = g.device->host_memory().allocate(static_cast<std::uint64_t>(grace_blocks) * gpu_block_bytes_,
                                                      gpu_tag(g) + " KV (Grace)");
        g.load_stream = &g.device->create_stream(gpu_tag(g) + " KV load");
        g.offload_stream = &g.device->create_stream(gpu_tag(g) + " KV offload");
        g.offloads_done = g.device->create_event(gpu_tag(g) + " KV offloads");
      }
    }
    rank.kv = std::make_unique<KvCacheManager>(KvCacheConfig{.rank = cfg_.first_rank + static_cast<std::int32_t>(r),
                                                             .gpu_blocks = gpu_blocks,
                                                             .grace_blocks = grace_blocks,
                                                             .block_tokens = cfg_.block_tokens,
                                                             .block_bytes = block_bytes_,
                                                             .grace_policy = cfg_.grace_policy});
    rank.sched = std::make_unique<RankScheduler>(*rank.kv, cfg_.scheduler, make_scheduling_policy(cfg_.scheduling_policy));
    for (Gpu& g : rank.gpus) {
      if (sm_partitioned()) {
        // Green contexts: each side's kernels run on its own share of the SMs.
        g.stream = &g.device->create_stream(gpu_tag(g) + " decode", 1 - cfg_.sm_partition_prefill);
        g.stream_p = &g.device->create_stream(gpu_tag(g) + " prefill", cfg_.sm_partition_prefill);
      } else {
        g.stream = &g.device->create_stream(gpu_tag(g));
      }
      if (cfg_.two_batch_overlap) {
        // The micro-batches' kernels take turns as SGLang issues them, so that one's all-to-all runs
        // beside the other's compute rather than both streams computing, then waiting, together.
        g.stream_b = &g.device->create_stream_taking_turns(gpu_tag(g) + " micro-batch 2", *g.stream);
        g.copies_done = g.device->create_event(gpu_tag(g) + " KV copies");
      }
    }
    make_tp_groups(rank, static_cast<std::size_t>(r));
    make_builders(rank, static_cast<std::int32_t>(r * tp_));
    live_.push_back(static_cast<std::size_t>(r));
  }
  for (auto& t : tokens_) t.resize(static_cast<std::size_t>(n));
  tokens_a_.resize(static_cast<std::size_t>(n));
  tokens_b_.resize(static_cast<std::size_t>(n));
}

void NormalWorkerGroup::start() {
  if (started_) throw std::logic_error("normal worker group started twice");
  started_ = true;
  if (sm_partitioned()) {
    rt_.spawn("normal-group-decode", [this] { loop(StepKind::decode); }, rt::SpawnOptions{.daemon = true});
    rt_.spawn("normal-group-prefill", [this] { loop(StepKind::prefill); }, rt::SpawnOptions{.daemon = true});
  } else {
    rt_.spawn("normal-group", [this] { loop(StepKind::batch); }, rt::SpawnOptions{.daemon = true});
  }
}

void NormalWorkerGroup::submit(std::int32_t rank, RequestState request) {
  Rank& r = ranks_.at(static_cast<std::size_t>(rank));
  if (!r.live) throw std::logic_error("normal worker group: request " + std::to_string(request.id) + " sent to rank " +
                                      std::to_string(rank) + ", which is out of the group");
  r.sched->enqueue(std::move(request));
  new_work_.fill(true);
  work_.notify_all();
}

bool NormalWorkerGroup::cancel(std::int32_t rank, RequestId id) {
  return ranks_.at(static_cast<std::size_t>(rank)).sched->cancel(id);
}

std::optional<AdmitPlan> NormalWorkerGroup::receive(std::int32_t rank, RequestState request) {
  return ranks_.at(static_cast<std::size_t>(rank)).sched->receive(std::move(request));
}

void NormalWorkerGroup::received(std::int32_t rank, RequestId id) {
  on_tokens_(rank, ranks_.at(static_cast<std::size_t>(rank)).sched->received(id));
  new_work_.fill(true);
  work_.notify_all();
}

void NormalWorkerGroup::receive_failed(std::int32_t rank, RequestId id) {
  ranks_.at(static_cast<std::size_t>(rank)).sched->receive_failed(id);
  new_work_.fill(true);
  work_.notify_all();
}

std::vector<hal::DeviceId> NormalWorkerGroup::devices_of(std::int32_t rank) const {
  std::vector<hal::DeviceId> ids;
  for (const Gpu& g : ranks_.at(static_cast<std::size_t>(rank)).gpus) ids.push_back(g.device->id());
  return ids;
}

void NormalWorkerGroup::make_tp_groups(Rank& rank, std::size_t index) {
  if (tp_ == 1) return;
  std::vector<hal::DeviceId> ids;
  for (const Gpu& g : rank.gpus) ids.push_back(g.device->id());
  std::string name = "normal-tp" + std::to_string(tp_) + ".r" + std::to_string(index);
  if (generation_ > 0) name += ".g" + std::to_string(generation_);
  rank.tp_group = collectives_.create_group(name, ids);
  // Each micro-batch's all-reduces on a communicator of their own, as its all-to-alls are.
  if (cfg_.two_batch_overlap) rank.tp_group_b = collectives_.create_group(name + "-tbo", ids);
  if (sm_partitioned()) rank.tp_group_p = collectives_.create_group(name + "-prefill", ids);
}

void NormalWorkerGroup::make_moe_groups(const std::vector<hal::DeviceId>& ids) {
  if ((!placement_ && !moe_gather_) || ids.empty()) return;
  std::string name = (moe_gather_ ? "moe-tp" : "ep") + std::to_string(ids.size());
  if (generation_ > 0) name += ".g" + std::to_string(generation_);
  moe_group_ = collectives_.create_group(name, ids);
  if (cfg_.two_batch_overlap) moe_group_b_ = collectives_.create_group(name + "-tbo", ids);
  if (sm_partitioned()) moe_group_p_ = collectives_.create_group(name + "-prefill", ids);
}

std::uint64_t NormalWorkerGroup::moe_tp_slice_bytes(std::size_t live_ranks) const {
  // weights_ holds the slice of the whole group's GPUs.
  const std::uint64_t all = weights_.routed_expert_bytes * ranks_.size() * static_cast<std::uint64_t>(tp_);
  return all / (live_ranks * static_cast<std::uint64_t>(tp_));
}

void NormalWorkerGroup::make_builders(Rank& rank, std::int32_t member) {
  // One builder per stream of each GPU: the step's, the second micro-batch's, the prefill side's; each
  // over its own communicators.
  const double sms = rank.gpus.front().device->info().sm_count;
  const double overlap_sm_fraction = cfg_.single_batch_overlap ? (sms - cfg_.sbo_combine_sms) / sms : 1.0;
  const auto builder = [&](const Gpu& g, const std::shared_ptr<hal::CommGroup>& moe, std::shared_ptr<hal::CommGroup> tp,
                           const std::optional<MoeTraffic>& traffic) {
    return std::make_unique<StepGraphBuilder>(kernels_, traffic ? &*traffic : nullptr,
                                              StepGraphOptions{.ep_group = moe_gather_ ? nullptr : moe,
                                                               .tp_group = std::move(tp),
                                                               .rank = member + g.tp_rank,
                                                               .local_experts = weights_.expert_slots,
                                                               .mtp = cfg_.scheduler.draft_tokens > 0,
                                                               .tp_rank = g.tp_rank,
                                                               .moe_tp_group = moe_gather_ ? moe : nullptr,
                                                               .single_batch_overlap = cfg_.single_batch_overlap,
                                                               .overlap_sm_fraction = overlap_sm_fraction,
                                                               .ep_all_to_all = cfg_.moe_all_to_all});
  };
  for (Gpu& g : rank.gpus) {
    g.builder = builder(g, moe_group_, rank.tp_group, traffic_[lane(StepKind::decode)]);
    if (cfg_.two_batch_overlap) g.builder_b = builder(g, moe_group_b_, rank.tp_group_b, traffic_b_);
    if (sm_partitioned()) g.builder_p = builder(g, moe_group_p_, rank.tp_group_p, traffic_[lane(StepKind::prefill)]);
  }
}

RankLoad NormalWorkerGroup::load(std::int32_t rank) const {
  const Rank& r = ranks_.at(static_cast<std::size_t>(rank));
  RankLoad l;
  l.healthy = r.live && !r.leaving;
  l.running = static_cast<std::int64_t>(r.sched->running() + r.sched->receiving());
  l.waiting = static_cast<std::int64_t>(r.sched->waiting());
  l.tokens_in_flight = r.sched->tokens_in_flight();
  l.free_kv_blocks = r.kv->gpu_available_blocks();
  return l;
}

bool NormalWorkerGroup::plan_all(StepKind kind) {
  const std::size_t l = lane(kind);
  bool any = false;
  for (std::size_t m = 0; m < live_.size(); ++m) {
    const std::size_t r = live_[m];
    Rank& rank = ranks_[r];
    StepPlan& plan = rank.plan[l];
    RankBatch& batch = rank.batch[l];
    plan = rank.sched->plan_step(kind);
    if (!rank.crashed) try {
      // Loads start now, whether or not this step has work: the requests they are for wait for them.
      issue_kv_copies(r, kind);
    } catch (const hal::HalError& e) {
      // A dead GPU: this step fails on it too, and the rank's recovery takes its requests.
      rt_.record("normal-group", "kv_copy_failed", {{"rank", cfg_.first_rank + static_cast<std::int32_t>(r)}, {"error", e.what()}},
                 rt::Severity::warning);
    }
    for (RequestId id : plan.rejected) {
      on_reject_(static_cast<std::int32_t>(r), id, "prompt and output need more KV blocks than rank " + std::to_string(r) + " holds");
    }
    batch.prefills.clear();
    batch.decodes.clear();
    for (const StepItem& item : plan.items) {
      if (item.decode) {
        batch.decodes.push_back(DecodeSpan{item.context_tokens, item.new_tokens});
      } else {
        batch.prefills.push_back(PrefillSpan{item.context_tokens, item.new_tokens, item.last_chunk});
      }
    }
    const std::int64_t tokens = batch.tokens();
    for (std::int64_t t = 0; t < tp_; ++t) {
      tokens_[l][m * static_cast<std::size_t>(tp_) + static_cast<std::size_t>(t)] = tp_slice(tokens, t, tp_);
    }
    any = any || !plan.empty();
  }
  return any;
}

void NormalWorkerGroup::issue_kv_copies(std::size_t rank, StepKind kind) {
  Rank& r = ranks_[rank];
  const std::vector<KvCopy> copies = r.kv->take_copies();
  if (copies.empty() || !r.gpus.front().kv_grace) return;
  // Each GPU moves its part of the blocks: all of them under MLA, its KV heads' share under GQA.
  const std::uint64_t parts = block_bytes_ / gpu_block_bytes_;
  bool offloaded = false;
  for (const KvCopy& c : copies) {
    const bool load = c.direction == KvCopy::Direction::grace_to_gpu;
    // A load's request runs once the last of its GPUs' parts is in.
    auto left = std::make_shared<std::size_t>(r.gpus.size());
    for (Gpu& g : r.gpus) {
      const hal::Buffer& dst = load ? *g.kv_gpu : *g.kv_grace;
      const hal::Buffer& src = load ? *g.kv_grace : *g.kv_gpu;
      const std::uint64_t bytes = std::min({c.bytes / parts, dst.bytes(), src.bytes()});
      hal::Stream& stream = load ? *g.load_stream : *g.offload_stream;
      if (bytes > 0) stream.copy(dst, 0, src, 0, bytes);
      offloaded = offloaded || !load;
      if (load) {
        stream.add_callback([this, rank, id = c.request, left](const hal::HalError* error) {
          if (--*left == 0 || error != nullptr) kv_loaded(rank, id, error);
        });
      }
    }
  }
  if (!offloaded || cfg_.grace_policy != GraceTierPolicy::write_back) return;
  for (Gpu& g : r.gpus) {
    g.offload_stream->record(*g.offloads_done);
    stream_of(g, kind).wait(*g.offloads_done);
  }
}

void NormalWorkerGroup::kv_loaded(std::size_t rank, RequestId id, const hal::HalError* error) {
  if (error != nullptr) {
    // The GPU or its C2C failed under the load: the step on it fails too, and the rank's recovery
    // decides what becomes of the request. It is released to run (or fail) with the rest.
    rt_.record("normal-group", "kv_load_failed",
               {{"rank", cfg_.first_rank + static_cast<std::int32_t>(rank)}, {"request", id}, {"error", error->what()}},
               rt::Severity::warning);
  }
  if (!ranks_[rank].sched->loaded(id)) return;
  new_work_.fill(true);
  work_.notify_all();
}

hal::Device& NormalWorkerGroup::member_device(std::size_t member) {
  const auto tp = static_cast<std::size_t>(tp_);
  return *ranks_[live_[member / tp]].gpus[member % tp].device;
}

void NormalWorkerGroup::route(std::span<const std::int64_t> tokens, MoeTraffic& traffic) {
  const std::int64_t top_k = model_.num_experts_per_tok;
  if (!placement_) {
    // One routing of every member's tokens: each GPU computes its slices of every expert chosen.
    routed_.resize(2);
    routed_[0].clear();
    for (std::size_t m = 0; m < tokens.size(); ++m) {
      member_device(m).outcomes().route_tokens(tokens[m], top_k, model_.n_routed_experts, routed_[1]);
      routed_[0].insert(routed_[0].end(), routed_[1].begin(), routed_[1].end());
    }
    traffic.assign(std::span(routed_).first(1));
    return;
  }
  routed_.resize(tokens.size());
  for (std::size_t m = 0; m < tokens.size(); ++m) {
    member_device(m).outcomes().route_tokens(tokens[m], top_k, model_.n_routed_experts, routed_[m]);
    for (const hal::RoutedExpert& x : routed_[m]) {
      const auto e = static_cast<std::size_t>(x.expert);
      routed_counts_[e] += static_cast<std::uint64_t>(x.tokens);
      seen_counts_[e] += static_cast<std::uint64_t>(x.tokens);
    }
  }
  traffic.assign(routed_);
  std::int64_t most = 0, total = 0;
  for (std::int64_t d = 0; d < traffic.ranks(); ++d) {
    most = std::max(most, traffic.expert_pairs(d));
    total += traffic.expert_pairs(d);
  }
  most_pairs_ += static_cast<double>(most);
  mean_pairs_ += static_cast<double>(total) / static_cast<double>(traffic.ranks());
}

void NormalWorkerGroup::set_traffic_placement() {
  for (auto& t : traffic_) t->set_placement(*placement_);
  traffic_b_->set_placement(*placement_);
}

ExpertLoad NormalWorkerGroup::seen_load() const {
  const bool any = std::any_of(seen_counts_.begin(), seen_counts_.end(), [](std::uint64_t c) { return c > 0; });
  return any ? expert_load_from_counts(seen_counts_) : uniform_expert_load(model_.n_routed_experts);
}

bool NormalWorkerGroup::two_batch_step() const {
  if (!cfg_.two_batch_overlap) return false;
  std::int64_t prefill = 0, decode = 0;
  // A decode step overlaps when every rank that decodes can give each micro-batch a request: the ranks
  // agree on it, as SGLang's DP ranks do before a step, since their all-to-alls must pair up.
  bool decodes_split = true;
  for (std::size_t i : live_) {
    const Rank& r = ranks_[i];
    prefill += r.plan[0].prefill_tokens;
    decode += r.plan[0].decode_tokens;
    const std::size_t decodes = r.batch[0].decodes.size();
    decodes_split = decodes_split && (decodes == 0 || decodes >= 2);
  }
  if (prefill > decode) return true;
  return prefill == 0 && decode > 0 && decodes_split;
}

hal::Graph NormalWorkerGroup::numbered(hal::Graph step, std::int32_t micro_batch) const {
  step.label().step = static_cast<std::int64_t>(steps_);
  step.label().micro_batch = micro_batch;
  return step;
}

void NormalWorkerGroup::launch_two_batches() {
  std::vector<std::array<RankBatch, 2>> micro;
  micro.reserve(live_.size());
  for (std::size_t i = 0; i < live_.size(); ++i) {
    micro.push_back(split_two_batches(ranks_[live_[i]].batch[0]));
    const std::int64_t a = micro.back()[0].tokens(), b = micro.back()[1].tokens();
    for (std::int64_t t = 0; t < tp_; ++t) {
      const std::size_t member = i * static_cast<std::size_t>(tp_) + static_cast<std::size_t>(t);
      tokens_a_[member] = tp_slice(a, t, tp_);
      tokens_b_[member] = tp_slice(b, t, tp_);
    }
  }
  route(tokens_a_, *traffic_[lane(StepKind::decode)]);
  route(tokens_b_, *traffic_b_);
  for (std::size_t i = 0; i < live_.size(); ++i) {
    for (Gpu& g : ranks_[live_[i]].gpus) {
      // Both micro-batches start after what the first stream waits for (write-back offloads).
      g.stream->record(*g.copies_done);
      g.stream_b->wait(*g.copies_done);
      g.stream->launch(hal::refresh(*g.device, g.exec, numbered(g.builder->build(micro[i][0], tokens_a_), 0)));
      g.stream_b->launch(hal::refresh(*g.device, g.exec_b, numbered(g.builder_b->build(micro[i][1], tokens_b_), 1)));
    }
  }
}

void NormalWorkerGroup::loop(StepKind kind) {
  const std::size_t l = lane(kind);
  for (;;) {
    // A rank change asked for during the other side's step, or a repair, comes before a new step.
    between_.wait([this] { return deferred_.empty() && !failed_; });
    new_work_[l] = false;
    ++stepping_;
    if (!plan_all(kind)) {
      step_over();
      // Work that arrived while planning (a reject handler may route more here) is not slept through.
      work_.wait([this, l] { return new_work_[l]; });
      continue;
    }
    if (!run_step(kind)) {
      // The first side to fail repairs the group; a side failing meanwhile waits for that repair.
      const bool repairs = !failed_;
      if (repairs) {
        failed_ = true;
        repaired_ = false;
      }
      step_over();
      if (repairs) {
        await_repair();
        failed_ = false;
        between_.notify_all();
      }
      continue;
    }
    for (std::size_t m = 0; m < live_.size(); ++m) {
      Rank& r = ranks_[live_[m]];
      // The rank's first GPU verifies its drafts (every TP rank holds the same tokens).
      hal::StepOutcomes& outcomes = r.gpus.front().device->outcomes();
      const auto accepted = [&](RequestId) { return outcomes.accepted_drafts(cfg_.scheduler.draft_tokens); };
      for (const StepOutcome& o : r.sched->complete_step(r.plan[l], accepted)) {
        on_tokens_(static_cast<std::int32_t>(live_[m]), o);
      }
    }
    ++steps_;
    if (placement_) track_experts();
    if (sm_partitioned()) {
      // Prefills that finished now decode; decodes that finished freed KV and running slots.
      new_work_.fill(true);
      work_.notify_all();
    }
    step_over();
  }
}

void NormalWorkerGroup::step_over() {
  if (--stepping_ > 0) return;
  // In order, each left queued while it runs, so that no side starts a step meanwhile (a rebalance
  // waits for its weights to move) and changes asked for during it apply after it.
  while (!deferred_.empty()) {
    const std::function<void()> change = std::move(deferred_.front());
    change();
    deferred_.erase(deferred_.begin());
  }
  between_.notify_all();
}

void NormalWorkerGroup::track_experts() {
  // The rebalance sees the steps before it (their routing was counted when it was drawn).
  if (cfg_.eplb_interval_steps <= 0 || steps_ % static_cast<std::uint64_t>(cfg_.eplb_interval_steps) != 0) return;
  if (sm_partitioned()) {
    // The weights move while no step runs: once the other side's step has ended too. Rank changes
    // asked for meanwhile wait for it, as they wait for a step.
    deferred_.push_back([this] {
      ++stepping_;
      rebalance();
      --stepping_;
    });
  } else {
    rebalance();
  }
}

void NormalWorkerGroup::rebalance() {
  if (live_.size() != ranks_.size()) return;  // a shrunk group keeps the placement its losses gave it
  if (std::all_of(routed_counts_.begin(), routed_counts_.end(), [](std::uint64_t c) { return c == 0; })) return;
  const ExpertLoad seen = expert_load_from_counts(routed_counts_);
  std::fill(routed_counts_.begin(), routed_counts_.end(), 0);
  ExpertPlacement next(seen, placement_->ranks(), cfg_.redundant_experts);
  if (next.imbalance(seen) >= placement_->imbalance(seen) * (1 - cfg_.eplb_min_improvement)) return;
  const std::int64_t slots = placement_->slots_changed_to(next);
  const double before = placement_->imbalance(seen);
  const auto moves = expert_move_bytes(*placement_, next, expert_bytes_);
  std::uint64_t bytes = 0;
  for (const auto& row : moves) bytes += std::accumulate(row.begin(), row.end(), std::uint64_t{0});
  // The weights move rank to rank on the EP group as one all-to-all; no step runs meanwhile.
  const rt::Time start = rt_.now();
  std::size_t member = 0;
  for (Rank& r : ranks_) {
    for (Gpu& gpu : r.gpus) {
      hal::CollectiveOp op;
      op.kind = hal::CollectiveKind::all_to_all;
      op.name = "eplb.weights";
      op.send_bytes = moves[member];
      hal::Graph g("eplb_rebalance");
      g.add(hal::CollectiveCall{moe_group_, static_cast<int>(member), std::move(op)});
      gpu.stream->launch(gpu.device->instantiate(g));
      ++member;
    }
  }
  for (Rank& r : ranks_) {
    for (Gpu& g : r.gpus) g.stream->synchronize();
  }
  placement_ = std::move(next);
  set_traffic_placement();
  rt_.record("eplb", "rebalanced",
             {{"step", steps_},
              {"imbalance_before", before},
              {"imbalance_after", placement_->imbalance(seen)},
              {"slots_moved", slots},
              {"bytes_moved", bytes},
              {"duration_ns", (rt_.now() - start).ns()}});
}

}  // namespace nvl::engine
