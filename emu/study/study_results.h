#pragma once
// What a study's runs gave: every figure of each (variant, x) over the seeds, whether those runs drained,
// what their timing rests on, and the answer read from them as the study file asks.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "emu/study/study_spec.h"

namespace nvl::emu {

// A figure over the seeds of one (variant, x): NaN where a run wrote no report.
struct SeedSpread {
  double mean = 0;
  double min = 0;
  double max = 0;
  std::size_t runs = 0;  // seeds with a value
};

class StudyResults {
 public:
  explicit StudyResults(StudySpec spec);

  // `report`: the run's report.json, null when it wrote none.
  void add(std::size_t variant, std::size_t x, std::size_t seed, int exit_code, const nlohmann::json& report);

  const StudySpec& spec() const { return spec_; }
  SeedSpread spread(const std::string& metric, std::size_t variant, std::size_t x) const;
  // Every seed of (variant, x) exited 0 and drained (stopped quiescent, not at its time limit).
  bool drained(std::size_t variant, std::size_t x) const;
  // What the timing rests on: the kernel library and the share of GPU time priced from measured tables.
  std::string calibration() const;
  // The answer in sentences, numbers in them.
  std::string answer() const;
  // Every run's figures, for scripts.
  nlohmann::json to_json() const;

 private:
  struct Run {
    int exit_code = -1;
    std::string stop_reason;
    std::vector<double> figures;  // spec_.all_metrics() order; NaN: missing
    std::string library;
    double measured_share = 0;
    std::string peak_queues;  // "prefill 334 at 958 s, dep 2 at 218 s": each pool's longest queue and when
  };
  std::size_t index(std::size_t variant, std::size_t x, std::size_t seed) const;
  const Run& run(std::size_t variant, std::size_t x, std::size_t seed) const { return runs_[index(variant, x, seed)]; }
  // Why (variant, x) misses the bounds, or empty when every seed meets them and drains.
  std::string miss(std::size_t variant, std::size_t x) const;
  std::string highest_x_answer() const;
  std::string best_variant_answer() const;
  std::string best_x_answer() const;
  std::size_t metric_index(const std::string& metric) const;

  StudySpec spec_;
  std::vector<std::string> metrics_;
  std::vector<Run> runs_;  // [variant][x][seed]
};

// "1.5 k", "250", "0.62": a figure as the study's tables print it.
std::string study_figure(double v);

}  // namespace nvl::emu
