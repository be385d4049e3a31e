#pragma once
// The fabric's calibration rows (REFERENCE.md §1.3): TensorRT-LLM NVLink all-to-all on GB200 NVL72,
// DeepEP low-latency on H800 + CX7, NCCL all-reduce on 8 x H100, Mooncake transfer engine over 8 x 400 Gb.
#include <vector>

#include "emu/validate/calibration_row.h"

namespace nvl::emu {

std::vector<CalibrationRow> fabric_calibration_rows();

}  // namespace nvl::emu
