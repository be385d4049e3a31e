// Updating an instantiated graph (as cudaGraphExecUpdate does) and shared kernel lists: an updated
// exec runs exactly what a fresh instantiation of the new graph would, launches already queued keep
// what they were launched with, and a shared list prices exactly as its kernels one by one.
#include <gtest/gtest.h>

#include "engine/hal/device.h"
#include "engine/hal/hal_error.h"
#include "fakegpu/fake_graph_exec.h"
#include "fakegpu/kernel_list_costs.h"
#include "fakegpu/profile_library.h"
#include "fixed_latency_group.h"
#include "rig.h"

namespace nvl::fakegpu {
namespace graph_update_test {

using hal::DType;
using hal::KernelKind;
using testing::FixedLatencyGroup;
using testing::kernel;
using testing::Rig;

hal::CollectiveOp all_to_all(const std::string& name) {
  hal::CollectiveOp o;
  o.kind = hal::CollectiveKind::all_to_all;
  o.name = name;
  o.send_bytes = {0};
  return o;
}

hal::SharedKernels list(std::vector<hal::KernelDesc> kernels) {
  return std::make_shared<const std::vector<hal::KernelDesc>>(std::move(kernels));
}

// A step of `layers` MoE-like layers on a one-member group: attention of `attention_flops`, then
// dispatch, experts and combine; its kernels one by one, or in shared lists when `shared`.
hal::Graph step(const std::shared_ptr<hal::CommGroup>& group, int layers, std::uint64_t attention_flops,
                bool shared = false) {
  const std::vector<hal::KernelDesc> attention{
      kernel(KernelKind::elementwise, DType::bf16, 1'000'000, 20'000'000, "norm"),
      kernel(KernelKind::attn_decode, DType::bf16, attention_flops, 200'000'000, "attn")};
  const std::vector<hal::KernelDesc> experts{kernel(KernelKind::moe_gemm, DType::fp8, 8'000'000'000, 60'000'000, "experts")};
  hal::Graph layer("layer");
  const auto add = [shared](hal::Graph& g, const std::vector<hal::KernelDesc>& ks) {
    if (shared) {
      g.add(list(ks));
    } else {
      for (const auto& k : ks) g.add(k);
    }
  };
  add(layer, attention);
  layer.add(hal::CollectiveCall{group, 0, all_to_all("dispatch")});
  add(layer, experts);
  layer.add(hal::CollectiveCall{group, 0, all_to_all("combine")});
  hal::Graph g("step");
  add(g, attention);  // a dense first layer
  g.add_repeat(std::move(layer), static_cast<std::size_t>(layers));
  g.add(kernel(KernelKind::sampler, DType::fp32, 1'000'000, 1'000'000, "sample"));
  return g;
}

hal::Graph kernels_only(std::uint64_t flops) {
  hal::Graph g("kernels");
  g.add(kernel(KernelKind::gemm, DType::fp8, flops, 10'000'000, "gemm"));
  g.add(kernel(KernelKind::elementwise, DType::bf16, 0, 50'000'000, "add"));
  return g;
}

void expect_same_layout(const FakeGraphExec& a, const FakeGraphExec& b) {
  ASSERT_EQ(a.segments().size(), b.segments().size());
  for (std::size_t i = 0; i < a.segments().size(); ++i) {
    const auto& sa = a.segments()[i];
    const auto& sb = b.segments()[i];
    const auto ka = a.kernels(sa);
    const auto kb = b.kernels(sb);
    ASSERT_EQ(ka.size(), kb.size()) << "segment " << i;
    for (std::size_t k = 0; k < ka.size(); ++k) {
      EXPECT_EQ(ka[k].compute_ns, kb[k].compute_ns);
      EXPECT_EQ(ka[k].memory_ns, kb[k].memory_ns);
      EXPECT_EQ(ka[k].overhead_ns, kb[k].overhead_ns);
    }
    EXPECT_EQ(sa.collective == nullptr, sb.collective == nullptr);
    if (sa.collective != nullptr && sb.collective != nullptr) {
      EXPECT_EQ(sa.collective->op->name, sb.collective->op->name);
    }
    EXPECT_EQ(sa.period_start, sb.period_start);
    EXPECT_EQ(sa.tail_iterations, sb.tail_iterations);
    EXPECT_EQ(sa.period_from, sb.period_from);
  }
}

TEST(GraphUpdate, AnUpdatedExecRunsWhatAFreshInstantiationWould) {
  // GPU 0 instantiates the step; GPU 1 updates an exec made for other graphs to it.
  Rig rig("gb300", 2);
  std::vector<std::shared_ptr<FixedLatencyGroup>> groups;
  std::vector<std::shared_ptr<hal::GraphExec>> execs;
  for (int gpu = 0; gpu < 2; ++gpu) {
    groups.push_back(std::make_shared<FixedLatencyGroup>(rig.rt, "ep", std::vector<hal::DeviceId>{gpu}, rt::us(7)));
  }
  execs.push_back(rig.gpu(0).instantiate(step(groups[0], 30, 9'000'000'000)));
  // Another structure first: other kernels and no collectives; then fewer layers.
  execs.push_back(rig.gpu(1).instantiate(kernels_only(3'000'000'000)));
  EXPECT_TRUE(rig.gpu(1).update(*execs[1], step(groups[1], 3, 1'000'000'000)));
  EXPECT_TRUE(rig.gpu(1).update(*execs[1], step(groups[1], 30, 9'000'000'000)));
  std::vector<rt::Time> done(2);
  for (int gpu = 0; gpu < 2; ++gpu) {
    hal::Stream& s = rig.gpu(gpu).create_stream("s");
    s.launch(execs[static_cast<std::size_t>(gpu)]);
    s.add_callback([&done, &rig, gpu](const hal::HalError*) { done[static_cast<std::size_t>(gpu)] = rig.rt.now(); });
  }
  rig.rt.run();
  EXPECT_EQ(groups[1]->arrivals.size(), 4u) << "two layers run exactly";
  EXPECT_GT(done[0], rt::Time());
  EXPECT_EQ(done[1], done[0]);
  EXPECT_EQ(execs[1]->name(), "step");
  expect_same_layout(dynamic_cast<const FakeGraphExec&>(*execs[1]), dynamic_cast<const FakeGraphExec&>(*execs[0]));
}

TEST(GraphUpdate, ALaunchAlreadyQueuedRunsTheGraphItWasLaunchedWith) {
  Rig rig("gb300");
  const auto a = rig.gpu().instantiate(kernels_only(2'000'000'000));
  const auto b = rig.gpu().instantiate(kernels_only(7'000'000'000));
  const rt::Duration expected = dynamic_cast<const FakeGraphExec&>(*a).compute_time() +
                                dynamic_cast<const FakeGraphExec&>(*b).compute_time() * 2;
  ASSERT_NE(dynamic_cast<const FakeGraphExec&>(*a).compute_time(), dynamic_cast<const FakeGraphExec&>(*b).compute_time());

  const auto exec = rig.gpu().instantiate(kernels_only(2'000'000'000));
  hal::Stream& s = rig.gpu().create_stream("s");
  s.launch(exec);
  ASSERT_TRUE(rig.gpu().update(*exec, kernels_only(7'000'000'000)));
  s.launch(exec);
  // The first launch still holds the first layout: this update lays out in fresh storage.
  ASSERT_TRUE(rig.gpu().update(*exec, kernels_only(7'000'000'000)));
  s.launch(exec);
  rig.rt.run();
  EXPECT_EQ(rig.rt.now(), rt::Time() + expected);
}

TEST(GraphUpdate, AFailedUpdateLeavesTheExecAsItWas) {
  Rig rig("h800");  // no FP4
  const auto exec = rig.gpu().instantiate(kernels_only(2'000'000'000));
  const rt::Duration before = dynamic_cast<const FakeGraphExec&>(*exec).compute_time();
  hal::Graph fp4("fp4");
  fp4.add(kernel(KernelKind::gemm, DType::fp8, 1'000'000, 1'000));
  fp4.add(kernel(KernelKind::gemm, DType::fp4, 1'000'000, 1'000));
  EXPECT_THROW(rig.gpu().update(*exec, fp4), hal::HalError);
  EXPECT_EQ(exec->name(), "kernels");
  rig.gpu().create_stream("s").launch(exec);
  rig.rt.run();
  EXPECT_EQ(rig.rt.now(), rt::Time() + before);
}

TEST(GraphUpdate, AnExecOfAnotherDeviceIsRefused) {
  Rig rig("gb300", 2);
  const auto exec = rig.gpu(0).instantiate(kernels_only(1'000'000));
  EXPECT_THROW(rig.gpu(1).update(*exec, kernels_only(2'000'000)), std::invalid_argument);
}

TEST(GraphUpdate, RefreshInstantiatesOnceAndThenUpdates) {
  Rig rig("gb300");
  std::shared_ptr<hal::GraphExec> exec;
  const auto first = hal::refresh(rig.gpu(), exec, kernels_only(1'000'000));
  ASSERT_NE(first, nullptr);
  const auto second = hal::refresh(rig.gpu(), exec, kernels_only(9'000'000'000));
  EXPECT_EQ(second, first);
  const auto fresh = rig.gpu().instantiate(kernels_only(9'000'000'000));
  EXPECT_EQ(dynamic_cast<const FakeGraphExec&>(*second).compute_time(),
            dynamic_cast<const FakeGraphExec&>(*fresh).compute_time());
}

TEST(SharedKernels, AListPricesAsItsKernelsOneByOne) {
  Rig rig("gb300");
  auto group = std::make_shared<FixedLatencyGroup>(rig.rt, "ep", std::vector<hal::DeviceId>{0}, rt::us(7));
  const hal::Graph one_by_one = step(group, 20, 5'000'000'000);
  const hal::Graph shared = step(group, 20, 5'000'000'000, true);
  EXPECT_EQ(shared.kernel_count(), one_by_one.kernel_count());
  EXPECT_EQ(shared.kernel_count(), 2u + 20 * 3 + 1);
  const auto a = rig.gpu().instantiate(one_by_one);
  const auto b = rig.gpu().instantiate(shared);
  expect_same_layout(dynamic_cast<const FakeGraphExec&>(*a), dynamic_cast<const FakeGraphExec&>(*b));
  EXPECT_EQ(dynamic_cast<const FakeGraphExec&>(*a).compute_time(), dynamic_cast<const FakeGraphExec&>(*b).compute_time());
}

TEST(SharedKernels, CostsAreRememberedForTheListsOfTheLastGraph) {
  const DeviceProfile p = load_device_profile_named("gb300");
  const CostModel model(p, 0);
  KernelListCosts costs(model, p.graph_node);
  const auto gate = list({kernel(KernelKind::gemm, DType::bf16, 4'000'000, 1'000'000, "gate")});
  const auto attention = list({kernel(KernelKind::attn_decode, DType::fp8, 9'000'000, 7'000'000, "attn"),
                               kernel(KernelKind::gemm, DType::fp8, 5'000'000, 2'000'000, "o")});
  costs.start_graph();
  const auto first = costs.costs(attention);
  ASSERT_EQ(first.size(), 2u);
  const KernelCost want = model.cost((*attention)[1], p.graph_node);
  EXPECT_EQ(first[1].compute_ns, want.compute_ns);
  EXPECT_EQ(first[1].memory_ns, want.memory_ns);
  EXPECT_EQ(first[1].overhead_ns, want.overhead_ns);
  costs.costs(gate);
  costs.finish_graph();
  EXPECT_EQ(attention.use_count(), 2) << "held while remembered";

  costs.start_graph();  // the next graph has the same gate but new attention
  const auto again = costs.costs(gate);
  EXPECT_EQ(again.data(), costs.costs(gate).data()) << "remembered, not priced again";
  costs.finish_graph();
  EXPECT_EQ(attention.use_count(), 1) << "forgotten once a graph did without it";
  EXPECT_EQ(gate.use_count(), 2);
}

TEST(SharedKernels, GraphsCountListKernelsAndRefuseNullParts) {
  hal::Graph body("body");
  body.add(list({kernel(KernelKind::gemm, DType::fp8, 1, 1), kernel(KernelKind::gemm, DType::fp8, 1, 1)}));
  body.add(kernel(KernelKind::elementwise, DType::bf16, 1, 1));
  hal::Graph g("g");
  g.add_repeat(std::move(body), 4);
  g.add(list({}));
  EXPECT_EQ(g.kernel_count(), 12u);
  EXPECT_THROW(g.add(hal::SharedKernels{}), std::invalid_argument);
  Rig rig("gb300");
  auto group = std::make_shared<FixedLatencyGroup>(rig.rt, "ep", std::vector<hal::DeviceId>{0}, rt::us(1));
  EXPECT_THROW(g.add(hal::CollectiveCall{group, 0, std::shared_ptr<const hal::CollectiveOp>{}}), std::invalid_argument);
}

}  // namespace graph_update_test
}  // namespace nvl::fakegpu
