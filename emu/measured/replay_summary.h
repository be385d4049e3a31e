#pragma once
// The outcome of replaying a measured table: one row per table row (measured vs emulated mean TTFT and TPOT,
// or why the emulator cannot express it) and a summary per (system, backend, precision) with the median and
// p90 of the absolute errors. Printed as tables and written as the JSON of `validate --measured --json`.
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace nvl::emu {

struct ReplayRow {
  std::string id{}, system{}, backend{}, precision{}, config{};
  bool expressible = false;
  std::string reason{};  // not expressible: why; a run that failed: how; empty otherwise
  bool failed = false;  // expressible, but its run failed
  double measured_ttft_ms = 0;
  double measured_tpot_ms = 0;
  std::optional<double> emulated_ttft_ms{};
  std::optional<double> emulated_tpot_ms{};

  std::optional<double> ttft_error_pct() const;
  std::optional<double> tpot_error_pct() const;
};

// (emulated - measured) / measured in percent: positive when the emulator is slower.
double error_pct(double measured, double emulated);
// The q-quantile (0..1) of `values`, interpolated linearly between order statistics; values must not be empty.
double quantile(std::vector<double> values, double q);

struct ReplayGroup {
  std::string system{}, backend{}, precision{};
  std::size_t rows = 0;
  std::size_t compared = 0;         // rows with both emulated figures
  std::size_t not_expressible = 0;
  std::size_t failed = 0;
  std::optional<double> ttft_median_abs_error_pct{}, ttft_p90_abs_error_pct{};
  std::optional<double> tpot_median_abs_error_pct{}, tpot_p90_abs_error_pct{};
  std::map<std::string, std::size_t> reasons{};  // not expressible: reason -> rows
};

// Groups in order of first appearance in `rows`.
std::vector<ReplayGroup> summarise(const std::vector<ReplayRow>& rows);

void print_rows(std::ostream& out, const std::vector<ReplayRow>& rows);
void print_groups(std::ostream& out, const std::vector<ReplayGroup>& groups);
nlohmann::json replay_json(const std::vector<ReplayRow>& rows, const std::vector<ReplayGroup>& groups);

}  // namespace nvl::emu
