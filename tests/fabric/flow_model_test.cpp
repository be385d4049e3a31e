#include <gtest/gtest.h>

#include "emu/rt/virtual_runtime.h"
#include "fabric/flow_model.h"

using namespace nvl;
using rt::Time;

namespace flow_model_test {

struct Rig {
  rt::VirtualRuntime rt;
  fabric::FlowModel model;
  explicit Rig(std::vector<double> caps, rt::Duration interval = rt::Duration()) : model(rt, std::move(caps), interval) {}
  // Starts a flow at `at` and records when it finishes.
  void flow(Time at, std::vector<int> path, double bytes, Time* done, rt::Duration latency = rt::Duration()) {
    rt.call_at(at, [this, path = std::move(path), bytes, done, latency] {
      model.start(path, bytes, latency, [this, done](int failed) {
        EXPECT_EQ(failed, fabric::FlowModel::kNoFailure);
        *done = rt.now();
      });
    });
  }
};

TEST(FlowModel, SingleFlowTakesBytesOverBandwidthPlusLatency) {
  Rig r({1e9});
  Time done;
  r.flow(Time::zero(), {0}, 1e6, &done, rt::us(2));
  r.rt.run();
  EXPECT_EQ(done.ns(), 1'000'000 + 2'000);
}

TEST(FlowModel, FlowsShareALinkAndTheSurvivorSpeedsUp) {
  Rig r({1e9});
  Time a, b;
  r.flow(Time::zero(), {0}, 1e6, &a);
  r.flow(Time::zero(), {0}, 2e6, &b);
  r.rt.run();
  // Both at 0.5 GB/s until a ends at 2 ms (1 MB moved each); b's last 1 MB then runs at 1 GB/s.
  EXPECT_EQ(a.ns(), 2'000'000);
  EXPECT_EQ(b.ns(), 3'000'000);
}

TEST(FlowModel, MaxMinFairnessAcrossBottlenecks) {
  // Channel 0 (1 GB/s) carries flows x and y; channel 1 (10 GB/s) carries y and z.
  // Max-min: x = y = 0.5 GB/s (bottleneck 0), z gets the rest of channel 1: 9.5 GB/s.
  Rig r({1e9, 10e9});
  Time x, y, z;
  r.flow(Time::zero(), {0}, 0.5e6, &x);
  r.flow(Time::zero(), {0, 1}, 0.5e6, &y);
  r.flow(Time::zero(), {1}, 9.5e6, &z);
  r.rt.run();
  EXPECT_EQ(x.ns(), 1'000'000);
  EXPECT_EQ(y.ns(), 1'000'000);
  EXPECT_EQ(z.ns(), 1'000'000);
}

TEST(FlowModel, LaterFlowOnlyReratesItsComponent) {
  Rig r({1e9, 1e9});
  Time a, b, c;
  r.flow(Time::zero(), {0}, 1e6, &a);
  r.flow(Time::zero(), {1}, 1e6, &b);
  r.flow(Time::from_ns(500'000), {1}, 0.25e6, &c);  // joins channel 1 only
  r.rt.run();
  EXPECT_EQ(a.ns(), 1'000'000);
  // b: 0.5 MB alone, then 0.5 GB/s shared with c until c's 0.25 MB are done at 1 ms, then alone.
  EXPECT_EQ(c.ns(), 1'000'000);
  EXPECT_EQ(b.ns(), 1'250'000);
  // The start at 0 is one recompute (coalesced); a's component is never re-rated after it.
  EXPECT_EQ(r.model.recomputes(), 4u);
  EXPECT_EQ(r.model.flows_rerated(), 5u);
}

TEST(FlowModel, CapacityChangeReratesAndZeroFails) {
  Rig r({1e9});
  Time done;
  r.flow(Time::zero(), {0}, 1e6, &done);
  r.rt.call_at(Time::from_ns(500'000), [&] { r.model.set_capacity(0, 0.5e9); });
  r.rt.run();
  EXPECT_EQ(done.ns(), 1'500'000);

  int failed = -2;
  r.rt.call_at(r.rt.now(), [&] { r.model.start({0}, 1e6, rt::Duration(), [&](int f) { failed = f; }); });
  r.rt.call_at(r.rt.now() + rt::us(10), [&] { r.model.set_capacity(0, 0); });
  r.rt.run();
  EXPECT_EQ(failed, 0);
  EXPECT_EQ(r.model.active(), 0u);
}

TEST(FlowModel, UsageRecordsBytesPerInterval) {
  Rig r({1e9}, rt::us(100));
  Time done;
  r.flow(Time::zero(), {0}, 250e3, &done);  // 250 us at 1 GB/s
  r.rt.run();
  const auto& v = r.model.usage().bytes(0);
  ASSERT_EQ(v.size(), 3u);
  EXPECT_NEAR(v[0], 100e3, 1);
  EXPECT_NEAR(v[1], 100e3, 1);
  EXPECT_NEAR(v[2], 50e3, 1);
  EXPECT_NEAR(r.model.usage().total_bytes(0), 250e3, 1);
}

TEST(FlowModel, ACappedFlowTakesNoMoreThanItsCapAndLeavesTheRest) {
  // 1 GB/s shared by a flow capped at 0.3 GB/s and an uncapped one: 0.3 and 0.7 GB/s (max-min with the
  // cap as a channel of its own). The uncapped 2.1 MB end at 3 ms; the capped 3 MB have 2.1 MB left,
  // then run alone at their cap: 7 ms more, 10 ms in all.
  Rig r({1e9});
  Time capped, open;
  r.rt.call_at(Time::zero(), [&] {
    r.model.start({0}, 3e6, rt::Duration(), [&](int) { capped = r.rt.now(); }, 0.3e9);
    r.model.start({0}, 2.1e6, rt::Duration(), [&](int) { open = r.rt.now(); });
  });
  r.rt.run();
  EXPECT_NEAR(static_cast<double>(open.ns()), 3e6, 2);
  EXPECT_NEAR(static_cast<double>(capped.ns()), 10e6, 2);
}

}  // namespace flow_model_test
