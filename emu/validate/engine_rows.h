#pragma once
// Calibration rows that run the serving engine on an emulated cluster for a published configuration
// (REFERENCE.md §3): decode throughput (V2, V3) and GLM-5's HBM budget on B300 (V6).
#include <vector>

#include "emu/validate/calibration_row.h"

namespace nvl::emu {

std::vector<CalibrationRow> engine_calibration_rows();

}  // namespace nvl::emu
