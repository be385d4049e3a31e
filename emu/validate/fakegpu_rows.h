#pragma once
// The device model's calibration rows (issue [2/8]): each runs the published kernel on an emulated
// device and compares the achieved rate with the published one.
#include <vector>

#include "emu/validate/calibration_row.h"

namespace nvl::emu {

// gemm_fp8_h800, mla_decode_h800, attn_prefill_b200.
std::vector<CalibrationRow> fakegpu_calibration_rows();

}  // namespace nvl::emu
