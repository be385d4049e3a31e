#pragma once
// The parameters of CodingAgentGenerator and the published figures they were fitted to, read from a JSON
// profile (emu/workload/profiles/codex-swebenchpro.json is built into the program as the default).
#include <cstdint>
#include <string>
#include <vector>

#include "emu/workload/lognormal.h"
#include "emu/workload/lognormal_mixture.h"

namespace nvl::emu {

struct PublishedFigure {
  std::string figure;  // a TraceStats figure name, e.g. "decoded.computed.p50"
  double published = 0;
  std::string source;
};

struct PhaseShare {
  std::int64_t first_turn = 0;  // 1-based call number within the trial
  double large_share = 0;       // share of this phase's new-input draws taken from the large component
  double large_scale = 1;       // factor on the large component (early turns read whole files)
};

struct CodingAgentProfile {
  std::string name;
  std::int32_t block_size_tokens = 0;
  std::int64_t context_window_tokens = 0;
  std::int64_t default_trials = 0;
  LognormalMixture calls_per_trial{{}};
  std::int64_t min_calls_per_trial = 1;
  std::int64_t system_prefix_tokens = 0;
  double system_prefix_shared_share = 0;
  Lognormal first_call_task_tokens;
  LognormalMixture output_tokens{{}};
  LognormalMixture inter_call_delay_s{{}};
  // New input per turn (tool output, user text): below or above a band that few turns fall in.
  Lognormal new_input_small_tokens;
  Lognormal new_input_large_tokens;
  std::vector<PhaseShare> phases;  // sorted by first_turn; the first starts at turn 2
  double new_input_output_correlation = 0;  // Gaussian-copula correlation with the previous output
  double trial_scale_sigma = 0;             // per-trial lognormal factor (mean 1) on large new inputs
  double rewrite_probability = 0;           // per turn: the end of the context is rewritten
  Lognormal rewrite_depth_tokens;
  double tolerance = 0;  // relative error allowed against each published figure
  std::vector<PublishedFigure> targets;

  static CodingAgentProfile parse(const std::string& json_text, const std::string& file);
  static CodingAgentProfile load(const std::string& path);
  // The built-in codex-swebenchpro profile.
  static CodingAgentProfile builtin_codex();
  // Every prompt-side token count times `factor` (system prefix, task, new input per turn, rewrite depth and
  // the context window); outputs, calls and delays as they were. A what-if for longer contexts: the
  // published figures no longer describe it, so it has no targets.
  CodingAgentProfile with_contexts_scaled(double factor) const;
};

}  // namespace nvl::emu
