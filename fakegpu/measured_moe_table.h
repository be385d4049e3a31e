#pragma once
// Measured fused-MoE latencies of one GPU and kernel library (fakegpu/profiles/measured/<gpu>/moe_<library>.csv,
// copied from aiconfigurator's silicon tables by tools/calibration/import_moe_table.py): the whole routed-expert
// op on one GPU that holds every token and routes them itself (top-k selection, permute, the expert GEMMs,
// activation, finalize; no all-to-all), under balanced routing; or, in the same columns, one rank's experts
// behind DeepEP's dispatch (tokens then the EP group's). Looked up by expert dtype, hidden size and the op's
// experts, top-k, intermediate size and TP, each exactly (else no time: the caller prices another way), and
// EP, then read along tokens as read_measured_curve reads a curve. An EP size between two measured ones
// (EP8 between 4 and 16) is read log-linearly in EP between theirs at the same tokens: a rank's experts and
// its share of the tokens go as 1 / EP, so a time that does too is read exactly; outside the measured EP
// sizes, no time.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <vector>

#include "engine/hal/types.h"
#include "engine/hal/kernel_shape.h"

namespace nvl::fakegpu {

class MeasuredMoeTable {
 public:
  // The roofline time (ns) of the op at `tokens` and EP size `ep`: what utilisations are relative to.
  using Roofline = std::function<double(double tokens, std::int64_t ep)>;

  // Throws rt::InputError naming the file and line for a missing file, a bad header, a row whose fields
  // are not a known dtype and positive integers and latency, or rows out of order.
  static MeasuredMoeTable load(const std::filesystem::path& file);

  std::optional<double> time_ns(hal::DType dtype, std::int64_t hidden, const hal::FusedMoeShape& op,
                                const Roofline& roofline) const;
  bool has(hal::DType dtype) const;

 private:
  struct Curve {
    hal::DType dtype{};
    std::int64_t hidden = 0, inter = 0, topk = 0, experts = 0, tp = 0, ep = 0;
    std::vector<double> tokens;  // ascending
    std::vector<double> ns;
  };

  std::vector<Curve> curves_;  // in file order
};

}  // namespace nvl::fakegpu
