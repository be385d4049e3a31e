#pragma once
// Calibration rows that run the serving engine on an emulated cluster for a published configuration
// (REFERENCE.md §3): prefill throughput (V1), decode throughput (V2, V3) and GLM-5's HBM budget on B300 (V6).
#include <vector>

#include "emu/validate/calibration_row.h"

namespace nvl::emu {

// One provider per published result, so that `validate --only v2` runs V2 alone.
std::vector<CalibrationRow> v1_rows();  // prefill throughput, 4 x 8 H100, at 1K, 2K and 4K prompts
std::vector<CalibrationRow> v2_rows();  // decode throughput, 9 x 8 H100
std::vector<CalibrationRow> v3_rows();  // decode throughput, GB200 NVL72
std::vector<CalibrationRow> v6_rows();  // GLM-5's KV room per B300

}  // namespace nvl::emu
