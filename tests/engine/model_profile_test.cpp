// Model profiles against the published figures of REFERENCE.md §2.
#include <cmath>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "emu/rt/errors.h"
#include "emu/rt/json_reader.h"
#include "engine/model/kv_footprint.h"
#include "engine/model/model_profile.h"
#include "engine/model/weight_footprint.h"

namespace nvl::engine {
namespace {

ModelProfile load(const std::string& name) { return load_model_profile(model_profile_path(name)); }

double rel_error(double got, double want) { return std::fabs(got - want) / want; }

TEST(ModelProfile, ParameterCountsMatchThePublishedTotals) {
  for (const char* name : {"glm-5", "deepseek-v3", "glm-4.5"}) {
    const ModelProfile m = load(name);
    // Counted from the config's shapes; norms and biases are left out, hence a small tolerance.
    EXPECT_LT(rel_error(static_cast<double>(m.total_params()), m.published_params_total), 0.02)
        << name << ": " << m.total_params();
    // "Active" here excludes the embedding lookup; publications differ on that, so 3%.
    EXPECT_LT(rel_error(static_cast<double>(m.active_params()), m.published_params_active), 0.03)
        << name << ": " << m.active_params();
  }
}

TEST(ModelProfile, KvBytesPerTokenMatchReference) {
  // REFERENCE.md §2, "KV bytes / token, all layers".
  EXPECT_EQ(kv_bytes_per_token(load("glm-5"), hal::DType::fp8).attention_per_layer * 78, 44'928u);
  EXPECT_EQ(kv_bytes_per_token(load("glm-5"), hal::DType::bf16).attention_per_layer * 78, 89'856u);
  const auto glm5 = kv_bytes_per_token(load("glm-5"), hal::DType::fp8);
  EXPECT_NEAR(static_cast<double>(glm5.indexer_per_layer * 78), 10'300.0, 10'300.0 * 0.01);  // "~132 B x 78 = 10.3 KB"
  EXPECT_EQ(kv_bytes_per_token(load("deepseek-v3"), hal::DType::fp8).total(), 35'136u);
  EXPECT_EQ(kv_bytes_per_token(load("deepseek-v3"), hal::DType::bf16).total(), 70'272u);
  EXPECT_EQ(kv_bytes_per_token(load("glm-4.5"), hal::DType::bf16).total(), 376'832u);
  EXPECT_EQ(kv_bytes_per_token(load("glm-5"), hal::DType::fp8, true).layers, 79);
}

TEST(WeightFootprint, ExpertsSplitOverEpAndRedundancyIsCounted) {
  const ModelProfile m = load("glm-5");
  const WeightDtypes fp8;
  const auto ep64 = weight_footprint_per_gpu(m, ParallelLayout{.tp = 1, .dp = 64, .ep = 64}, fp8);
  EXPECT_EQ(ep64.expert_slots, 4);
  const auto ep64r = weight_footprint_per_gpu(m, ParallelLayout{.tp = 1, .dp = 64, .ep = 64, .redundant_experts = 64},
                                              fp8);
  EXPECT_EQ(ep64r.expert_slots, 5);
  EXPECT_EQ(ep64r.routed_expert_bytes * 4, ep64.routed_expert_bytes * 5);
  // 256 experts cannot spread over 72 ranks without redundancy; with 32 copies they can (4 per rank).
  EXPECT_THROW(weight_footprint_per_gpu(m, ParallelLayout{.dp = 72, .ep = 72}, fp8), std::invalid_argument);
  EXPECT_EQ(weight_footprint_per_gpu(m, ParallelLayout{.dp = 72, .ep = 72, .redundant_experts = 32}, fp8).expert_slots,
            4);
  // TP8 without EP: every part split eight ways, so the GPU holds an eighth of the model (plus the router).
  const auto tp8 = weight_footprint_per_gpu(m, ParallelLayout{.tp = 8}, fp8);
  EXPECT_NEAR(static_cast<double>(tp8.routed_expert_bytes),
              static_cast<double>(m.moe_layers() * m.n_routed_experts * m.expert_params()) / 8.0, 1.0);
  EXPECT_THROW(weight_footprint_per_gpu(m, ParallelLayout{.tp = 7}, fp8), std::invalid_argument);
}

class BadModelProfile : public ::testing::Test {
 protected:
  std::string error_for(const std::function<void(nlohmann::json&)>& edit) {
    nlohmann::json j = rt::JsonReader::parse_file(model_profile_path("glm-5"));
    edit(j);
    const auto path = std::filesystem::temp_directory_path() / ("nvl_bad_model_" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()) + ".json");
    std::ofstream(path) << j.dump();
    try {
      load_model_profile(path);
    } catch (const rt::InputError& e) {
      return e.what();
    }
    return "(no error)";
  }
};

TEST_F(BadModelProfile, EachKindOfBadInputIsNamed) {
  EXPECT_NE(error_for([](nlohmann::json& j) { j["colour"] = "red"; }).find("colour: unknown key"), std::string::npos);
  EXPECT_NE(error_for([](nlohmann::json& j) { j.erase("hidden_size"); }).find("hidden_size: missing key"), std::string::npos);
  EXPECT_NE(error_for([](nlohmann::json& j) { j["num_hidden_layers"] = -2; }).find("num_hidden_layers: expected an integer"),
            std::string::npos);
  EXPECT_NE(error_for([](nlohmann::json& j) { j["attention"] = "flash"; }).find("attention: expected \"mla\""),
            std::string::npos);
  EXPECT_NE(error_for([](nlohmann::json& j) { j["num_experts_per_tok"] = 300; }).find("num_experts_per_tok"), std::string::npos);
  EXPECT_NE(error_for([](nlohmann::json& j) { j["mtp_acceptance_rate"]["value"] = 1.5; }).find("mtp_acceptance_rate.value"),
            std::string::npos);
}

}  // namespace
}  // namespace nvl::engine
