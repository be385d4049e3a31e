#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "emu/rt/virtual_runtime.h"
#include "fabric/fabric_rdma.h"
#include "fabric/host_network.h"
#include "fabric/profile_loader.h"

using namespace nvl;

namespace network_rdma_test {
std::shared_ptr<const hal::Message> bytes(std::string b) { return std::make_shared<hal::BytesMessage>(std::move(b)); }

struct Rig {
  rt::VirtualRuntime rt;
  fabric::Fabric fab;
  Rig() : fab(rt, fabric::make_cluster("gb300-nvl72", 1)) {}
};

TEST(HostNetwork, DeliversAfterOverheadAndPathLatency) {
  Rig r;
  fabric::HostNetwork net(r.fab);
  rt::Time got;
  std::string payload;
  net.listen({5, 7}, [&](hal::Address from, const hal::Message& m) {
    EXPECT_EQ(from.host, 0);
    got = r.rt.now();
    payload = m.bytes();
  });
  net.send({0, 1}, {5, 7}, bytes("hello"));
  r.rt.run();
  EXPECT_EQ(payload, "hello");
  EXPECT_GT(got - rt::Time::zero(), r.fab.profile().message_overhead);
  EXPECT_LT(got - rt::Time::zero(), r.fab.profile().message_overhead + rt::us(10));
}

TEST(HostNetwork, PartitionAndMissingListenerLoseTheMessage) {
  Rig r;
  fabric::HostNetwork net(r.fab);
  net.listen({1, 0}, [](hal::Address, const hal::Message&) { FAIL() << "delivered across a partition"; });
  r.fab.partition({0}, {1});
  std::string err1, err2;
  net.send({0, 0}, {1, 0}, bytes("x"), [&](const hal::HalError* e) { err1 = e ? e->what() : ""; });
  net.send({0, 0}, {2, 9}, bytes("x"), [&](const hal::HalError* e) { err2 = e ? e->what() : ""; });
  r.rt.run();
  EXPECT_NE(err1.find("partition"), std::string::npos) << err1;
  EXPECT_NE(err2.find("no listener on host 2 port 9"), std::string::npos) << err2;
  EXPECT_EQ(net.lost(), 2u);
  EXPECT_THROW(net.listen({1, 0}, [](hal::Address, const hal::Message&) {}), std::logic_error);
}

TEST(HostNetwork, APathCutThenRestoredLosesThenDeliversWithTheSameLatency) {
  Rig r;
  fabric::HostNetwork net(r.fab);
  std::vector<rt::Duration> latencies;
  rt::Time sent_at;
  net.listen({1, 0}, [&](hal::Address, const hal::Message&) { latencies.push_back(r.rt.now() - sent_at); });
  std::vector<std::string> errors;
  const auto send_now = [&] {
    sent_at = r.rt.now();
    net.send({0, 0}, {1, 0}, bytes(std::string(64, 'x')), [&](const hal::HalError* e) {
      if (e != nullptr) errors.emplace_back(e->what());
    });
    r.rt.run();
  };
  send_now();
  r.fab.partition({0}, {1});
  send_now();
  r.fab.heal_partition();
  send_now();
  const std::string nic = r.fab.topology().elements()[static_cast<std::size_t>(
      r.fab.topology().nic(r.fab.topology().host(0).nics.front()).element)].name;
  r.fab.set_element_down(nic, true);
  send_now();
  r.fab.set_element_down(nic, false);
  send_now();
  ASSERT_EQ(latencies.size(), 3u);
  EXPECT_EQ(latencies[1], latencies[0]);
  EXPECT_EQ(latencies[2], latencies[0]);
  ASSERT_EQ(errors.size(), 2u);
  EXPECT_NE(errors[0].find("partition"), std::string::npos) << errors[0];
  EXPECT_NE(errors[1].find(nic), std::string::npos) << errors[1];
  EXPECT_EQ(net.lost(), 2u);
  EXPECT_EQ(net.delivered(), 3u);
}

TEST(Rdma, WriteWaitFromAFiberOverCx8) {
  Rig r;
  fabric::FabricRdma rdma(r.fab);
  const auto grace = rdma.register_host_memory(0, 1 << 30, 0);
  const auto hbm = rdma.register_device_memory(8, 1 << 30);
  rt::Time done;
  r.rt.spawn("kv-fetch", [&] {
    hal::RdmaOp op;
    op.local = hbm;
    op.remote = grace;
    op.bytes = 1 << 30;
    op.path = hal::RdmaPath::scale_out;
    op.name = "fetch";
    rdma.read_wait(op);
    done = r.rt.now();
  });
  r.rt.run();
  // 1 GiB at CX8's 100 GB/s times the RDMA efficiency: about 11.9 ms.
  const double expect_s = static_cast<double>(1 << 30) / (100e9 * r.fab.profile().rdma_efficiency);
  EXPECT_NEAR((done - rt::Time::zero()).seconds(), expect_s, expect_s * 0.01);
}

TEST(Rdma, NvlinkPathBetweenGpusAndErrors) {
  Rig r;
  fabric::FabricRdma rdma(r.fab);
  const auto a = rdma.register_device_memory(0, 1 << 20);
  const auto b = rdma.register_device_memory(40, 1 << 20);
  hal::RdmaOp op{a, 0, b, 0, 1 << 20, hal::RdmaPath::nvlink, "p2p"};
  std::string err = "pending";
  rdma.write(op, [&](const hal::HalError* e) { err = e ? e->what() : ""; });
  r.rt.run();
  EXPECT_EQ(err, "");
  op.remote_offset = 1;
  EXPECT_THROW(rdma.write(op, [](const hal::HalError*) {}), std::out_of_range);
  EXPECT_THROW(rdma.register_host_memory(0, 10, 5), std::invalid_argument);
  rdma.deregister(b);
  op.remote_offset = 0;
  EXPECT_THROW(rdma.write(op, [](const hal::HalError*) {}), std::invalid_argument);
  // NIC down: the GPUDirect path through it fails, naming the NIC.
  const auto c = rdma.register_device_memory(4, 1 << 20);
  r.fab.set_element_down("rack0/tray0/nic0", true);
  hal::RdmaOp so{a, 0, c, 0, 1 << 20, hal::RdmaPath::scale_out, "so"};
  rdma.write(so, [&](const hal::HalError* e) { err = e ? e->what() : ""; });
  r.rt.run();
  EXPECT_NE(err.find("rack0/tray0/nic0 is down"), std::string::npos) << err;
}

}  // namespace network_rdma_test
