#include "emu/validate/calibration_row.h"

#include <cmath>

namespace nvl::emu {

double CalibrationRow::error_pct() const {
  if (published == 0) return emulated == 0 ? 0.0 : INFINITY;
  return (emulated - published) / published * 100.0;
}

const char* to_string(RowBasis basis) { return basis == RowBasis::calibrated ? "calibrated" : "independent"; }

CalibrationRow row(std::string id, RowBasis basis, std::string name, std::string unit, std::string source,
                   double published, double emulated, double tolerance_pct) {
  CalibrationRow r;
  r.id = std::move(id);
  r.basis = basis;
  r.name = std::move(name);
  r.unit = std::move(unit);
  r.source = std::move(source);
  r.published = published;
  r.emulated = emulated;
  r.tolerance_pct = tolerance_pct;
  return r;
}

bool CalibrationRow::pass() const {
  if (!std::isfinite(emulated)) return false;
  if (tolerance_abs) return std::fabs(emulated - published) <= *tolerance_abs;
  return std::fabs(error_pct()) <= tolerance_pct;
}

}  // namespace nvl::emu
