#pragma once
// What nccl-tests prints for a collective on the emulated fabric: one row per message size, from
// min_bytes to max_bytes multiplying by step_factor, each timed on a fresh idle fabric among the first
// `gpus` GPUs of the cluster. Sizes mean what nccl-tests' do: the all-reduce and broadcast buffer, the
// gathered output of all-gather, the unreduced input of reduce-scatter, each rank's whole send buffer of
// all-to-all (size / gpus to every rank, itself included), and what each rank sends to the next of
// send/recv.
#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "engine/hal/collectives.h"
#include "fabric/profile.h"

namespace nvl::fabric {

struct NcclTestRow {
  std::uint64_t bytes = 0;
  double time_us = 0;
  double algbw_gbps = 0;  // bytes / time
  double busbw_gbps = 0;  // algbw x nccl-tests' bus factor for the collective and GPU count
};

// The nccl-tests name ("all_reduce", "all_gather", "reduce_scatter", "alltoall", "broadcast", "sendrecv");
// false for another.
bool nccl_test_kind(const std::string& name, hal::CollectiveKind& kind);

// Throws std::invalid_argument for gpus under 2 or above the cluster's, sizes out of order or zero, or a
// step factor under 2.
std::vector<NcclTestRow> nccl_test_sweep(const ClusterSpec& spec, hal::CollectiveKind kind, int gpus,
                                         std::uint64_t min_bytes, std::uint64_t max_bytes, std::uint64_t step_factor);

// nccl-tests' table (out-of-place columns): size, count and type (bfloat16), redop, root, time, algbw,
// busbw, then its "Avg bus bandwidth" line.
void print_nccl_test(std::ostream& out, hal::CollectiveKind kind, const std::vector<NcclTestRow>& rows);

}  // namespace nvl::fabric
