#pragma once
// The result table of `nvl72emu sweep`: one row per run with its varied values, seed, exit code, each
// check's pass/fail and the headline figures read from the run's report.json. Keys missing from a report
// (an older schema, a run that died before writing it) leave their cells empty.
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "emu/sweep/sweep_plan.h"

namespace nvl::emu {

class SweepTable {
 public:
  explicit SweepTable(std::vector<std::string> varied_keys);

  // `report` is the run's report.json (null when there is none); `replay` the command that repeats the run.
  void add(const SweepPoint& point, int exit_code, const nlohmann::json& report, std::string replay);

  bool any_failed() const;
  void write_csv(const std::filesystem::path& file) const;
  nlohmann::json to_json() const;
  // The table for a terminal, then one replay command per failed run.
  void print(std::ostream& out) const;

 private:
  struct Row {
    SweepPoint point;
    int exit_code = 0;
    std::map<std::string, std::string> checks;  // name -> "pass", "FAIL" or "skipped"
    std::vector<std::optional<double>> figures;  // in kFigures order
    std::string event_log_hash;
    std::string replay;
  };
  std::vector<std::string> check_names() const;

  std::vector<std::string> varied_keys_;
  std::vector<Row> rows_;
};

}  // namespace nvl::emu
