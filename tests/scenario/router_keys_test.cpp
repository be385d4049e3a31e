// The router and KV-movement keys of a scenario (deployment.router.*, kv_transfer_path,
// kv_transfer_timeout_s, kv_pool, fetch_remote_prefix): defaults, values, and each bad value named.
#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "emu/rt/errors.h"
#include "emu/scenario/scenario.h"

namespace nvl::emu {
namespace router_keys_test {

const char* kMinimal = R"({"name": "t", "deployment": {"pools": [{"name": "dep", "role": "mixed", "dp": 8, "ep": 8}, {"name": "prefill", "role": "prefill", "tp": 8}]}, "workload": {"source": "gen:codex:trials=2"}})";

std::filesystem::path minimal_file() {
  const auto dir = std::filesystem::temp_directory_path() / ("nvl_router_keys_" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
  std::filesystem::create_directories(dir);
  const auto file = dir / "s.json";
  std::ofstream(file) << kMinimal;
  return file;
}

// The error of loading the minimal scenario with `set`, empty when it loads.
std::string error_with(const std::string& set) {
  try {
    load_scenario(minimal_file(), {set});
  } catch (const rt::InputError& e) {
    return e.what();
  }
  return "";
}

TEST(RouterKeys, DefaultsAndValues) {
  const Scenario d = load_scenario(minimal_file());
  EXPECT_EQ(d.deployment.kv_transfer_path, "rdma");
  EXPECT_DOUBLE_EQ(d.deployment.kv_transfer_timeout_s, 5.0);
  EXPECT_FALSE(d.deployment.kv_pool);
  EXPECT_TRUE(d.deployment.fetch_remote_prefix);
  EXPECT_DOUBLE_EQ(d.deployment.router.cache_threshold, 0.5);
  EXPECT_EQ(d.deployment.router.balance_abs_threshold, 32);
  EXPECT_DOUBLE_EQ(d.deployment.router.load_report_interval_s, 0.01);
  const Scenario s = load_scenario(
      minimal_file(), {"deployment.router_policy=pooled", "deployment.kv_pool=true", "deployment.kv_transfer_path=nvlink",
                       "deployment.kv_transfer_timeout_s=0.25", "deployment.router.cache_threshold=0.3",
                       "deployment.router.balance_abs_threshold=8", "deployment.router.balance_rel_threshold=1.5",
                       "deployment.router.weight_tokens_in_flight_per_1k=0.05",
                       "deployment.router.weight_free_kv_per_1k_blocks=0.1", "deployment.router.weight_requests=2",
                       "deployment.router.load_report_interval_s=0.002", "deployment.fetch_remote_prefix=false"});
  EXPECT_EQ(s.deployment.router_policy, "pooled");
  EXPECT_TRUE(s.deployment.kv_pool);
  EXPECT_EQ(s.deployment.kv_transfer_path, "nvlink");
  EXPECT_DOUBLE_EQ(s.deployment.kv_transfer_timeout_s, 0.25);
  EXPECT_DOUBLE_EQ(s.deployment.router.cache_threshold, 0.3);
  EXPECT_EQ(s.deployment.router.balance_abs_threshold, 8);
  EXPECT_DOUBLE_EQ(s.deployment.router.balance_rel_threshold, 1.5);
  EXPECT_DOUBLE_EQ(s.deployment.router.weight_tokens_in_flight_per_1k, 0.05);
  EXPECT_DOUBLE_EQ(s.deployment.router.weight_free_kv_per_1k_blocks, 0.1);
  EXPECT_DOUBLE_EQ(s.deployment.router.weight_requests, 2);
  EXPECT_DOUBLE_EQ(s.deployment.router.load_report_interval_s, 0.002);
  EXPECT_FALSE(s.deployment.fetch_remote_prefix);
}

TEST(RouterKeys, EachBadValueIsNamed) {
  const std::pair<const char*, const char*> bad[] = {
      {"deployment.kv_transfer_path=carrier_pigeon", "deployment.kv_transfer_path"},
      {"deployment.kv_transfer_timeout_s=0", "deployment.kv_transfer_timeout_s"},
      {"deployment.kv_pool=3", "deployment.kv_pool"},
      {"deployment.fetch_remote_prefix=yes", "deployment.fetch_remote_prefix"},
      {"deployment.router_policy=pooled", "deployment.router_policy"},  // without kv_pool
      {"deployment.router.cache_threshold=1.5", "deployment.router.cache_threshold"},
      {"deployment.router.balance_abs_threshold=-1", "deployment.router.balance_abs_threshold"},
      {"deployment.router.balance_rel_threshold=0.5", "deployment.router.balance_rel_threshold"},
      {"deployment.router.weight_requests=-1", "deployment.router.weight_requests"},
      {"deployment.router.weight_tokens_in_flight_per_1k=-0.1", "deployment.router.weight_tokens_in_flight_per_1k"},
      {"deployment.router.weight_free_kv_per_1k_blocks=-2", "deployment.router.weight_free_kv_per_1k_blocks"},
      {"deployment.router.load_report_interval_s=0", "deployment.router.load_report_interval_s"},
      {"deployment.router.load_report_interval_s=1e-9", "deployment.router.load_report_interval_s"},
      {"deployment.router.bogus=1", "deployment.router.bogus"},
  };
  for (const auto& [set, key] : bad) {
    const std::string e = error_with(set);
    EXPECT_NE(e.find(key), std::string::npos) << set << ": " << e;
    EXPECT_NE(e.find("s.json"), std::string::npos) << set << ": " << e;
  }
}

}  // namespace router_keys_test
}  // namespace nvl::emu
