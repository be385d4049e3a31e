// Profiles load with the facts REFERENCE.md gives, and every kind of bad input is an InputError
// that names the file, the key path and what was expected.
#include <filesystem>
#include <fstream>
#include <functional>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "emu/rt/errors.h"
#include "fakegpu/profile_library.h"

namespace nvl::fakegpu {
namespace profile_test {

namespace fs = std::filesystem;

TEST(Profiles, EveryDeviceProfileLoadsWithItsHost) {
  for (const char* name : {"b300", "gb300", "b200", "gb200", "h100", "h200", "h800"}) {
    SCOPED_TRACE(name);
    const DeviceProfile p = load_device_profile_named(name);
    const HostProfile h = load_host_profile_for(p);
    EXPECT_GT(p.hbm_usable_bytes, 0u);
    EXPECT_LE(p.hbm_usable_bytes, p.hbm_bytes);
    EXPECT_GT(p.peak(hal::DType::fp8), p.peak(hal::DType::bf16));
    EXPECT_GT(h.memory_bytes, 0u);
    EXPECT_LT(p.graph_node, p.kernel_launch) << "a kernel inside a graph must start cheaper than on its own";
  }
}

TEST(Profiles, FactsMatchReference) {
  // REFERENCE.md §1.1 and §1.2.
  const DeviceProfile gb300 = load_device_profile_named("gb300");
  EXPECT_EQ(gb300.hbm_bytes, 288'000'000'000u);
  EXPECT_DOUBLE_EQ(gb300.peak(hal::DType::fp4), 15e15);
  EXPECT_DOUBLE_EQ(gb300.hbm_bytes_per_s, 8e12);
  EXPECT_EQ(gb300.host_link, HostLinkKind::nvlink_c2c);
  EXPECT_EQ(gb300.gpus_per_host, 2);
  const DeviceProfile b300 = load_device_profile_named("b300");
  EXPECT_DOUBLE_EQ(b300.peak(hal::DType::fp8), 4.5e15);
  EXPECT_EQ(b300.host_link, HostLinkKind::pcie);
  const DeviceProfile h800 = load_device_profile_named("h800");
  EXPECT_DOUBLE_EQ(h800.peak(hal::DType::fp8), 1979e12);
  EXPECT_DOUBLE_EQ(h800.hbm_bytes_per_s, 3.35e12);
  EXPECT_EQ(h800.peak(hal::DType::fp4), 0.0) << "Hopper has no FP4 path";
  const DeviceProfile h200 = load_device_profile_named("h200");
  EXPECT_EQ(h200.hbm_bytes, 141'000'000'000u);
  const HostProfile grace = load_host_profile_for(gb300);
  EXPECT_EQ(grace.kind, HostKind::grace);
  EXPECT_EQ(grace.memory_bytes, 480'000'000'000u);
  EXPECT_DOUBLE_EQ(grace.c2c_bytes_per_s, 900e9);
}

TEST(Profiles, UnknownNameListsTheProfiles) {
  try {
    load_device_profile_named("a100");
    FAIL() << "expected InputError";
  } catch (const rt::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("h800"), std::string::npos) << e.what();
  }
}

// Copies the shipped profiles to a scratch directory, lets the test edit one, and loads it.
class BadProfile : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("nvl_fakegpu_profiles_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
                                        "_" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    for (const auto& e : fs::directory_iterator(default_profile_dir())) {
      if (e.is_regular_file()) fs::copy_file(e.path(), dir_ / e.path().filename());
    }
  }
  void TearDown() override { fs::remove_all(dir_); }

  void edit(const std::string& file, const std::function<void(nlohmann::json&)>& change) {
    nlohmann::json j;
    {
      std::ifstream in(dir_ / file);
      j = nlohmann::json::parse(in);
    }
    change(j);
    std::ofstream(dir_ / file) << j.dump(2);
  }
  // The InputError message of loading h800 (and its host) from the scratch directory.
  std::string error_of_loading() {
    try {
      const DeviceProfile p = load_device_profile_named("h800", dir_);
      load_host_profile_for(p, dir_);
    } catch (const rt::InputError& e) {
      return e.what();
    }
    return "";
  }

  fs::path dir_;
};

void expect_mentions(const std::string& message, std::initializer_list<const char*> parts) {
  ASSERT_FALSE(message.empty()) << "expected an InputError";
  for (const char* p : parts) EXPECT_NE(message.find(p), std::string::npos) << "'" << p << "' not in: " << message;
}

TEST_F(BadProfile, UnknownKey) {
  edit("h800.json", [](auto& j) { j["hbm_bandwith"] = j["hbm_bytes_per_s"]; });
  expect_mentions(error_of_loading(), {"h800.json", "hbm_bandwith", "unknown key"});
}

TEST_F(BadProfile, MeasuredTableThatIsNotThere) {
  edit("h800.json", [](auto& j) { j["measured_kernels"] = {{"sglang", {{"gemm", "measured/h800/gemm_sglang.csv"}}}}; });
  expect_mentions(error_of_loading(), {"h800.json", "measured_kernels.sglang.gemm", "no file"});
  edit("h800.json", [](auto& j) { j["measured_kernels"] = {{"sglang", {{"attention", "x.csv"}}}}; });
  expect_mentions(error_of_loading(), {"h800.json", "measured_kernels.sglang"});
}

TEST_F(BadProfile, MissingKey) {
  edit("h800.json", [](auto& j) { j.erase("sm_count"); });
  expect_mentions(error_of_loading(), {"h800.json", "sm_count", "missing key"});
}

TEST_F(BadProfile, WrongType) {
  edit("h800.json", [](auto& j) { j["hbm_bytes_per_s"]["value"] = "3.35 TB/s"; });
  expect_mentions(error_of_loading(), {"h800.json", "hbm_bytes_per_s.value", "expected a number", "string"});
}

TEST_F(BadProfile, NegativeNumber) {
  edit("h800.json", [](auto& j) { j["kernel_launch_ns"]["value"] = -5; });
  expect_mentions(error_of_loading(), {"h800.json", "kernel_launch_ns.value", ">= 0"});
}

TEST_F(BadProfile, NumberWithoutSource) {
  edit("h800.json", [](auto& j) { j["peak_flops_per_s"]["fp8"] = 1979e12; });
  expect_mentions(error_of_loading(), {"h800.json", "peak_flops_per_s.fp8", "expected an object"});
}

TEST_F(BadProfile, EmptySource) {
  edit("h800.json", [](auto& j) { j["hbm_bytes"]["source"] = ""; });
  expect_mentions(error_of_loading(), {"hbm_bytes.source", "non-empty string"});
}

TEST_F(BadProfile, FractionAboveOne) {
  edit("efficiency_hopper.json", [](auto& j) { j["kernels"]["gemm"]["memory_efficiency"]["value"] = 1.2; });
  expect_mentions(error_of_loading(), {"efficiency_hopper.json", "kernels.gemm.memory_efficiency.value", "(0, 1]"});
}

TEST_F(BadProfile, MissingKernelKind) {
  edit("efficiency_hopper.json", [](auto& j) { j["kernels"].erase("sampler"); });
  expect_mentions(error_of_loading(), {"efficiency_hopper.json", "kernels.sampler", "missing key"});
}

TEST_F(BadProfile, UnknownKernelKind) {
  edit("efficiency_hopper.json", [](auto& j) { j["kernels"]["conv"] = j["kernels"]["gemm"]; });
  expect_mentions(error_of_loading(), {"kernels.conv", "unknown kernel kind"});
}

TEST_F(BadProfile, UnknownDtype) {
  edit("efficiency_hopper.json",
       [](auto& j) { j["kernels"]["gemm"]["compute_efficiency"]["fp64"] = j["kernels"]["gemm"]["compute_efficiency"]["default"]; });
  expect_mentions(error_of_loading(), {"kernels.gemm.compute_efficiency.fp64", "unknown key"});
}

TEST_F(BadProfile, BadHostLinkKind) {
  edit("h800.json", [](auto& j) { j["host_link"]["kind"] = "usb"; });
  expect_mentions(error_of_loading(), {"host_link.kind", "nvlink_c2c", "pcie"});
}

TEST_F(BadProfile, FractionalCount) {
  edit("h800.json", [](auto& j) { j["sm_count"]["value"] = 131.5; });
  expect_mentions(error_of_loading(), {"sm_count.value", "whole number"});
}

TEST_F(BadProfile, UsableAboveCapacity) {
  edit("h800.json", [](auto& j) { j["hbm_usable_bytes"]["value"] = 90e9; });
  expect_mentions(error_of_loading(), {"hbm_usable_bytes", "at most hbm_bytes"});
}

TEST_F(BadProfile, HostKind) {
  edit("hgx_host.json", [](auto& j) { j["kind"] = "arm"; });
  expect_mentions(error_of_loading(), {"hgx_host.json", "kind", "grace", "x86"});
}

TEST_F(BadProfile, NotJson) {
  std::ofstream(dir_ / "h800.json") << "{ \"name\": ";
  expect_mentions(error_of_loading(), {"h800.json", "not valid JSON"});
}

TEST_F(BadProfile, MissingEfficiencyTable) {
  edit("h800.json", [](auto& j) { j["architecture"] = "ampere"; });
  expect_mentions(error_of_loading(), {"architecture", "efficiency_ampere.json"});
}

}  // namespace profile_test
}  // namespace nvl::fakegpu
