#pragma once
// One emulated GPU's step outcomes (hal::StepOutcomes), drawn from its own seeded stream and its pool's
// outcome model, so that every GPU's routing differs by chance and the most loaded rank sets the MoE
// time, as on real hardware. Routing: each token picks top_k distinct experts by popularity (for small
// batches, token by token); for large ones (more pairs than twice the experts) the pairs are drawn as
// one multinomial over the experts, each count capped at the tokens (an expert is chosen at most once
// per token): the same per-expert means, at a cost independent of the batch.
#include <memory>
#include <vector>

#include "emu/rt/rng.h"
#include "engine/hal/step_outcomes.h"
#include "fakegpu/outcome_model.h"

namespace nvl::fakegpu {

class SampledOutcomes final : public hal::StepOutcomes {
 public:
  SampledOutcomes(rt::Rng& rng, std::shared_ptr<OutcomeModel> model);
  void set_model(std::shared_ptr<OutcomeModel> model) { model_ = std::move(model); }

  void route_tokens(std::int64_t tokens, std::int64_t top_k, std::int64_t experts,
                    std::vector<hal::RoutedExpert>& out) override;
  std::int64_t accepted_drafts(std::int64_t drafted) override;

 private:
  void draw_by_token(std::int64_t tokens, std::int64_t top_k, const OutcomeModel::Popularity& p);
  void draw_multinomial(std::int64_t tokens, std::int64_t top_k, const OutcomeModel::Popularity& p);
  // Marks the expert as having a count.
  void choose(std::int32_t expert);
  // Binomial(n, p) from the stream: by inversion for small means, else the normal approximation.
  std::int64_t binomial(std::int64_t n, double p);

  rt::Rng& rng_;
  std::shared_ptr<OutcomeModel> model_;
  std::vector<std::int32_t> counts_;  // per expert, zero between calls
  std::vector<std::uint64_t> chosen_;  // a bit per expert with a count, zero between calls
};

}  // namespace nvl::fakegpu
