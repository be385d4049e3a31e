#pragma once
// Runs one collective or transfer on a fresh fabric in a VirtualRuntime and reports how long it took: the
// measurement behind calibration rows, tests and benchmarks (the published configuration, run through the
// fabric itself rather than a formula beside it).
#include <cstdint>
#include <string>
#include <vector>

#include "engine/hal/collectives.h"
#include "fabric/profile.h"

namespace nvl::fabric {

// Every member sends `bytes_per_pair` to every other member (the matrix a uniform top-k routing gives).
std::vector<hal::CollectiveOp> uniform_all_to_all(int members, std::uint64_t bytes_per_pair, hal::AllToAllRole role);

// Each member's part as a group takes it: shared (new objects, as a graph's ops are until it replays them).
std::vector<hal::SharedCollectiveOp> shared_parts(const std::vector<hal::CollectiveOp>& ops);

// Each member's completion, from the moment all members arrive (together, at t = 0), on a fabric using
// `kernel_library`'s all-reduce (Fabric::use_kernel_library). Throws the collective's hal::HalError if it fails.
std::vector<rt::Duration> member_times(const ClusterSpec& spec, const std::vector<hal::DeviceId>& members,
                                       const std::vector<hal::CollectiveOp>& ops, bool fast_path = true,
                                       const std::string& kernel_library = "roofline");

// Time from the moment all members arrive (together, at t = 0) to the last member's completion.
// Throws the collective's hal::HalError if it fails.
rt::Duration time_collective(const ClusterSpec& spec, const std::vector<hal::DeviceId>& members,
                             const std::vector<hal::CollectiveOp>& ops, bool fast_path = true,
                             const std::string& kernel_library = "roofline");

}  // namespace nvl::fabric
