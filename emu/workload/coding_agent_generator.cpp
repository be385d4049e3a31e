#include "emu/workload/coding_agent_generator.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "emu/rt/errors.h"
#include "emu/rt/rng.h"
#include "emu/workload/block_namespace.h"
#include "emu/workload/hash_chain_builder.h"
#include "emu/workload/normal.h"
#include "emu/workload/stratified_uniforms.h"

namespace nvl::emu {
namespace {

std::vector<double> stratified(std::size_t n, std::uint64_t seed, const char* stream) {
  rt::Rng rng(rt::Rng::derive_seed(seed, stream));
  return stratified_uniforms(n, rng);
}

std::int64_t tokens(double x) { return std::max<std::int64_t>(0, std::llround(x)); }

}  // namespace

Workload CodingAgentGenerator::generate(std::int64_t trials, std::uint64_t seed) const {
  if (trials <= 0) throw rt::InputError("gen:codex", "trials", "expected a positive number of trials");
  const CodingAgentProfile& p = profile_;
  const auto n_trials = static_cast<std::size_t>(trials);
  const std::int64_t block = p.block_size_tokens;

  // Trial-level draws.
  const auto u_calls = stratified(n_trials, seed, "codex.calls");
  const auto u_shared = stratified(n_trials, seed, "codex.shared_prefix");
  const auto u_task = stratified(n_trials, seed, "codex.task");
  const auto u_scale = stratified(n_trials, seed, "codex.trial_scale");
  std::vector<std::int64_t> calls(n_trials);
  std::size_t total_calls = 0;
  for (std::size_t t = 0; t < n_trials; ++t) {
    calls[t] = std::max(p.min_calls_per_trial, tokens(p.calls_per_trial.quantile(u_calls[t])));
    total_calls += static_cast<std::size_t>(calls[t]);
  }
  // Per-call draws, indexed by the call's position in the whole run.
  const auto u_output = stratified(total_calls, seed, "codex.output");
  const auto u_delay = stratified(total_calls, seed, "codex.delay");
  const auto u_new = stratified(total_calls, seed, "codex.new_input");
  rt::Rng rewrites(rt::Rng::derive_seed(seed, "codex.rewrites"));

  const double rho = p.new_input_output_correlation;
  const double rho_rest = std::sqrt(1 - rho * rho);
  const double sigma_t = p.trial_scale_sigma;
  const BlockNamespace shared_prefix("gen:codex/system-prefix");
  const std::int64_t prefix_blocks = p.system_prefix_tokens / block;

  Workload w;
  w.source = "gen:" + p.name + ":trials=" + std::to_string(trials) + ",seed=" + std::to_string(seed);
  w.sessions.reserve(n_trials);
  std::size_t k = 0;  // index of the current call in the per-call draws
  for (std::size_t t = 0; t < n_trials; ++t) {
    const BlockNamespace own("gen:codex/" + std::to_string(seed) + "/" + std::to_string(t));
    std::uint64_t next_id = 0;
    const bool shared = u_shared[t] < p.system_prefix_shared_share;
    const double scale = std::exp(sigma_t * normal_quantile(u_scale[t]) - sigma_t * sigma_t / 2);

    Session s;
    s.labels = {"gen:codex", "trial " + std::to_string(t), ""};
    s.block_size_tokens = p.block_size_tokens;
    HashChainBuilder chain;
    for (std::int64_t b = 0; b < prefix_blocks; ++b) {
      chain.push(shared ? shared_prefix.hash(static_cast<std::uint64_t>(b)) : own.hash(next_id++));
    }
    std::int64_t context = std::min(p.context_window_tokens,
                                    p.system_prefix_tokens + tokens(p.first_call_task_tokens.quantile(u_task[t])));
    rt::Duration offset;
    double previous_output_z = 0;
    std::int64_t previous_output = 0;
    for (std::int64_t n = 1; n <= calls[t]; ++n, ++k) {
      Request r;
      if (n > 1) {
        std::size_t phase = 0;
        while (phase + 1 < p.phases.size() && n >= p.phases[phase + 1].first_turn) ++phase;
        const double large = p.phases[phase].large_share;
        const double large_scale = p.phases[phase].large_scale * scale;
        // Correlated with the previous output: long answers (patches) tend to draw long tool output.
        const double u = normal_cdf(rho * previous_output_z + rho_rest * normal_quantile(u_new[k]));
        const double new_input = u < 1 - large ? p.new_input_small_tokens.quantile(u / (1 - large))
                                               : large_scale * p.new_input_large_tokens.quantile((u - (1 - large)) / large);
        const std::int64_t previous = context;
        context = previous + previous_output + tokens(new_input);
        std::int64_t keep_tokens = previous;
        if (context > p.context_window_tokens) {
          // The window overflowed: the agent compacts its history down to the system prefix.
          context = std::min(p.context_window_tokens, p.system_prefix_tokens + tokens(new_input));
          keep_tokens = p.system_prefix_tokens;
        } else if (rewrites.bernoulli(p.rewrite_probability)) {
          const double depth = p.rewrite_depth_tokens.quantile(rewrites.uniform());
          keep_tokens = std::max(p.system_prefix_tokens, previous - tokens(depth));
        }
        chain.truncate(static_cast<std::size_t>(keep_tokens / block));
        // The published delay includes the original model's response time, so as a think time it paces a
        // closed-loop replay no faster than the recording (the split is not published).
        const rt::Duration delay = rt::from_seconds(p.inter_call_delay_s.quantile(u_delay[k]));
        offset += delay;
        r.think_time = delay;
      }
      while (static_cast<std::int64_t>(chain.size()) < context / block) chain.push(own.hash(next_id++));
      r.prompt_tokens = context;
      r.output_tokens = std::max<std::int64_t>(1, tokens(p.output_tokens.quantile(u_output[k])));
      r.block_hashes = chain.snapshot(static_cast<std::size_t>(context / block));
      r.offset = offset;
      previous_output = r.output_tokens;
      previous_output_z = normal_quantile(u_output[k]);
      s.requests.push_back(std::move(r));
    }
    w.sessions.push_back(std::move(s));
  }
  return w;
}

}  // namespace nvl::emu
