#include "emu/scenario/deployment_check.h"

#include <string>

#include "emu/rt/errors.h"
#include "engine/model/model_profile.h"

namespace nvl::emu {

namespace {

std::string divisors_of(std::int64_t n, std::int64_t limit) {
  std::string list;
  for (std::int64_t d = 1; d <= limit; ++d) {
    if (n % d == 0) list += (list.empty() ? "" : ", ") + std::to_string(d);
  }
  return list;
}

}  // namespace

void check_deployment(const Scenario& s) {
  const auto& dep = s.deployment;
  const engine::ModelProfile model = engine::load_model_profile(engine::model_profile_path(s.model.profile));
  const auto fail = [&](const std::string& key, const std::string& problem) {
    throw rt::InputError(s.file, "deployment." + key, problem);
  };
  const std::int64_t experts = model.n_routed_experts;
  const std::int64_t redundant = dep.eplb.redundant_experts;

  // The normal group is one EP group over every normal GPU: each holds the same number of expert slots.
  const std::int64_t ep = dep.normal_gpus;
  if (ep == 1 && redundant > 0) fail("eplb.redundant_experts", "redundant experts need an EP group of two or more normal GPUs");
  if (redundant > experts * (ep - 1)) {
    fail("eplb.redundant_experts", std::to_string(redundant) + " redundant experts would give each of the " +
                                       std::to_string(ep) + " GPUs more expert slots than the model has experts");
  }
  if (ep == 1 && dep.eplb.interval_steps > 0) fail("eplb.interval_steps", "EPLB rebalancing needs two or more normal GPUs");
  if (ep == 1 && dep.two_batch_overlap) fail("two_batch_overlap", "two-batch overlap needs two or more normal GPUs (EP)");
  if (ep > 1 && (experts + redundant) % ep != 0) {
    if (redundant == 0) {
      fail("normal_gpus", model.name + "'s " + std::to_string(experts) + " routed experts do not divide over an EP group of " +
                              std::to_string(ep) + " GPUs without redundant experts: use a GPU count that divides " +
                              std::to_string(experts) + ", or set deployment.eplb.redundant_experts to make " +
                              std::to_string(experts) + " + redundant a multiple of " + std::to_string(ep));
    }
    fail("eplb.redundant_experts", std::to_string(experts) + " routed + " + std::to_string(redundant) +
                                       " redundant experts are not a multiple of the EP group's " + std::to_string(ep) +
                                       " GPUs (deployment.normal_gpus)");
  }
  if (dep.token_budget - 1 < dep.mtp_draft_tokens) {  // written so that a huge draft count cannot overflow
    fail("token_budget", std::to_string(dep.token_budget) + " tokens cannot hold one decode step with " +
                             std::to_string(dep.mtp_draft_tokens) + " MTP draft tokens (deployment.mtp_draft_tokens)");
  }

  // The prefill worker is TP over its GPUs (attention heads split evenly), plus EP over them when asked.
  const std::int64_t tp = dep.prefill_gpus;
  if (tp > 0 && model.num_attention_heads % tp != 0) {
    fail("prefill_gpus", "TP" + std::to_string(tp) + " does not divide " + model.name + "'s " +
                             std::to_string(model.num_attention_heads) + " attention heads: use one of " +
                             divisors_of(model.num_attention_heads, 72));
  }
  if (tp > 1 && dep.prefill_expert_parallel && experts % tp != 0) {
    fail("prefill_gpus", "TP" + std::to_string(tp) + " + EP" + std::to_string(tp) + ": " + model.name + "'s " +
                             std::to_string(experts) + " routed experts do not divide over " + std::to_string(tp) +
                             " GPUs (the prefill worker has no redundant experts)");
  }
}

}  // namespace nvl::emu
