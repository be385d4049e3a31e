#pragma once
// A study file (scenarios/studies/*.json): a sizing question, the base scenario, the axis swept (the
// plots' x), the variants compared (one line each), the seeds, the report.json figures to show and how
// the answer is read from them. Bad input is an rt::InputError naming the file and the key.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace nvl::emu {

struct StudyVariant {
  std::string name;
  std::vector<std::string> set;  // key.path=value overrides, as `run --set` takes them
  std::string scenario;          // a scenario of its own (resolved), in place of the base; empty: the base
};

// A bound on a report.json figure ("latency_ms.ttft.p90" at most 2000).
struct StudyBound {
  std::string metric;
  std::optional<double> max;
  std::optional<double> min;
};

struct StudySpec {
  std::string file;
  std::string name;
  std::string question;
  std::string scenario;            // the base scenario's path (relative to the study file, resolved)
  std::vector<std::string> set;    // overrides every run takes
  std::string x_key;               // the swept scenario key
  std::string x_label;             // the plots' x axis (default: x_key)
  std::string x_format = "{}";     // the text x_key takes, "{}" standing for the value ("bench:isl={},osl=16")
  std::vector<double> x_values;    // ascending
  std::vector<StudyVariant> variants;
  std::vector<std::uint64_t> seeds;
  std::vector<std::string> metrics;  // report.json figures shown in the tables and plots
  // The answer: the highest x at which every seed of a variant meets every bound (and drains), or, with
  // best_metric set, the variant with the best mean of that figure at each x (best_over_x: the x with the
  // best mean for each variant, among the x whose runs drain).
  std::vector<StudyBound> bounds;
  std::string best_metric;
  bool best_is_max = true;
  bool best_over_x = false;
  // The figures the answer needs besides `metrics`, each once.
  std::vector<std::string> all_metrics() const;
  // The scenario file variant v runs.
  const std::string& scenario_of(std::size_t v) const;
  // The override that sets the axis to its i-th value ("deployment.threshold_tokens=2048").
  std::string x_override(std::size_t i) const;
};

StudySpec load_study(const std::string& file);

// An axis value as --set reads it: whole numbers without a decimal point (integer keys take them).
std::string axis_value_text(double x);

// Whether `path` ("latency_ms.ttft.p90", "links.nvlink.mean_utilisation") names a number report.json carries.
bool is_report_figure(const std::string& path);

}  // namespace nvl::emu
