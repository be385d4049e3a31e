#pragma once
// What the hardware decides while a step runs, read back by the engine as it reads a real kernel's
// outputs: which experts the MoE gate sent each token to, and how many MTP drafts the verification kept.
// The engine sizes a step's all-to-alls and grouped GEMMs from the routing, as DeepEP's normal mode
// reads the dispatch layout back to the host, and feeds EPLB from the counts, as SGLang's expert
// distribution recorder does. A CUDA implementation reads the gate's top-k ids and the accepted lengths;
// an emulated device draws them from the run seed.
#include <cstdint>
#include <vector>

namespace nvl::hal {

// A routed expert chosen by some of a step's tokens on one GPU, and how many of them chose it.
struct RoutedExpert {
  std::int32_t expert = 0;
  std::int32_t tokens = 0;
};

class StepOutcomes {
 public:
  virtual ~StepOutcomes() = default;
  // The gate's choices for this GPU's `tokens` tokens in its next step, each token choosing `top_k`
  // distinct experts of `experts`: `out` gets every chosen expert once, ascending, with the tokens that
  // chose it (they sum to tokens x top_k). Nothing for no tokens. top_k outside [1, experts] is
  // std::invalid_argument.
  virtual void route_tokens(std::int64_t tokens, std::int64_t top_k, std::int64_t experts,
                            std::vector<RoutedExpert>& out) = 0;
  // How many of a request's `drafted` MTP draft tokens the verification accepted (a prefix of them).
  virtual std::int64_t accepted_drafts(std::int64_t drafted) = 0;
};

}  // namespace nvl::hal
