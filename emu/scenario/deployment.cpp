#include "emu/scenario/deployment.h"

#include <stdexcept>
#include <string>

#include "emu/rt/errors.h"
#include "engine/hal/hal_error.h"
#include "engine/hal/types.h"

namespace nvl::emu {

namespace {

engine::GraceTierPolicy grace_policy(const std::string& name) {
  if (name == "write_through") return engine::GraceTierPolicy::write_through;
  if (name == "write_back") return engine::GraceTierPolicy::write_back;
  return engine::GraceTierPolicy::off;
}

engine::PdDeployment pd_deployment(const Scenario& sc, EmulatedCluster& cluster) {
  const auto& dep = sc.deployment;
  const hal::DType kv_dtype = hal::dtype_from_string(sc.model.kv_dtype);
  engine::PdDeployment d;
  d.normal_gpus = cluster.devices(0, static_cast<int>(dep.normal_gpus));
  d.normal.kv_dtype = kv_dtype;
  d.normal.block_tokens = dep.kv_block_tokens;
  d.normal.grace_policy = grace_policy(dep.grace_tier);
  d.normal.grace_bytes_per_rank = dep.grace_bytes_per_gpu;
  d.normal.scheduler.token_budget = dep.token_budget;
  d.normal.scheduler.max_running = dep.max_running;
  d.normal.scheduler.chunk_tokens = dep.chunk_tokens;
  d.normal.scheduler.draft_tokens = dep.mtp_draft_tokens;
  d.normal.two_batch_overlap = dep.two_batch_overlap;
  d.normal.redundant_experts = dep.eplb.redundant_experts;
  d.normal.expert_skew = dep.eplb.expert_skew;
  d.normal.eplb_interval_steps = dep.eplb.interval_steps;
  d.prefill_gpus = cluster.devices(static_cast<int>(dep.normal_gpus), static_cast<int>(dep.prefill_gpus));
  d.prefill.kv_dtype = kv_dtype;
  d.prefill.block_tokens = dep.kv_block_tokens;
  d.prefill.expert_parallel = dep.prefill_expert_parallel;
  d.prefill.expert_skew = dep.eplb.expert_skew;
  d.prefill.scheduler.token_budget = dep.prefill_token_budget;
  d.prefill.scheduler.chunk_tokens = dep.prefill_token_budget;
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
  d.system.router.prefill_worker = dep.prefill_gpus > 0;
  return d;
}

}  // namespace

Deployment::Deployment(rt::Runtime& rt, const Scenario& sc, engine::TokenStream on_tokens, engine::RequestDone on_done)
    : cluster_(rt, sc.cluster.gpu_profile, sc.cluster.fabric_profile,
               static_cast<int>(sc.deployment.normal_gpus + sc.deployment.prefill_gpus),
               static_cast<int>(sc.cluster.units)),
      rdma_(cluster_.fabric()),
      network_(cluster_.fabric()),
      model_(engine::load_model_profile(engine::model_profile_path(sc.model.profile))) {
  try {
    system_ = std::make_unique<engine::PdSystem>(rt, model_, cluster_.collectives(), &rdma_,
                                                 pd_deployment(sc, cluster_), std::move(on_tokens),
                                                 std::move(on_done), &network_);
  } catch (const hal::HalError& e) {
    // Name the GPU and its role, so the message says which count to raise (or which budget to lower).
    const std::int64_t gpu = e.device();
    const std::int64_t normal_gpus = sc.deployment.normal_gpus;
    std::string key = "deployment";
    std::string where = model_.name;
    if (gpu >= 0 && gpu < normal_gpus) {
      key = "deployment.normal_gpus";
      where += " on normal rank " + std::to_string(gpu) + " (GPU " + std::to_string(gpu) + ")";
    } else if (gpu >= normal_gpus) {
      key = "deployment.prefill_gpus";
      where += " on prefill rank " + std::to_string(gpu - normal_gpus) + " (GPU " + std::to_string(gpu) + ")";
    }
    throw rt::InputError(sc.file, key, "does not fit: " + where + ": " + e.what());
  } catch (const std::invalid_argument& e) {
    throw rt::InputError(sc.file, "deployment", e.what());
  }
}

std::int64_t Deployment::kv_block_tokens() const { return system_->router().config().block_tokens; }

}  // namespace nvl::emu
