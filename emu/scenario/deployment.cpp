#include "emu/scenario/deployment.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "emu/rt/errors.h"
#include "engine/hal/hal_error.h"
#include "engine/hal/types.h"
#include "engine/model/weight_dtypes.h"
#include "fakegpu/outcome_model.h"

namespace nvl::emu {

namespace {

engine::GraceTierPolicy grace_policy(const std::string& name) {
  if (name == "write_through") return engine::GraceTierPolicy::write_through;
  if (name == "write_back") return engine::GraceTierPolicy::write_back;
  return engine::GraceTierPolicy::off;
}

std::vector<hal::Device*> devices_of(EmulatedCluster& cluster, const std::vector<std::int64_t>& gpus) {
  std::vector<hal::Device*> out;
  for (std::int64_t g : gpus) out.push_back(&cluster.fleet().device(static_cast<hal::DeviceId>(g)));
  return out;
}

engine::LocalPrefill local_prefill_of(const std::string& role) {
  if (role == "decode") return engine::LocalPrefill::never;
  if (role == "aggregated") return engine::LocalPrefill::always;
  return engine::LocalPrefill::below_threshold;
}

engine::NormalGroupConfig group_config(const ScenarioDeployment& dep, const ScenarioPool& p) {
  engine::NormalGroupConfig g;
  g.attention_tp = p.tp;
  g.expert_parallel = p.ep > 1;
  g.weights = engine::weight_dtypes_from_name(p.weights);
  g.kv_dtype = hal::dtype_from_string(p.kv_dtype);
  g.block_tokens = dep.kv_block_tokens;
  g.grace_policy = grace_policy(dep.grace_tier);
  g.grace_bytes_per_rank = dep.grace_bytes_per_gpu;
  g.scheduler.token_budget = p.token_budget;
  g.scheduler.max_running = p.max_running;
  g.scheduler.chunk_tokens = p.chunk_tokens;
  g.scheduler.draft_tokens = p.mtp_draft_tokens;
  g.scheduler.mixed_batches = p.mixed_batches;
  g.two_batch_overlap = p.two_batch_overlap;
  g.single_batch_overlap = p.single_batch_overlap;
  g.moe_all_to_all = p.moe_all_to_all;
  if (p.sbo_combine_sms) g.sbo_combine_sms = static_cast<int>(*p.sbo_combine_sms);
  g.sm_partition_prefill = p.sm_partition_prefill;
  g.redundant_experts = p.eplb.redundant_experts;
  g.eplb_interval_steps = p.eplb.interval_steps;
  return g;
}

engine::PrefillWorkerConfig prefill_config(const ScenarioDeployment& dep, const ScenarioPool& p) {
  engine::PrefillWorkerConfig w;
  w.weights = engine::weight_dtypes_from_name(p.weights);
  w.kv_dtype = hal::dtype_from_string(p.kv_dtype);
  w.block_tokens = dep.kv_block_tokens;
  w.expert_parallel = p.ep > 1;
  w.moe_all_to_all = p.moe_all_to_all;
  w.pipeline_stages = p.pp;
  w.attention_dp = p.dp;
  w.scheduler.token_budget = p.token_budget;
  w.scheduler.max_running = p.max_running;
  w.scheduler.chunk_tokens = p.chunk_tokens;
  return w;
}

engine::PdDeployment pd_deployment(const Scenario& sc, EmulatedCluster& cluster) {
  const auto& dep = sc.deployment;
  engine::PdDeployment d;
  for (const ScenarioPool& p : dep.pools) {
    for (std::size_t i = 0; i < p.instance_gpus.size(); ++i) {
      const std::string name = p.name + "/" + std::to_string(i);
      if (p.decodes()) {
        d.decode.push_back(engine::DecodeInstance{.name = name,
                                                  .gpus = devices_of(cluster, p.instance_gpus[i]),
                                                  .group = group_config(dep, p),
                                                  .local_prefill = local_prefill_of(p.role)});
      } else {
        d.prefill.push_back(engine::PrefillInstance{
            .name = name, .gpus = devices_of(cluster, p.instance_gpus[i]), .worker = prefill_config(dep, p)});
      }
    }
  }
  d.system.router.prefill_threshold_tokens = dep.threshold_tokens;
  d.system.router.block_tokens = dep.kv_block_tokens;
  d.system.router.policy = dep.router_policy;
  d.system.router.cache_aware = engine::CacheAwareOptions{.cache_threshold = dep.router.cache_threshold,
                                                          .balance_abs_threshold = dep.router.balance_abs_threshold,
                                                          .balance_rel_threshold = dep.router.balance_rel_threshold};
  d.system.router.weights = engine::LoadWeights{.requests = dep.router.weight_requests,
                                                .tokens_in_flight_per_1k = dep.router.weight_tokens_in_flight_per_1k,
                                                .free_kv_per_1k_blocks = dep.router.weight_free_kv_per_1k_blocks};
  d.system.load_report_interval = rt::from_seconds(dep.router.load_report_interval_s);
  d.system.transfer.path = dep.kv_transfer_path == "nvlink" ? hal::RdmaPath::nvlink : hal::RdmaPath::scale_out;
  d.system.transfer.timeout = rt::from_seconds(dep.kv_transfer_timeout_s);
  d.system.kv_pool = dep.kv_pool;
  d.system.fetch_remote_prefix = dep.fetch_remote_prefix;
  d.system.health = engine::HealthConfig{.check_interval = rt::from_seconds(dep.health_check_interval_s),
                                         .detection_delay = rt::from_seconds(dep.fault_detection_delay_s),
                                         .gpu_reset_time = rt::from_seconds(dep.gpu_reset_s),
                                         .worker_restart_time = rt::from_seconds(dep.worker_restart_s)};
  d.system.router.prefill_worker = !d.prefill.empty();
  return d;
}

// What a pool's GPUs draw their step outcomes from: the workload's expert popularity and MTP acceptance,
// which the hardware (the model's gate and draft head on this traffic) decides, not the engine.
void set_outcome_models(rt::Runtime& rt, const Scenario& sc, const engine::ModelProfile& model, EmulatedCluster& cluster) {
  for (const ScenarioPool& p : sc.deployment.pools) {
    const fakegpu::OutcomeSettings settings{
        .expert_skew = p.eplb.expert_skew,
        .drift_interval = rt::from_seconds(p.eplb.drift_interval_ms / 1e3),
        .drift_fraction = p.eplb.drift_fraction,
        .mtp_acceptance_rate = p.mtp_acceptance_rate.value_or(model.mtp_acceptance_rate)};
    const auto outcomes = std::make_shared<fakegpu::OutcomeModel>(rt, p.name, settings);
    for (const auto& instance : p.instance_gpus) {
      for (std::int64_t g : instance) cluster.fleet().device(static_cast<hal::DeviceId>(g)).set_outcome_model(outcomes);
    }
  }
}

// The key of the pool whose GPUs hold `gpu` (deployment.pools[i]) and words for the instance.
struct PoolOfGpu {
  std::string key = "deployment";
  std::string words;
};

PoolOfGpu pool_of_gpu(const ScenarioDeployment& dep, std::int64_t gpu) {
  for (std::size_t p = 0; p < dep.pools.size(); ++p) {
    const auto& inst = dep.pools[p].instance_gpus;
    for (std::size_t i = 0; i < inst.size(); ++i) {
      if (std::find(inst[i].begin(), inst[i].end(), gpu) != inst[i].end()) {
        return {"deployment.pools[" + std::to_string(p) + "]", "pool '" + dep.pools[p].name + "' instance " + std::to_string(i)};
      }
    }
  }
  return {};
}

}  // namespace

Deployment::Deployment(rt::Runtime& rt, const Scenario& sc, engine::TokenStream on_tokens, engine::RequestDone on_done)
    : cluster_(rt, sc.cluster.gpu_profile, sc.cluster.fabric_profile, static_cast<int>(sc.deployment.cluster_gpus()),
               static_cast<int>(sc.cluster.units), sc.run.fabric_mode),
      rdma_(cluster_.fabric()),
      network_(cluster_.fabric()),
      model_(engine::load_model_profile(engine::model_profile_path(sc.model.profile))) {
  cluster_.use_kernel_library(sc.cluster.kernel_library);  // before any kernel is priced
  set_outcome_models(rt, sc, model_, cluster_);
  try {
    system_ = std::make_unique<engine::PdSystem>(rt, model_, cluster_.collectives(), &rdma_,
                                                 pd_deployment(sc, cluster_), std::move(on_tokens),
                                                 std::move(on_done), &network_);
  } catch (const hal::HalError& e) {
    // Name the pool, its instance and the GPU, so the message says which layout to change.
    const PoolOfGpu pool = pool_of_gpu(sc.deployment, e.device());
    std::string where = model_.name;
    if (!pool.words.empty()) where += " on " + pool.words + " (GPU " + std::to_string(e.device()) + ")";
    throw rt::InputError(sc.file, pool.key, "does not fit: " + where + ": " + e.what());
  } catch (const std::invalid_argument& e) {
    throw rt::InputError(sc.file, "deployment.pools", e.what());
  }
}

std::int64_t Deployment::kv_block_tokens() const { return system_->router().config().block_tokens; }

}  // namespace nvl::emu
