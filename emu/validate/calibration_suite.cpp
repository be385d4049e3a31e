#include "emu/validate/calibration_suite.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <cstdio>
#include <ostream>

#include "emu/validate/engine_rows.h"
#include "emu/validate/fabric_rows.h"
#include "emu/validate/fakegpu_rows.h"

namespace nvl::emu {

void CalibrationSuite::add(std::string group, std::vector<std::string> id_prefixes, RowProvider provider) {
  providers_.push_back(Provider{std::move(group), std::move(id_prefixes), std::move(provider)});
}

std::vector<CalibrationRow> CalibrationSuite::run(const std::string& only) const {
  const auto starts = [](const std::string& text, const std::string& prefix) { return text.rfind(prefix, 0) == 0; };
  std::vector<CalibrationRow> rows;
  for (const Provider& p : providers_) {
    const bool whole_group = only.empty() || starts(p.group, only);
    const bool may_match = std::any_of(p.id_prefixes.begin(), p.id_prefixes.end(),
                                       [&](const std::string& id) { return starts(id, only) || starts(only, id); });
    if (!whole_group && !may_match) continue;
    for (auto& row : p.rows()) {
      if (std::none_of(p.id_prefixes.begin(), p.id_prefixes.end(), [&](const std::string& id) { return starts(row.id, id); })) {
        throw std::logic_error("calibration row '" + row.id + "' of group '" + p.group +
                               "' starts with none of the id prefixes its provider declared");
      }
      if (whole_group || starts(row.id, only)) rows.push_back(std::move(row));
    }
  }
  return rows;
}

CalibrationSuite default_calibration_suite() {
  CalibrationSuite suite;
  // Each part registers its provider here as its issue lands.
  suite.add("fabric", {"a2a_gb200_", "deepep_ll_h800_", "nccl_allreduce_", "mooncake_te_"}, fabric_calibration_rows);
  suite.add("fakegpu", {"gemm_", "mla_", "attn_"}, fakegpu_calibration_rows);
  suite.add("engine", {"v6_"}, v6_rows);
  suite.add("engine", {"v1_"}, v1_rows);
  suite.add("engine", {"v2_"}, v2_rows);
  suite.add("engine", {"v3_"}, v3_rows);
  return suite;
}

void print_table(std::ostream& out, const std::vector<CalibrationRow>& rows) {
  char line[512];
  std::snprintf(line, sizeof line, "%-36s %-11s %-10s %12s %12s %9s %9s  %s\n", "id", "basis", "unit", "published",
                "emulated", "error %", "tol %", "result");
  out << line;
  int failed = 0;
  int known = 0;
  int independent = 0;
  for (const auto& r : rows) {
    const double tol = r.tolerance_abs ? *r.tolerance_abs / std::fabs(r.published) * 100.0 : r.tolerance_pct;
    std::snprintf(line, sizeof line, "%-36s %-11s %-10s %12.4g %12.4g %+9.2f %9.2f  %s\n", r.id.c_str(),
                  to_string(r.basis), r.unit.c_str(), r.published, r.emulated, r.error_pct(), tol, r.pass() ? "pass" : r.known_miss() ? "known miss" : "FAIL");
    out << line;
    if (!r.note.empty()) out << "    note: " << r.note << "\n";
    if (r.basis == RowBasis::independent) ++independent;
    if (r.known_miss()) {
      ++known;
    } else if (!r.pass()) {
      ++failed;
    }
  }
  out << rows.size() << " rows, " << (rows.size() - static_cast<std::size_t>(failed + known)) << " pass, " << failed
      << " fail, " << known << " known to miss (their notes say why; --strict fails on them); " << independent
      << " independent, " << (static_cast<int>(rows.size()) - independent)
      << " calibrated (a constant was set from the figure: they check data entry)\n";
}

nlohmann::json to_json(const std::vector<CalibrationRow>& rows) {
  nlohmann::json out = {{"rows", nlohmann::json::array()}};
  for (const auto& r : rows) {
    const double tol = r.tolerance_abs ? *r.tolerance_abs / std::fabs(r.published) * 100.0 : r.tolerance_pct;
    nlohmann::json row = {{"id", r.id},
                          {"name", r.name},
                          {"basis", to_string(r.basis)},
                          {"unit", r.unit},
                          {"published", r.published},
                          {"emulated", r.emulated},
                          {"error_pct", r.error_pct()},
                          {"tolerance_pct", tol},
                          {"pass", r.pass()},
                          {"known_miss", r.known_miss()},
                          {"source", r.source}};
    if (r.tolerance_abs) row["tolerance_abs"] = *r.tolerance_abs;
    if (!r.note.empty()) row["note"] = r.note;
    out["rows"].push_back(std::move(row));
  }
  return out;
}

}  // namespace nvl::emu
