#include "fabric/nccl_test_sweep.h"

#include <cstdio>
#include <ostream>
#include <stdexcept>

#include "fabric/measured_nccl_table.h"
#include "fabric/probe.h"
#include "fabric/topology.h"

namespace nvl::fabric {

namespace {

constexpr std::uint64_t kElementBytes = 2;  // bfloat16, as the engine's activations

std::vector<hal::CollectiveOp> ops_for(hal::CollectiveKind kind, int gpus, std::uint64_t bytes) {
  if (kind == hal::CollectiveKind::all_to_all) {
    return uniform_all_to_all(gpus, bytes / static_cast<std::uint64_t>(gpus), hal::AllToAllRole::plain);
  }
  std::vector<hal::CollectiveOp> ops(static_cast<std::size_t>(gpus));
  for (int r = 0; r < gpus; ++r) {
    hal::CollectiveOp& op = ops[static_cast<std::size_t>(r)];
    op.kind = kind;
    op.name = "collective-test";
    op.bytes = bytes;
    op.peer = kind == hal::CollectiveKind::send_recv ? (r + 1) % gpus : -1;
  }
  return ops;
}

}  // namespace

bool nccl_test_kind(const std::string& name, hal::CollectiveKind& kind) {
  static const std::pair<const char*, hal::CollectiveKind> kinds[] = {
      {"all_reduce", hal::CollectiveKind::all_reduce},         {"all_gather", hal::CollectiveKind::all_gather},
      {"reduce_scatter", hal::CollectiveKind::reduce_scatter}, {"alltoall", hal::CollectiveKind::all_to_all},
      {"broadcast", hal::CollectiveKind::broadcast},           {"sendrecv", hal::CollectiveKind::send_recv}};
  for (const auto& [n, k] : kinds) {
    if (name == n) {
      kind = k;
      return true;
    }
  }
  return false;
}

std::vector<NcclTestRow> nccl_test_sweep(const ClusterSpec& spec, hal::CollectiveKind kind, int gpus,
                                         std::uint64_t min_bytes, std::uint64_t max_bytes, std::uint64_t step_factor) {
  const int available = spec.units * spec.node.gpus();
  if (gpus < 2 || gpus > available) {
    throw std::invalid_argument("--gpus: expected 2 to " + std::to_string(available) + " (the cluster's GPUs), got " +
                                std::to_string(gpus));
  }
  if (min_bytes == 0 || max_bytes < min_bytes) {
    throw std::invalid_argument("--min-bytes and --max-bytes: expected 0 < min <= max");
  }
  if (step_factor < 2) throw std::invalid_argument("--step-factor: expected at least 2");
  std::vector<hal::DeviceId> members(static_cast<std::size_t>(gpus));
  for (int r = 0; r < gpus; ++r) members[static_cast<std::size_t>(r)] = r;
  std::vector<NcclTestRow> rows;
  for (std::uint64_t bytes = min_bytes;; bytes *= step_factor) {
    NcclTestRow row;
    row.bytes = bytes;
    const double seconds = time_collective(spec, members, ops_for(kind, gpus, bytes)).seconds();
    row.time_us = seconds * 1e6;
    row.algbw_gbps = static_cast<double>(bytes) / seconds / 1e9;
    row.busbw_gbps = row.algbw_gbps * nccl_bus_factor(kind, gpus);
    rows.push_back(row);
    if (bytes > max_bytes / step_factor) break;
  }
  return rows;
}

void print_nccl_test(std::ostream& out, hal::CollectiveKind kind, const std::vector<NcclTestRow>& rows) {
  const bool reduces = kind == hal::CollectiveKind::all_reduce || kind == hal::CollectiveKind::reduce_scatter;
  const int root = kind == hal::CollectiveKind::broadcast ? 0 : -1;
  char line[160];
  out << "#                                                              out-of-place\n"
         "#       size         count      type   redop    root     time   algbw   busbw\n"
         "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)\n";
  double busbw_sum = 0;
  for (const NcclTestRow& r : rows) {
    std::snprintf(line, sizeof line, "%12llu  %12llu  %8s  %6s  %6d  %7.2f  %6.2f  %6.2f\n",
                  static_cast<unsigned long long>(r.bytes), static_cast<unsigned long long>(r.bytes / kElementBytes),
                  "bfloat16", reduces ? "sum" : "none", root, r.time_us, r.algbw_gbps, r.busbw_gbps);
    out << line;
    busbw_sum += r.busbw_gbps;
  }
  std::snprintf(line, sizeof line, "# Avg bus bandwidth    : %g\n", rows.empty() ? 0.0 : busbw_sum / static_cast<double>(rows.size()));
  out << line;
}

}  // namespace nvl::fabric
