#include <gtest/gtest.h>

#include "fabric/profile_loader.h"
#include "fabric/topology.h"

using namespace nvl;

TEST(Topology, Gb300RackShape) {
  const fabric::Topology t(fabric::make_cluster("gb300-nvl72", 1));
  EXPECT_EQ(t.gpu_count(), 72);
  EXPECT_EQ(t.host_count(), 36);
  EXPECT_EQ(t.nic_count(), 72);
  for (const char* name : {"rack0/tray3/gpu2", "rack0/nvswitch5", "rack0/nvswitch17", "rack0/tray3/nic1",
                           "rack0/tray17/grace1", "leaf0"}) {
    EXPECT_GE(t.element(name), 0) << name;
  }
  EXPECT_LT(t.element("rack0/nvswitch18"), 0);
  // GPU 14 is tray 3, slot 2 (rack-major numbering).
  const auto& g = t.gpu(14);
  EXPECT_EQ(t.elements()[static_cast<std::size_t>(g.element)].name, "rack0/tray3/gpu2");
  // 18 NVLink lanes, one to each NVSwitch chip, 50 GB/s each: 900 GB/s per direction.
  const auto& up = t.channels()[static_cast<std::size_t>(g.nvl_up)];
  ASSERT_EQ(up.links.size(), 18u);
  double cap = 0;
  for (int l : up.links) cap += t.links()[static_cast<std::size_t>(l)].bytes_per_s;
  EXPECT_DOUBLE_EQ(cap, 900e9);
  EXPECT_EQ(t.links_between(g.element, t.element("rack0/nvswitch5")).size(), 1u);
  // Grace 1 of tray 3 hosts GPUs 2 and 3 of that tray and uses NICs 2 and 3.
  const auto& h = t.host(7);
  EXPECT_EQ(h.gpus, (std::vector<int>{14, 15}));
  EXPECT_EQ(h.nics.size(), 2u);
  EXPECT_GE(h.memory, 0);
  // Each GPU's own C2C link, a half of the Grace's 450 GB/s per direction; the Grace's memory, 500 GB/s
  // both ways together, is one channel.
  const auto& c2c = t.channels()[static_cast<std::size_t>(t.gpu(14).c2c_up)];
  ASSERT_EQ(c2c.links.size(), 1u);
  EXPECT_DOUBLE_EQ(t.links()[static_cast<std::size_t>(c2c.links[0])].bytes_per_s, 225e9);
  double memory = 0;
  for (int l : t.channels()[static_cast<std::size_t>(h.memory)].links) memory += t.links()[static_cast<std::size_t>(l)].bytes_per_s;
  EXPECT_DOUBLE_EQ(memory, 500e9);
}

TEST(Topology, HgxClusterOverLeafSpine) {
  const fabric::Topology t(fabric::make_cluster("hgx-h800", 8));
  EXPECT_EQ(t.gpu_count(), 64);
  EXPECT_EQ(t.host_count(), 8);
  EXPECT_GE(t.element("node7/gpu7"), 0);
  EXPECT_GE(t.element("node0/cpu0"), 0);
  EXPECT_GE(t.element("spine0"), 0);  // 64 NICs over 32-port leaves: two leaves and a spine layer
  EXPECT_GE(t.leaf(1).up, 0);
  EXPECT_EQ(t.host(0).memory, -1);
  EXPECT_EQ(t.gpu(0).c2c_up, -1);
}
