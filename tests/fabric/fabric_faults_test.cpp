#include <gtest/gtest.h>

#include "emu/rt/virtual_runtime.h"
#include "fabric/fabric.h"
#include "fabric/profile_loader.h"

using namespace nvl;
using fabric::Endpoint;

namespace fabric_faults_test {

struct Rig {
  rt::VirtualRuntime rt;
  fabric::Fabric fab;
  explicit Rig(const std::string& profile = "gb300-nvl72", int units = 1)
      : fab(rt, fabric::make_cluster(profile, units)) {
    rt.log().keep_records(true);
  }
  // Transfers and returns (completion time, error text or "").
  std::pair<rt::Time, std::string> move(Endpoint a, Endpoint b, std::uint64_t bytes, hal::RdmaPath path) {
    std::pair<rt::Time, std::string> out;
    const rt::Time t0 = rt.now();
    fab.transfer(a, b, bytes, path, 1.0, rt::Duration(), "test", [&](const hal::HalError* e) {
      out = {rt.now(), e ? e->what() : ""};
    });
    rt.run();
    out.first = rt::Time::zero() + (out.first - t0);
    return out;
  }
  bool logged(const std::string& kind) {
    for (const auto& l : rt.log().lines()) {
      if (l.find("\"" + kind + "\"") != std::string::npos) return true;
    }
    return false;
  }
};

TEST(FabricRoutes, NvlinkInsideTheDomainNicsAcross) {
  Rig r("gb300-nvl72", 2);
  const auto nv = r.fab.route(Endpoint::gpu(0), Endpoint::gpu(71), hal::RdmaPath::automatic);
  EXPECT_TRUE(nv.nvlink);
  EXPECT_EQ(nv.channels.size(), 2u);
  const auto so = r.fab.route(Endpoint::gpu(0), Endpoint::gpu(72), hal::RdmaPath::automatic);
  EXPECT_FALSE(so.nvlink);
  const auto forced = r.fab.route(Endpoint::gpu(0), Endpoint::gpu(1), hal::RdmaPath::scale_out);
  EXPECT_FALSE(forced.nvlink);
  EXPECT_THROW(r.fab.route(Endpoint::gpu(0), Endpoint::gpu(72), hal::RdmaPath::nvlink), hal::HalError);
  // A Grace reaches its own GPUs over C2C: the GPU's link, then the Grace's memory.
  const auto c2c = r.fab.route(Endpoint::gpu(1), Endpoint::host(0), hal::RdmaPath::automatic);
  EXPECT_TRUE(c2c.nvlink);
  EXPECT_EQ(c2c.channels, (std::vector<int>{r.fab.topology().gpu(1).c2c_up, r.fab.topology().host(0).memory}));
}

TEST(FabricRoutes, RememberedGpuRoutesAreRoutesAndSeeFaults) {
  Rig r("gb300-nvl72", 2);
  const auto same = [&](hal::DeviceId a, hal::DeviceId b) {
    std::vector<int> channels = {-1};  // appended to, not replaced
    const rt::Duration latency = r.fab.append_gpu_route(a, b, channels);
    const auto route = r.fab.route(Endpoint::gpu(a), Endpoint::gpu(b), hal::RdmaPath::automatic);
    channels.erase(channels.begin());
    EXPECT_EQ(channels, route.channels) << a << " -> " << b;
    EXPECT_EQ(latency, route.latency) << a << " -> " << b;
  };
  const auto error = [&](auto&& call) -> std::string {
    try {
      call();
    } catch (const hal::HalError& e) {
      return e.what();
    }
    return "";
  };
  std::vector<int> scratch;
  for (int twice = 0; twice < 2; ++twice) {
    same(0, 71);
    same(0, 72);
    same(72, 5);
  }
  // Every plane of GPU 1 down: the remembered route fails as route() does, and works again after.
  for (int s = 0; s < 18; ++s) r.fab.set_link_down("rack0/tray0/gpu1", "rack0/nvswitch" + std::to_string(s), true);
  const std::string down = error([&] { r.fab.append_gpu_route(0, 1, scratch); });
  EXPECT_NE(down.find("rack0/tray0/gpu1<->rack0/nvswitch0 is down"), std::string::npos) << down;
  EXPECT_EQ(down, error([&] { r.fab.route(Endpoint::gpu(0), Endpoint::gpu(1), hal::RdmaPath::automatic); }));
  for (int s = 0; s < 18; ++s) r.fab.set_link_down("rack0/tray0/gpu1", "rack0/nvswitch" + std::to_string(s), false);
  same(0, 1);
  // A partition between the two GPUs' hosts blocks the remembered scale-out route until it heals.
  r.fab.partition({r.fab.topology().gpu(0).host}, {r.fab.topology().gpu(72).host});
  const std::string blocked = error([&] { r.fab.append_gpu_route(0, 72, scratch); });
  EXPECT_NE(blocked.find("network partition"), std::string::npos) << blocked;
  same(0, 71);
  r.fab.heal_partition();
  same(0, 72);
}

TEST(FabricFaults, LinkDownReroutesOverTheOtherPlanes) {
  Rig r;
  // 900 MB over 900 GB/s takes 1 ms; with one of 18 planes down, 17/18 of the bandwidth remains.
  const auto healthy = r.move(Endpoint::gpu(0), Endpoint::gpu(5), 900'000'000, hal::RdmaPath::nvlink);
  r.fab.set_link_down("rack0/tray0/gpu0", "rack0/nvswitch5", true);
  const auto degraded = r.move(Endpoint::gpu(0), Endpoint::gpu(5), 900'000'000, hal::RdmaPath::nvlink);
  EXPECT_EQ(degraded.second, "");
  const double ratio = static_cast<double>((degraded.first - rt::Time::zero()).ns() - 500) /
                       static_cast<double>((healthy.first - rt::Time::zero()).ns() - 500);
  EXPECT_NEAR(ratio, 18.0 / 17.0, 1e-3);
  EXPECT_TRUE(r.logged("link_down"));
}

TEST(FabricFaults, AllPlanesDownFailsNamingTheLink) {
  Rig r;
  for (int s = 0; s < 18; ++s) r.fab.set_link_down("rack0/tray0/gpu0", "rack0/nvswitch" + std::to_string(s), true);
  const auto res = r.move(Endpoint::gpu(0), Endpoint::gpu(5), 1000, hal::RdmaPath::nvlink);
  EXPECT_NE(res.second.find("link rack0/tray0/gpu0<->rack0/nvswitch0 is down"), std::string::npos) << res.second;
  EXPECT_NE(res.second.find("Xid 74"), std::string::npos) << res.second;
}

TEST(FabricFaults, LinkLostMidTransferFailsTheFlow) {
  Rig r;
  std::string err;
  r.fab.transfer(Endpoint::gpu(0), Endpoint::gpu(1), 100'000'000, hal::RdmaPath::scale_out, 1.0, rt::Duration(), "kv",
                 [&](const hal::HalError* e) { err = e ? e->what() : ""; });
  r.rt.call_at(rt::Time::from_ns(10'000), [&] { r.fab.set_element_down("rack0/tray0/nic0", true); });
  r.rt.run();
  EXPECT_NE(err.find("rack0/tray0/nic0 is down"), std::string::npos) << err;
  EXPECT_TRUE(r.logged("element_down"));
}

TEST(FabricFaults, DegradeSlowsAndRestores) {
  Rig r;
  const auto base = r.move(Endpoint::gpu(0), Endpoint::gpu(1), 50'000'000, hal::RdmaPath::scale_out);
  r.fab.degrade_link("rack0/tray0/nic0", "leaf0", 0.5);
  const auto slow = r.move(Endpoint::gpu(0), Endpoint::gpu(1), 50'000'000, hal::RdmaPath::scale_out);
  EXPECT_GT(slow.first - rt::Time::zero(), (base.first - rt::Time::zero()) * 19 / 10);
  r.fab.degrade_link("rack0/tray0/nic0", "leaf0", 1.0);
  const auto again = r.move(Endpoint::gpu(0), Endpoint::gpu(1), 50'000'000, hal::RdmaPath::scale_out);
  EXPECT_EQ(again.first, base.first);
  EXPECT_TRUE(r.logged("link_degraded"));
}

TEST(FabricFaults, FlapFailsTransfersWhileDownAndHealsAfter) {
  Rig r;
  r.fab.flap_link("rack0/tray0/nic0", "leaf0", rt::us(100), rt::us(100), 2);
  std::string during, after;
  r.rt.call_at(rt::Time::from_ns(50'000), [&] {
    r.fab.transfer(Endpoint::gpu(0), Endpoint::gpu(1), 1000, hal::RdmaPath::scale_out, 1.0, rt::Duration(), "x",
                   [&](const hal::HalError* e) { during = e ? e->what() : "ok"; });
  });
  r.rt.call_at(rt::Time::from_ns(450'000), [&] {
    r.fab.transfer(Endpoint::gpu(0), Endpoint::gpu(1), 1000, hal::RdmaPath::scale_out, 1.0, rt::Duration(), "x",
                   [&](const hal::HalError* e) { after = e ? e->what() : "ok"; });
  });
  r.rt.run();
  EXPECT_NE(during.find("rack0/tray0/nic0<->leaf0 is down"), std::string::npos) << during;
  EXPECT_EQ(after, "ok");
  EXPECT_TRUE(r.logged("link_flap"));
}

TEST(FabricFaults, PartitionBlocksScaleOutButNotNvlink) {
  Rig r;
  r.fab.partition({0}, {1});
  const auto blocked = r.move(Endpoint::gpu(0), Endpoint::gpu(2), 1000, hal::RdmaPath::scale_out);
  EXPECT_NE(blocked.second.find("network partition between rack0/tray0/grace0 and rack0/tray0/grace1"),
            std::string::npos)
      << blocked.second;
  EXPECT_EQ(r.move(Endpoint::gpu(0), Endpoint::gpu(2), 1000, hal::RdmaPath::nvlink).second, "");
  r.fab.heal_partition();
  EXPECT_EQ(r.move(Endpoint::gpu(0), Endpoint::gpu(2), 1000, hal::RdmaPath::scale_out).second, "");
  EXPECT_TRUE(r.logged("partition"));
}

TEST(FabricFaults, UnknownNamesAreRejected) {
  Rig r;
  EXPECT_THROW(r.fab.set_link_down("rack0/tray0/gpu0", "rack9/nvswitch0", true), std::invalid_argument);
  EXPECT_THROW(r.fab.set_link_down("rack0/tray0/gpu0", "rack0/tray1/gpu0", true), std::invalid_argument);
  EXPECT_THROW(r.fab.degrade_link("rack0/tray0/nic0", "leaf0", 0.0), std::invalid_argument);
}

}  // namespace fabric_faults_test
