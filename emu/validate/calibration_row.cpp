#include "emu/validate/calibration_row.h"

#include <cmath>

namespace nvl::emu {

double CalibrationRow::error_pct() const {
  if (published == 0) return emulated == 0 ? 0.0 : INFINITY;
  return (emulated - published) / published * 100.0;
}

bool CalibrationRow::pass() const {
  if (!std::isfinite(emulated)) return false;
  if (tolerance_abs) return std::fabs(emulated - published) <= *tolerance_abs;
  return std::fabs(error_pct()) <= tolerance_pct;
}

}  // namespace nvl::emu
