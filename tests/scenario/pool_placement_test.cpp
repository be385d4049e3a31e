// deployment.pools placement: "auto" packs in pool order after the listed and rack-placed pools, each
// instance takes its own run of GPUs, and overlaps, lists of the wrong length, GPUs or racks the cluster
// has not are InputErrors naming deployment.pools[i].gpus.
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "emu/rt/errors.h"
#include "emu/scenario/scenario.h"

namespace nvl::emu {
namespace pool_placement_test {

std::filesystem::path write(const std::string& pools, const std::string& cluster = R"({"units": 1})") {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("nvl_pools_" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
  std::filesystem::create_directories(dir);
  const auto file = dir / "s.json";
  std::ofstream(file) << R"({"name": "t", "model": {"profile": "deepseek-v3"}, "cluster": )" << cluster
                      << R"(, "deployment": {"pools": )" << pools << R"(}, "workload": {"source": "gen:codex:trials=2"}})";
  return file;
}

std::string error_of(const std::string& pools, const std::string& cluster = R"({"units": 1})") {
  try {
    load_scenario(write(pools, cluster));
  } catch (const rt::InputError& e) {
    return e.what();
  }
  return "";
}

std::vector<std::int64_t> range(std::int64_t first, std::int64_t count) {
  std::vector<std::int64_t> v;
  for (std::int64_t g = first; g < first + count; ++g) v.push_back(g);
  return v;
}

void expect_has(const std::string& text, const std::string& part) {
  EXPECT_NE(text.find(part), std::string::npos) << "'" << part << "' not in: " << text;
}

TEST(PoolPlacement, AutoPacksThePoolsInOrderAndEachInstanceTakesItsOwnGpus) {
  const Scenario s = load_scenario(write(R"([{"name": "d", "role": "mixed", "dp": 8, "ep": 8},
                                            {"name": "p", "role": "prefill", "instances": 2, "tp": 4}])"));
  const auto& pools = s.deployment.pools;
  ASSERT_EQ(pools.size(), 2u);
  EXPECT_EQ(pools[0].instance_gpus, std::vector<std::vector<std::int64_t>>{range(0, 8)});
  EXPECT_EQ(pools[1].instance_gpus, (std::vector<std::vector<std::int64_t>>{range(8, 4), range(12, 4)}));
  EXPECT_EQ(s.deployment.cluster_gpus(), 16);
  EXPECT_EQ(s.deployment.rank_gpus(), range(0, 8));
  EXPECT_EQ(s.deployment.prefill_gpus(), range(8, 8));
  // The prefill pool's defaults are the prefill worker's.
  EXPECT_EQ(pools[1].token_budget, 16'384);
  EXPECT_EQ(pools[1].chunk_tokens, 16'384);
  EXPECT_EQ(pools[1].max_running, 64);
  EXPECT_EQ(pools[0].token_budget, 8'192);
}

TEST(PoolPlacement, ListedGpusAreReservedBeforeAutoPoolsPack) {
  // The prefill pool is listed on the last tray pair; the auto pool after it still starts at GPU 0,
  // and a second auto pool skips nothing it does not have to.
  const Scenario s = load_scenario(write(R"([{"name": "p", "role": "prefill", "tp": 8, "gpus": [64, 65, 66, 67, 68, 69, 70, 71]},
                                            {"name": "d", "role": "mixed", "dp": 4, "ep": 4, "gpus": "auto"},
                                            {"name": "e", "role": "mixed", "dp": 4, "ep": 4}])"));
  EXPECT_EQ(s.deployment.pools[0].instance_gpus.front(), range(64, 8));
  EXPECT_EQ(s.deployment.pools[1].instance_gpus.front(), range(0, 4));
  EXPECT_EQ(s.deployment.pools[2].instance_gpus.front(), range(4, 4));
  EXPECT_EQ(s.deployment.cluster_gpus(), 72);
}

TEST(PoolPlacement, ARackPoolIsPackedInsideItsRack) {
  const Scenario s = load_scenario(write(R"([{"name": "d", "role": "mixed", "dp": 8, "ep": 8},
                                            {"name": "p", "role": "prefill", "tp": 8, "gpus": {"rack": 1}}])",
                                         R"({"units": 2})"));
  EXPECT_EQ(s.deployment.pools[1].instance_gpus.front(), range(72, 8));
  expect_has(error_of(R"([{"name": "d", "role": "mixed", "dp": 8, "ep": 8, "gpus": {"rack": 2}}])", R"({"units": 2})"),
             "deployment.pools[0].gpus.rack: no rack 2: the cluster has 2 (cluster.units)");
  expect_has(error_of(R"([{"name": "d", "role": "mixed", "dp": 64, "ep": 64, "gpus": {"rack": 0}},
                          {"name": "p", "role": "prefill", "tp": 16, "gpus": {"rack": 0}}])"),
             "deployment.pools[1].gpus: pool 'p' needs 16 GPUs; 8 are free in rack 0");
}

TEST(PoolPlacement, OverlappingGpusNameBothPools) {
  const std::string e = error_of(R"([{"name": "d", "role": "mixed", "dp": 2, "ep": 2, "gpus": [0, 1]},
                                     {"name": "p", "role": "prefill", "tp": 2, "gpus": [1, 2]}])");
  expect_has(e, "deployment.pools[1].gpus: GPU 1 is already used by pool 'd'");
}

TEST(PoolPlacement, MoreGpusThanTheClusterIsRejected) {
  expect_has(error_of(R"([{"name": "d", "role": "mixed", "dp": 64, "ep": 64}, {"name": "p", "role": "prefill", "tp": 16}])"),
             "deployment.pools[1].gpus: pool 'p' needs 16 GPUs; 8 are free in 1 x gb300-nvl72 (72 GPUs)");
  expect_has(error_of(R"([{"name": "d", "role": "mixed", "dp": 2, "ep": 2, "gpus": [0, 72]}])"),
             "deployment.pools[0].gpus: GPU 72 is not in the cluster: 1 x gb300-nvl72 (72 GPUs)");
  EXPECT_EQ(error_of(R"([{"name": "d", "role": "mixed", "dp": 64, "ep": 64}, {"name": "p", "role": "prefill", "tp": 64}])",
                     R"({"units": 2})"),
            "");
}

TEST(PoolPlacement, AListOfTheWrongLengthOrShapeIsRejected) {
  expect_has(error_of(R"([{"name": "d", "role": "mixed", "dp": 4, "ep": 4, "instances": 2, "gpus": [0, 1, 2, 3]}])"),
             "deployment.pools[0].gpus: 4 GPUs listed; the pool needs 2 instances x 4 (tp x dp x pp) = 8");
  expect_has(error_of(R"([{"name": "d", "role": "mixed", "gpus": "packed"}])"),
             "deployment.pools[0].gpus: expected \"auto\", a list of GPU indices or {\"rack\": R}");
  expect_has(error_of(R"([{"name": "d", "role": "mixed", "gpus": [-1]}])"), "GPU indices are whole numbers >= 0");
}

TEST(PoolPlacement, PoolNamesAndRolesAreChecked) {
  expect_has(error_of(R"([{"name": "d", "role": "mixed"}, {"name": "d", "role": "mixed"}])"),
             "deployment.pools[1].name: another pool is already named 'd'");
  expect_has(error_of(R"([{"name": "d", "role": "both"}])"),
             "deployment.pools[0].role: 'both' is not one of decode, prefill, mixed, aggregated");
  expect_has(error_of(R"([])"), "deployment.pools: needs at least one pool");
  expect_has(error_of(R"([{"name": "d", "role": "mixed", "gpu": "auto"}])"), "deployment.pools[0].gpu");
}

TEST(PoolPlacement, SetReachesAPoolByNameOrIndex) {
  const auto file = write(R"([{"name": "d", "role": "mixed", "dp": 8, "ep": 8}, {"name": "p", "role": "prefill", "tp": 8}])");
  const Scenario s = load_scenario(file, {"deployment.pools[p].tp=4", "deployment.pools[0].max_running=32"});
  EXPECT_EQ(s.deployment.pools[1].tp, 4);
  EXPECT_EQ(s.deployment.pools[0].max_running, 32);
  try {
    load_scenario(file, {"deployment.pools[q].tp=4"});
    FAIL() << "no pool q";
  } catch (const rt::InputError& e) {
    expect_has(e.what(), "'pools' has no entry q");
  }
}

}  // namespace pool_placement_test
}  // namespace nvl::emu
