#include "fakegpu/outcome_model.h"

#include <stdexcept>
#include <utility>

namespace nvl::fakegpu {

OutcomeModel::OutcomeModel(rt::Runtime& rt, std::string name, OutcomeSettings settings)
    : rt_(rt), name_(std::move(name)), settings_(settings) {
  const auto fraction = [](double x) { return x >= 0 && x <= 1; };
  if (!(settings_.expert_skew >= 0) || settings_.drift_interval < rt::Duration() ||
      !fraction(settings_.drift_fraction) || !fraction(settings_.mtp_acceptance_rate)) {
    throw std::invalid_argument("step outcomes of '" + name_ +
                                "': expert_skew and drift_interval must be >= 0, drift_fraction and "
                                "mtp_acceptance_rate in [0, 1]");
  }
  next_drift_ = rt::Time() + settings_.drift_interval;
}

const OutcomeModel::Popularity& OutcomeModel::popularity(std::int64_t experts) {
  if (!order_) {
    order_.emplace(experts, settings_.expert_skew, rt_.rng("expert-popularity/" + name_));
    popularity_ = Popularity{order_->shares(), AliasTable(order_->shares())};
  } else if (static_cast<std::int64_t>(popularity_.shares.size()) != experts) {
    throw std::invalid_argument("step outcomes of '" + name_ + "': routed over " + std::to_string(experts) +
                                " experts after " + std::to_string(popularity_.shares.size()));
  }
  const bool drifts = settings_.drift_interval > rt::Duration() && settings_.expert_skew > 0;
  if (drifts && rt_.now() >= next_drift_) {
    rt::Rng& rng = rt_.rng("expert-drift/" + name_);
    while (rt_.now() >= next_drift_) {
      order_->drift(settings_.drift_fraction, rng);
      next_drift_ = next_drift_ + settings_.drift_interval;
      ++drifts_;
    }
    popularity_ = Popularity{order_->shares(), AliasTable(order_->shares())};
    rt_.record("expert-routing", "popularity_drifted", {{"pool", name_}, {"drifts", drifts_}});
  }
  return popularity_;
}

}  // namespace nvl::fakegpu
