#include "fabric/probe.h"

#include <algorithm>
#include <optional>

#include "emu/rt/virtual_runtime.h"
#include "fabric/fabric_collectives.h"

namespace nvl::fabric {

std::vector<hal::CollectiveOp> uniform_all_to_all(int members, std::uint64_t bytes_per_pair, hal::AllToAllRole role) {
  std::vector<hal::CollectiveOp> ops(static_cast<std::size_t>(members));
  for (int r = 0; r < members; ++r) {
    auto& op = ops[static_cast<std::size_t>(r)];
    op.kind = hal::CollectiveKind::all_to_all;
    op.name = role == hal::AllToAllRole::moe_combine ? "combine" : "dispatch";
    op.role = role;
    op.send_bytes.assign(static_cast<std::size_t>(members), bytes_per_pair);
    op.send_bytes[static_cast<std::size_t>(r)] = 0;
  }
  return ops;
}

std::vector<hal::SharedCollectiveOp> shared_parts(const std::vector<hal::CollectiveOp>& ops) {
  std::vector<hal::SharedCollectiveOp> parts;
  parts.reserve(ops.size());
  for (const auto& op : ops) parts.push_back(std::make_shared<const hal::CollectiveOp>(op));
  return parts;
}

std::vector<rt::Duration> member_times(const ClusterSpec& spec, const std::vector<hal::DeviceId>& members,
                                       const std::vector<hal::CollectiveOp>& ops, bool fast_path,
                                       const std::string& kernel_library) {
  rt::VirtualRuntime rt;
  Fabric fabric(rt, spec, FabricOptions{rt::Duration()});
  fabric.use_kernel_library(kernel_library);
  FabricCollectives collectives(fabric, CollectivesOptions{fast_path});
  auto group = collectives.create_group("probe", members);
  std::vector<rt::Duration> done(ops.size());
  std::optional<hal::HalError> failure;
  const auto parts = shared_parts(ops);
  for (std::size_t r = 0; r < parts.size(); ++r) {
    group->arrive(static_cast<int>(r), parts[r], [&, r](const hal::HalError* e) {
      if (e != nullptr && !failure) failure.emplace(*e);
      done[r] = rt.now() - rt::Time::zero();
    });
  }
  rt.run();
  if (failure) throw *failure;
  return done;
}

rt::Duration time_collective(const ClusterSpec& spec, const std::vector<hal::DeviceId>& members,
                             const std::vector<hal::CollectiveOp>& ops, bool fast_path,
                             const std::string& kernel_library) {
  const std::vector<rt::Duration> done = member_times(spec, members, ops, fast_path, kernel_library);
  return *std::max_element(done.begin(), done.end());
}

}  // namespace nvl::fabric
