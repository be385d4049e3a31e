#include "emu/scenario/deployment_check.h"

#include <string>

#include "emu/rt/errors.h"
#include "engine/hal/types.h"
#include "engine/model/model_profile.h"
#include "fakegpu/profile_library.h"

namespace nvl::emu {

namespace {

std::string divisors_of(std::int64_t n, std::int64_t limit) {
  std::string list;
  for (std::int64_t d = 1; d <= limit; ++d) {
    if (n % d == 0) list += (list.empty() ? "" : ", ") + std::to_string(d);
  }
  return list;
}

// One pool's layout against the model and what the engine runs.
void check_pool(const Scenario& s, const engine::ModelProfile& model, std::size_t index, const ScenarioPool& p) {
  const auto fail = [&](const std::string& key, const std::string& problem) {
    throw rt::InputError(s.file, "deployment.pools[" + std::to_string(index) + "]." + key, problem);
  };
  const std::int64_t gpus = p.gpus_per_instance();
  const bool prefill = p.role == "prefill";
  if (model.num_attention_heads % p.tp != 0) {
    fail("tp", "TP" + std::to_string(p.tp) + " does not divide " + model.name + "'s " +
                   std::to_string(model.num_attention_heads) + " attention heads: use one of " +
                   divisors_of(model.num_attention_heads, 72));
  }
  if (gpus % p.ep != 0) {
    fail("ep", "EP" + std::to_string(p.ep) + " does not divide the instance's tp x dp x pp = " + std::to_string(gpus) + " GPUs");
  }
  if (p.pp > 1 && !prefill) {
    fail("pp", p.role == "aggregated" ? "pipeline-parallel decode is not modelled: pp is for prefill pools"
                                      : "a " + p.role + " pool decodes every step: pipeline stages (pp) are for prefill pools");
  }
  if (prefill) {
    // A prefill instance is one TP group per stage, its experts split by TP or spread by EP over that
    // group; or (DEP) dp attention ranks of tp GPUs each, the experts spread by EP over all of them.
    if (p.dp > 1 && p.pp > 1) fail("pp", "a prefill instance with DP attention ranks (dp > 1) runs one pipeline stage: pp must be 1");
    if (p.dp > 1 && p.ep != gpus && p.ep != 1) {
      fail("ep", "a prefill instance with DP attention ranks spreads its experts over all its tp x dp = " +
                     std::to_string(gpus) + " GPUs (ep " + std::to_string(gpus) + ") or splits each over them (MoE TP, ep 1)");
    }
    if (p.dp == 1 && p.ep != 1 && p.ep != p.tp) {
      fail("ep", "a prefill instance spreads its experts over each stage's TP group: ep must be 1 or tp (" +
                     std::to_string(p.tp) + ")");
    }
    if (p.pp > model.num_hidden_layers) {
      fail("pp", std::to_string(p.pp) + " pipeline stages leave stages without any of " + model.name + "'s " +
                     std::to_string(model.num_hidden_layers) + " layers");
    }
    if (p.mtp_draft_tokens > 0) fail("mtp_draft_tokens", "a prefill instance ends each request at its first token: no decode step to draft for");
    if (p.two_batch_overlap) fail("two_batch_overlap", "two-batch overlap runs in decoding pools only");
    if (p.single_batch_overlap) fail("single_batch_overlap", "single-batch overlap is modelled in decoding pools only");
    if (p.eplb.redundant_experts > 0 || p.eplb.interval_steps > 0) {
      fail("eplb", "a prefill instance places its experts once, without redundant experts or rebalancing");
    }
  } else {
    // A decoding instance's DP ranks step together, the experts spread by EP over all of its GPUs or
    // split by MoE TP over all of them.
    if (p.ep != gpus && p.ep != 1) {
      fail("ep", "a decoding instance spreads its experts over all its tp x dp = " + std::to_string(gpus) +
                     " GPUs (ep " + std::to_string(gpus) + ") or splits every expert over all of them (ep 1, MoE TP): EP" +
                     std::to_string(p.ep) + " over part of an instance is not modelled");
    }
  }
  const std::int64_t experts = model.n_routed_experts;
  const std::int64_t redundant = p.eplb.redundant_experts;
  if (p.ep == 1 && redundant > 0) fail("eplb.redundant_experts", "redundant experts need an EP group of two or more GPUs");
  if (p.ep == 1 && p.eplb.interval_steps > 0) fail("eplb.interval_steps", "EPLB rebalancing needs an EP group of two or more GPUs");
  if (p.ep == 1 && p.two_batch_overlap) fail("two_batch_overlap", "two-batch overlap needs an EP group of two or more GPUs");
  if (p.ep == 1 && p.single_batch_overlap) {
    fail("single_batch_overlap", "single-batch overlap needs an EP group of two or more GPUs");
  }
  if (!p.moe_all_to_all && (p.ep == 1 || p.dp > 1)) {
    fail("moe_all_to_all", "false keeps the tokens where the attention TP all-reduce left them: it needs EP over the "
                           "TP group (ep > 1, dp 1); with DP attention every rank holds other tokens and must dispatch them");
  }
  if (!p.moe_all_to_all && (p.two_batch_overlap || p.single_batch_overlap)) {
    fail("moe_all_to_all", "false has no dispatch or combine for two-batch or single-batch overlap to hide");
  }
  if (p.single_batch_overlap && p.two_batch_overlap) {
    fail("single_batch_overlap", "single-batch and two-batch overlap exclude each other: choose one");
  }
  if (redundant > experts * (p.ep - 1)) {
    fail("eplb.redundant_experts", std::to_string(redundant) + " redundant experts would give each of the " +
                                       std::to_string(p.ep) + " GPUs more expert slots than the model has experts");
  }
  if (p.ep > 1 && (experts + redundant) % p.ep != 0) {
    if (redundant == 0) {
      fail("ep", model.name + "'s " + std::to_string(experts) + " routed experts do not divide over EP" + std::to_string(p.ep) +
                     " without redundant experts: use an ep that divides " + std::to_string(experts) +
                     ", or set eplb.redundant_experts to make " + std::to_string(experts) + " + redundant a multiple of " +
                     std::to_string(p.ep));
    }
    fail("eplb.redundant_experts", std::to_string(experts) + " routed + " + std::to_string(redundant) +
                                       " redundant experts are not a multiple of EP" + std::to_string(p.ep));
  }
  if (p.mtp_draft_tokens > 0 && model.num_nextn_predict_layers == 0) {
    fail("mtp_draft_tokens", "MTP drafts need the model's MTP modules, and " + model.name + " has none");
  }
  if (p.token_budget - 1 < p.mtp_draft_tokens) {  // written so that a huge draft count cannot overflow
    fail("token_budget", std::to_string(p.token_budget) + " tokens cannot hold one decode step with " +
                             std::to_string(p.mtp_draft_tokens) + " MTP draft tokens (mtp_draft_tokens)");
  }
  if (p.sm_partition_prefill > 0 && p.two_batch_overlap) {
    fail("sm_partition", "SM partitions (green contexts) and two_batch_overlap exclude each other: choose one");
  }
  if (p.sm_partition_prefill > 0 && !p.mixed_batches) {
    fail("mixed_batches", "SM partitions (green contexts) already run prefill and decode as separate steps, "
                          "side by side: mixed_batches false does not apply");
  }
  try {
    (void)hal::dtype_from_string(p.kv_dtype);
  } catch (const std::invalid_argument&) {
    fail("kv_dtype", "'" + p.kv_dtype + "' is not a data type (fp8, bf16, ...)");
  }
  if (p.kv_dtype != s.deployment.pools.front().kv_dtype) {
    fail("kv_dtype", "KV moves between the pools as it is stored: every pool must use the same kv_dtype (pool '" +
                         s.deployment.pools.front().name + "' uses " + s.deployment.pools.front().kv_dtype + ")");
  }
  if (p.sbo_combine_sms) {
    const int sms = fakegpu::load_device_profile_named(s.cluster.gpu_profile).sm_count;
    if (*p.sbo_combine_sms >= sms) {
      fail("sbo_combine_sms", std::to_string(*p.sbo_combine_sms) + " SMs for the combine leave none of " +
                                  s.cluster.gpu_profile + "'s " + std::to_string(sms) + " to the down GEMM beside it");
    }
  }
  if (p.weights == "nvfp4") {
    const fakegpu::DeviceProfile device = fakegpu::load_device_profile_named(s.cluster.gpu_profile);
    if (device.peak(hal::DType::fp4) <= 0) {
      fail("weights", "nvfp4 runs the experts on FP4 tensor cores, which " + s.cluster.gpu_profile +
                          " has not (fakegpu/profiles/" + s.cluster.gpu_profile + ".json has no fp4 peak): use fp8");
    }
  }
}

}  // namespace

void check_deployment(const Scenario& s) {
  const auto& dep = s.deployment;
  const engine::ModelProfile model = engine::load_model_profile(engine::model_profile_path(s.model.profile));
  bool decode = false, mixed = false, prefill = false, aggregated = false;
  for (std::size_t i = 0; i < dep.pools.size(); ++i) {
    const ScenarioPool& p = dep.pools[i];
    check_pool(s, model, i, p);
    decode = decode || p.role == "decode";
    mixed = mixed || p.role == "mixed";
    prefill = prefill || p.role == "prefill";
    aggregated = aggregated || p.role == "aggregated";
  }
  const auto fail = [&](const std::string& problem) { throw rt::InputError(s.file, "deployment.pools", problem); };
  if (!decode && !mixed && !aggregated) fail("needs a pool that decodes (role decode, mixed or aggregated)");
  if (decode && !prefill) {
    fail("a decode pool prefills nothing itself: it needs a prefill pool to take its prompts (or make it mixed)");
  }
  if (aggregated && prefill) fail("an aggregated pool prefills every prompt where it decodes: it does not mix with prefill pools");
}

}  // namespace nvl::emu
