#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "emu/rt/errors.h"
#include "fabric/profile_loader.h"

using namespace nvl;

namespace profile_loader_test {

std::string dir() { return fabric::default_profile_dir(); }

nlohmann::json read(const std::string& name) {
  std::ifstream in(dir() + "/" + name + ".json");
  return nlohmann::json::parse(in);
}

// Writes j to a temporary file of this test's own (ctest runs tests as parallel processes) and returns
// the loader's error message (empty when it loads).
std::string load_error(const nlohmann::json& j) {
  const std::string test = ::testing::UnitTest::GetInstance()->current_test_info()->name();
  const auto path = (std::filesystem::temp_directory_path() / ("nvl_fabric_bad_profile_" + test + ".json")).string();
  std::ofstream(path) << j.dump();
  try {
    fabric::load_node_profile(path);
  } catch (const rt::InputError& e) {
    return e.what();
  }
  return "";
}

TEST(ProfileLoader, LoadsEveryShippedProfile) {
  for (const char* name : {"gb300-nvl72", "gb200-nvl72", "hgx-h100", "hgx-h800", "hgx-h200", "hgx-b200"}) {
    const auto p = fabric::load_node_profile(dir() + "/" + name + ".json");
    EXPECT_EQ(p.name, name);
    EXPECT_GT(p.nvlink_lane.bytes_per_s, 0);
  }
  const auto gb300 = fabric::load_node_profile(dir() + "/gb300-nvl72.json");
  EXPECT_EQ(gb300.gpus(), 72);
  EXPECT_DOUBLE_EQ(gb300.nic.bytes_per_s, 100e9);  // CX8 800 Gb/s
  const auto s = fabric::load_scaleout_profile(dir() + "/leaf-spine.json");
  EXPECT_GE(s.oversubscription, 1.0);
  const auto c = fabric::load_cluster(dir() + "/clusters/gb300-nvl72-x2.json");
  EXPECT_EQ(c.units, 2);
}

TEST(ProfileLoader, UnknownKeyNamesFileAndPath) {
  auto j = read("gb300-nvl72");
  j["nvlink"]["lane"]["colour"] = "green";
  const auto msg = load_error(j);
  EXPECT_NE(msg.find("nvl_fabric_bad_profile_UnknownKeyNamesFileAndPath.json"), std::string::npos) << msg;
  EXPECT_NE(msg.find("nvlink.lane.colour: unknown key"), std::string::npos) << msg;
}

TEST(ProfileLoader, MissingKeyIsNamed) {
  auto j = read("gb300-nvl72");
  j["collectives"].erase("a2a_combine");
  EXPECT_NE(load_error(j).find("collectives.a2a_combine: missing key"), std::string::npos);
}

TEST(ProfileLoader, WrongTypeIsNamed) {
  auto j = read("hgx-h100");
  j["trays"] = "one";
  EXPECT_NE(load_error(j).find("trays: expected an integer in [1, 1000000], found string"), std::string::npos);
  j = read("hgx-h100");
  j["nic"]["bytes_per_s"]["value"] = "fast";
  EXPECT_NE(load_error(j).find("nic.bytes_per_s.value: expected a number"), std::string::npos);
}

TEST(ProfileLoader, NegativeNumberIsRejected) {
  auto j = read("gb200-nvl72");
  j["rdma"]["overhead_ns"]["value"] = -5;
  EXPECT_NE(load_error(j).find("rdma.overhead_ns.value: expected a number >= 0"), std::string::npos);
  j = read("gb200-nvl72");
  j["gpus_per_tray"] = -4;
  EXPECT_NE(load_error(j).find("gpus_per_tray: expected an integer in [1, 1000000], found -4"), std::string::npos);
}

TEST(ProfileLoader, NumberWithoutSourceIsRejected) {
  auto j = read("gb200-nvl72");
  j["nic"]["latency_ns"].erase("source");
  EXPECT_NE(load_error(j).find("nic.latency_ns.source: missing key"), std::string::npos);
}

TEST(ProfileLoader, EfficiencyOutsideFractionIsRejected) {
  auto j = read("gb300-nvl72");
  j["collectives"]["nvls"]["efficiency"]["value"] = 1.5;
  EXPECT_NE(load_error(j).find("collectives.nvls.efficiency.value: expected a fraction in (0, 1]"), std::string::npos);
}

TEST(ProfileLoader, C2cRatesAreCheckedAndNamed) {
  auto j = read("gb300-nvl72");
  j["c2c"]["host_to_device_efficiency"]["value"] = 1.2;
  EXPECT_NE(load_error(j).find("c2c.host_to_device_efficiency.value: expected a fraction in (0, 1]"), std::string::npos);
  j = read("gb300-nvl72");
  j["c2c"].erase("host_memory_bytes_per_s");
  EXPECT_NE(load_error(j).find("c2c.host_memory_bytes_per_s: missing key"), std::string::npos);
}

TEST(ProfileLoader, MissingFileAndBadJson) {
  EXPECT_THROW(fabric::load_node_profile("/nonexistent/x.json"), rt::InputError);
  const auto path = (std::filesystem::temp_directory_path() / ("nvl_fabric_not_json_" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()) + ".json")).string();
  std::ofstream(path) << "{ not json";
  EXPECT_THROW(fabric::load_node_profile(path), rt::InputError);
}

}  // namespace profile_loader_test
