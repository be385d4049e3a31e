// A GPU that fails under a communicator: its collectives (queued, running and later ones) fail for
// every member with an error naming it, instead of the other members waiting for it forever.
#include <gtest/gtest.h>

#include "emu/cluster/emulated_cluster.h"
#include "emu/rt/virtual_runtime.h"
#include "engine/hal/hal_error.h"

using namespace nvl;

namespace comm_group_faults_test {

hal::CollectiveOp all_reduce(std::uint64_t bytes) {
  hal::CollectiveOp op;
  op.kind = hal::CollectiveKind::all_reduce;
  op.name = "ar";
  op.bytes = bytes;
  return op;
}

// Each of `n` ranks launches one graph (a kernel, then an all-reduce) and synchronizes; returns
// per rank the error its synchronize threw (empty on success).
std::vector<std::string> step(rt::Runtime& rt, emu::EmulatedCluster& c, const std::shared_ptr<hal::CommGroup>& g, int n,
                              const std::function<void()>& mid_step) {
  std::vector<std::string> errors(static_cast<std::size_t>(n));
  for (int r = 0; r < n; ++r) {
    rt.spawn("rank" + std::to_string(r), [&, r] {
      hal::Device& d = c.fleet().device(r);
      hal::Stream& s = d.create_stream("s");
      hal::Graph graph("step");
      graph.add(hal::KernelDesc{.kind = hal::KernelKind::gemm,
                                .dtype = hal::DType::fp8,
                                .flops = 1'000'000'000'000ULL * static_cast<std::uint64_t>(1 + r),
                                .bytes = 1 << 20,
                                .name = "gemm",
                                .shape = {}});
      graph.add(hal::CollectiveCall{g, r, all_reduce(64 << 20)});
      try {
        s.launch(d.instantiate(graph));
        s.synchronize();
      } catch (const hal::HalError& e) {
        errors[static_cast<std::size_t>(r)] = e.what();
      }
    });
  }
  rt.call_after(rt::us(300), mid_step);
  rt.run();
  return errors;
}

TEST(CommGroupFaults, GpuLostBeforeArrivingFailsTheOthersInsteadOfDeadlocking) {
  rt::VirtualRuntime rt;
  emu::EmulatedCluster c(rt, "gb300", "gb300-nvl72", 4);
  auto g = c.collectives().create_group("tp4", {0, 1, 2, 3});
  // Rank 3's kernel is the longest: the others have arrived at the all-reduce when it is lost.
  const auto errors = step(rt, c, g, 4, [&] { c.fleet().device(3).inject_gpu_lost(); });
  for (int r = 0; r < 4; ++r) EXPECT_FALSE(errors[static_cast<std::size_t>(r)].empty()) << "rank " << r;
  EXPECT_NE(errors[0].find("GPU 3"), std::string::npos) << errors[0];
  // A later call fails at once, naming the lost member.
  auto& fg = static_cast<fabric::FabricCommGroup&>(*g);
  EXPECT_TRUE(fg.member_down(3));
  std::string later;
  fg.arrive(0, std::make_shared<const hal::CollectiveOp>(all_reduce(1024)), [&](const hal::HalError* e) { later = e ? e->what() : "ok"; });
  rt.run();
  EXPECT_NE(later.find("aborted"), std::string::npos) << later;
}

TEST(CommGroupFaults, GpuLostWhileTheCollectiveRunsFailsIt) {
  rt::VirtualRuntime rt;
  emu::EmulatedCluster c(rt, "gb300", "gb300-nvl72", 4);
  auto g = c.collectives().create_group("tp4", {0, 1, 2, 3});
  std::vector<std::string> errors(4);
  bool all_arrived = false;
  for (int r = 0; r < 4; ++r) {
    g->arrive(r, std::make_shared<const hal::CollectiveOp>(all_reduce(1ULL << 32)), [&errors, r](const hal::HalError* e) {
      errors[static_cast<std::size_t>(r)] = e ? e->what() : "";
    });
  }
  all_arrived = true;
  // 4 GiB over NVLink takes milliseconds: 100 us in, it is still running.
  rt.call_after(rt::us(100), [&] { c.fleet().device(1).inject_gpu_lost(); });
  rt.run();
  EXPECT_TRUE(all_arrived);
  for (int r = 0; r < 4; ++r) EXPECT_NE(errors[static_cast<std::size_t>(r)].find("GPU 1"), std::string::npos) << r;
}

TEST(CommGroupFaults, EccErrorAbortsTheGroupAndTheResetGpuJoinsANewOne) {
  rt::VirtualRuntime rt;
  emu::EmulatedCluster c(rt, "gb300", "gb300-nvl72", 2);
  auto g = c.collectives().create_group("pair", {0, 1});
  const auto errors = step(rt, c, g, 2, [&] { c.fleet().device(1).inject_ecc_error(); });
  EXPECT_FALSE(errors[0].empty());
  EXPECT_FALSE(errors[1].empty());
  EXPECT_NE(errors[0].find("GPU 1"), std::string::npos) << errors[0];
  c.fleet().device(1).reset();
  // After the reset a new communicator over both runs its collective.
  const auto again = step(rt, c, c.collectives().create_group("pair-2", {0, 1}), 2, [] {});
  EXPECT_EQ(again[0], "");
  EXPECT_EQ(again[1], "");
}

}  // namespace comm_group_faults_test
