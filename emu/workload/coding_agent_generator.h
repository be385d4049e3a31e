#pragma once
// A synthetic coding-agent workload: Codex agent trials on SWE-bench Pro (dataset
// "codex_swebenchpro_traces", REFERENCE.md §4). THE REAL DATASET IS NOT AVAILABLE OFFLINE: this generator
// produces a synthetic trace whose statistics match the published figures (within the profile's
// tolerance, 5%); it is not a replay of real trials. Every parameter and the figure it was fitted to are
// in the profile (emu/workload/profiles/codex-swebenchpro.json).
//
// A trial (session) is a chain of calls. Call 1 is the system prefix (shared by most trials) plus the task;
// call n appends the previous answer and new input (tool output) to call n-1's prompt, and with a small
// probability the end of the context is rewritten (an edited or re-rendered history: the cache misses the
// published hit rate implies). Computed tokens are not stored: they follow from the block hashes.
// Trial-level draws (calls, task, prefix sharing, scale) and per-call draws (output, delay, new input) are
// stratified so that a run of the published size lands on the fitted quantiles.
#include <cstdint>

#include "emu/workload/coding_agent_profile.h"
#include "emu/workload/workload.h"

namespace nvl::emu {

class CodingAgentGenerator {
 public:
  explicit CodingAgentGenerator(CodingAgentProfile profile) : profile_(std::move(profile)) {}

  Workload generate(std::int64_t trials, std::uint64_t seed) const;
  const CodingAgentProfile& profile() const { return profile_; }

 private:
  CodingAgentProfile profile_;
};

}  // namespace nvl::emu
