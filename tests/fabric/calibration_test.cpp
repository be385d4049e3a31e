// Every fabric calibration row against its published figure (REFERENCE.md §1.3), within the row's
// stated tolerance: TensorRT-LLM a2a 15%, DeepEP low-latency 20%, NCCL all-reduce 15%, Mooncake 15%.
#include <gtest/gtest.h>

#include "emu/validate/fabric_rows.h"

using namespace nvl;

TEST(FabricCalibration, EveryRowWithinItsTolerance) {
  const auto rows = emu::fabric_calibration_rows();
  EXPECT_EQ(rows.size(), 16u + 8u + 1u + 1u);
  for (const auto& r : rows) {
    EXPECT_GT(r.published, 0) << r.id;
    EXPECT_LE(std::abs(r.error_pct()), r.tolerance_pct)
        << r.id << ": published " << r.published << " " << r.unit << ", emulated " << r.emulated;
  }
}
