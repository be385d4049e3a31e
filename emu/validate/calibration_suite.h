#pragma once
// The calibration rows of every part, computed on demand by running the emulator for each published
// configuration. Parts add a provider (a function returning their rows, and the prefixes of those rows'
// ids, so that a run for some rows computes only the providers that may give them) to
// calibration_suite.cpp.
#include <functional>
#include <iosfwd>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "emu/validate/calibration_row.h"

namespace nvl::emu {

using RowProvider = std::function<std::vector<CalibrationRow>()>;

class CalibrationSuite {
 public:
  // Every row `provider` gives has an id starting with one of `id_prefixes` (std::logic_error otherwise).
  void add(std::string group, std::vector<std::string> id_prefixes, RowProvider provider);
  // The rows whose group or id starts with `only` (empty: all), running only the providers that may
  // give such rows.
  std::vector<CalibrationRow> run(const std::string& only = "") const;

 private:
  struct Provider {
    std::string group;
    std::vector<std::string> id_prefixes;
    RowProvider rows;
  };
  std::vector<Provider> providers_;
};

// Every part's rows: the one list, in calibration_suite.cpp.
CalibrationSuite default_calibration_suite();

void print_table(std::ostream& out, const std::vector<CalibrationRow>& rows);
// {"rows": [{"id", "name", "unit", "published", "emulated", "error_pct", "tolerance_pct", "pass", "known_miss",
// "source"}]}
nlohmann::json to_json(const std::vector<CalibrationRow>& rows);

}  // namespace nvl::emu
