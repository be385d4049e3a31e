#include "emu/validate/calibration_suite.h"

#include <cmath>
#include <cstdio>
#include <ostream>

#include "emu/validate/engine_rows.h"
#include "emu/validate/fabric_rows.h"
#include "emu/validate/fakegpu_rows.h"

namespace nvl::emu {

void CalibrationSuite::add(std::string group, RowProvider provider) {
  providers_.emplace_back(std::move(group), std::move(provider));
}

std::vector<CalibrationRow> CalibrationSuite::run(const std::string& only) const {
  std::vector<CalibrationRow> rows;
  for (const auto& [group, provider] : providers_) {
    const bool whole_group = only.empty() || group.rfind(only, 0) == 0;
    for (auto& row : provider()) {
      if (whole_group || row.id.rfind(only, 0) == 0) rows.push_back(std::move(row));
    }
  }
  return rows;
}

CalibrationSuite default_calibration_suite() {
  CalibrationSuite suite;
  // Each part registers its provider here as its issue lands.
  suite.add("fabric", fabric_calibration_rows);
  suite.add("fakegpu", fakegpu_calibration_rows);
  suite.add("engine", engine_calibration_rows);
  return suite;
}

void print_table(std::ostream& out, const std::vector<CalibrationRow>& rows) {
  char line[512];
  std::snprintf(line, sizeof line, "%-36s %-10s %12s %12s %9s %9s  %s\n", "id", "unit", "published", "emulated",
                "error %", "tol %", "result");
  out << line;
  int failed = 0;
  for (const auto& r : rows) {
    const double tol = r.tolerance_abs ? *r.tolerance_abs / std::fabs(r.published) * 100.0 : r.tolerance_pct;
    std::snprintf(line, sizeof line, "%-36s %-10s %12.4g %12.4g %+9.2f %9.2f  %s\n", r.id.c_str(), r.unit.c_str(),
                  r.published, r.emulated, r.error_pct(), tol, r.pass() ? "pass" : "FAIL");
    out << line;
    if (!r.note.empty()) out << "    note: " << r.note << "\n";
    if (!r.pass()) ++failed;
  }
  out << rows.size() << " rows, " << (rows.size() - static_cast<std::size_t>(failed)) << " pass, " << failed
      << " fail\n";
}

nlohmann::json to_json(const std::vector<CalibrationRow>& rows) {
  nlohmann::json out = {{"rows", nlohmann::json::array()}};
  for (const auto& r : rows) {
    const double tol = r.tolerance_abs ? *r.tolerance_abs / std::fabs(r.published) * 100.0 : r.tolerance_pct;
    nlohmann::json row = {{"id", r.id},
                          {"name", r.name},
                          {"unit", r.unit},
                          {"published", r.published},
                          {"emulated", r.emulated},
                          {"error_pct", r.error_pct()},
                          {"tolerance_pct", tol},
                          {"pass", r.pass()},
                          {"source", r.source}};
    if (r.tolerance_abs) row["tolerance_abs"] = *r.tolerance_abs;
    if (!r.note.empty()) row["note"] = r.note;
    out["rows"].push_back(std::move(row));
  }
  return out;
}

}  // namespace nvl::emu
