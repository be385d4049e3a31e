#pragma once
// The calibration rows of every part, computed on demand by running the emulator for each published
// configuration. Parts add a provider (a function returning their rows) to calibration_suite.cpp.
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
  void add(std::string group, RowProvider provider);
  // Runs the providers whose group or row ids start with `only` (empty: all).
  std::vector<CalibrationRow> run(const std::string& only = "") const;

 private:
  std::vector<std::pair<std::string, RowProvider>> providers_;
};

// Every part's rows: the one list, in calibration_suite.cpp.
CalibrationSuite default_calibration_suite();

void print_table(std::ostream& out, const std::vector<CalibrationRow>& rows);
// {"rows": [{"id", "name", "unit", "published", "emulated", "error_pct", "tolerance_pct", "pass", "source"}]}
nlohmann::json to_json(const std::vector<CalibrationRow>& rows);

}  // namespace nvl::emu
