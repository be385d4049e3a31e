#pragma once
// Measured nccl-tests times of one system (fabric/profiles/measured/<profile>/nccl.csv, copied from
// aiconfigurator's silicon tables by tools/calibration/import_nccl_table.py): all-reduce, all-gather and
// reduce-scatter, each a curve of time over message size per measured GPU count. Read as
// aiconfigurator reads them:
//   - piecewise-linear in bytes between measured sizes; below the smallest, its time (the latency floor);
//     above the largest, the largest's algorithm bandwidth held, so time grows linearly;
//   - a GPU count the table lacks takes the curve of the largest measured count below it (the smallest
//     above, under all of them), scaled by the ratio of nccl-tests' bus-bandwidth factors (2(n-1)/n for
//     all-reduce, (n-1)/n for the others): the bus bandwidth measured at that count is assumed to hold
//     at the other. For the NVL72 domain (every GPU one switch hop from every other, NCCL's NVLS) this
//     is the stated model above 8 GPUs; the latency floor is scaled with it.
#include <array>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <vector>

#include "engine/hal/collectives.h"

namespace nvl::fabric {

// nccl-tests' bus bandwidth is its algorithm bandwidth (size / time) times this: 2(n-1)/n for all-reduce,
// (n-1)/n for all-gather, reduce-scatter and all-to-all, 1 for broadcast and send/recv.
double nccl_bus_factor(hal::CollectiveKind kind, int gpus);

struct MeasuredCollectiveTime {
  double ns = 0;          // the whole call, on idle links
  double latency_ns = 0;  // of that, what does not move data: the curve's floor at this GPU count
};

class MeasuredNcclTable {
 public:
  // Throws rt::InputError naming the file and line for a missing file, a bad header, an unknown op, a
  // GPU count under 2, a size or latency that is not positive, or rows out of the importer's order.
  static MeasuredNcclTable load(const std::filesystem::path& file);

  // No time for kinds the table does not hold (all-to-all, broadcast, send/recv) or a group under 2 GPUs.
  std::optional<MeasuredCollectiveTime> time(hal::CollectiveKind kind, int gpus, std::uint64_t bytes) const;

 private:
  struct Curve {
    int gpus = 0;
    std::vector<double> bytes;  // ascending
    std::vector<double> ns;
  };
  // In the order of the file's op names (alphabetical).
  static constexpr std::array kOps{hal::CollectiveKind::all_gather, hal::CollectiveKind::all_reduce,
                                   hal::CollectiveKind::reduce_scatter};
  std::array<std::vector<Curve>, kOps.size()> curves_;  // by kOps position, each ascending in gpus
};

}  // namespace nvl::fabric
