#pragma once
// What decides a pool's step outcomes (hal::StepOutcomes) on this workload, as the emulated GPUs draw
// them: the popularity of the model's routed experts, drifting over the run, and the MTP acceptance
// rate. One model is shared by the GPUs of a pool: they serve one model on the same traffic. The
// engine never sees it; it sees only what its devices report.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "emu/rt/runtime.h"
#include "fakegpu/alias_table.h"
#include "fakegpu/expert_popularity.h"

namespace nvl::fakegpu {

struct OutcomeSettings {
  double expert_skew = 0;          // Zipf skew of the expert popularity (0: uniform)
  rt::Duration drift_interval{};   // a drift event every this long (zero: never)
  double drift_fraction = 0.25;    // of the popularity order rotated by each drift event
  double mtp_acceptance_rate = 0;  // each draft kept with this chance, until one is not
};

class OutcomeModel {
 public:
  // `name` (a pool's) names its seeded streams and log records. Settings out of range (a negative skew
  // or interval, a fraction or rate outside [0, 1]): std::invalid_argument.
  OutcomeModel(rt::Runtime& rt, std::string name, OutcomeSettings settings);

  // The experts' shares of the gate's pairs now, for a model of `experts` routed experts: the order is
  // drawn on first use, and every drift due by now is applied first (each logged as
  // expert-routing/popularity_drifted). Another expert count later is std::invalid_argument.
  struct Popularity {
    std::vector<double> shares;
    AliasTable table;  // draws an expert by its share
  };
  const Popularity& popularity(std::int64_t experts);
  double mtp_acceptance_rate() const { return settings_.mtp_acceptance_rate; }
  const OutcomeSettings& settings() const { return settings_; }

 private:
  rt::Runtime& rt_;
  std::string name_;
  OutcomeSettings settings_;
  std::optional<ExpertPopularity> order_;
  Popularity popularity_;
  rt::Time next_drift_;
  std::uint64_t drifts_ = 0;
};

}  // namespace nvl::fakegpu
