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
namespace model_profile_test {

ModelProfile load(const std::string& name) { return load_model_profile(model_profile_path(name)); }

double rel_error(double got, double want) { return std::fabs(got - want) / want; }

TEST(ModelProfile, ParameterCountsMatchThePublishedTotals) {
  for (const char* name : {"glm-5", "glm-5.2", "deepseek-v3", "deepseek-r1", "kimi-k2.5", "glm-4.5"}) {
    const ModelProfile m = load(name);
    // Counted from the config's shapes; norms and biases are left out, hence a small tolerance.
    EXPECT_LT(rel_error(static_cast<double>(m.total_params()), m.published_params_total), 0.02)
        << name << ": " << m.total_params();
    // "Active" here excludes the embedding lookup; publications differ on that, so 3%.
    EXPECT_LT(rel_error(static_cast<double>(m.active_params()), m.published_params_active), 0.03)
        << name << ": " << m.active_params();
  }
}

TEST(ModelProfile, TheSecondWaveProfilesHoldTheirConfigsShapes) {
  const ModelProfile v3 = load("deepseek-v3");
  const ModelProfile r1 = load("deepseek-r1");
  EXPECT_EQ(r1.name, "DeepSeek-R1");
  EXPECT_EQ(r1.total_params(), v3.total_params()) << "R1 is the V3 architecture";
  EXPECT_EQ(r1.num_nextn_predict_layers, v3.num_nextn_predict_layers);

  const ModelProfile kimi = load("kimi-k2.5");
  EXPECT_EQ(kimi.n_routed_experts, 384);
  EXPECT_EQ(kimi.num_experts_per_tok, 8);
  EXPECT_EQ(kimi.num_attention_heads, 64);
  EXPECT_EQ(kimi.num_hidden_layers, 61);
  EXPECT_EQ(kimi.first_k_dense_replace, 1);
  EXPECT_EQ(kimi.attention, AttentionKind::mla);
  EXPECT_EQ(kimi.num_nextn_predict_layers, 0) << "the released checkpoint has no MTP module";
  EXPECT_EQ(kimi.mtp_acceptance_rate, 0.0);

  // GLM-5.2's indexer_types: full on 0-2, then on 6, 10, ..., 74; shared elsewhere.
  const ModelProfile glm52 = load("glm-5.2");
  EXPECT_EQ(glm52.indexer_layers(0, 78), 21);
  EXPECT_EQ(glm52.index_share_layers(0, 78), 57);
  EXPECT_EQ(glm52.indexer_layers(0, 7), 4);  // 0, 1, 2, 6
  for (std::int64_t l : {0, 1, 2, 6, 10, 74}) EXPECT_EQ(glm52.indexer_layers(l, l + 1), 1) << l;
  for (std::int64_t l : {3, 4, 5, 7, 9, 75, 77}) EXPECT_EQ(glm52.index_share_layers(l, l + 1), 1) << l;
  const ModelProfile glm5 = load("glm-5");
  EXPECT_EQ(glm5.indexer_layers(0, 78), 78);
  EXPECT_EQ(glm5.index_share_layers(0, 78), 0);
  EXPECT_EQ(v3.indexer_layers(0, 61), 0) << "no DSA, no indexer";
  // 57 fewer indexers: 57 x (2048 x 32 x 128 + 6144 x 128 + 6144 x 32) = 57 x 9,371,648 = 534,183,936.
  EXPECT_EQ(glm5.total_params() - glm52.total_params(), 534'183'936);
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

TEST(ModelProfile, IndexShareLayersKeepNoIndexerKeys) {
  const auto glm5 = kv_bytes_per_token(load("glm-5"), hal::DType::fp8);
  const auto glm52 = kv_bytes_per_token(load("glm-5.2"), hal::DType::fp8);
  // FP8 KV: 576 B of latent in every layer; 132 B of indexer key (128 FP8 + a 4-byte scale) in a
  // layer that holds an indexer. GLM-5: 78 x (576 + 132) = 55,224 B; GLM-5.2: 78 x 576 + 21 x 132 =
  // 44,928 + 2,772 = 47,700 B; the difference is the 57 shared layers' keys, 57 x 132 = 7,524 B.
  EXPECT_EQ(glm5.total(), 55'224u);
  EXPECT_EQ(glm52.total(), 47'700u);
  EXPECT_EQ(glm5.total() - glm52.total(), 57u * 132u);
  // A prefill's layer groups: layers 0-6 hold 4 indexers (0, 1, 2, 6): 7 x 576 + 4 x 132 = 4,560 B.
  EXPECT_EQ(kv_bytes_per_token_of_layers(load("glm-5.2"), hal::DType::fp8, 0, 7).total(), 4'560u);
  // The MTP module keeps its own latent and indexer key: + 708 B.
  EXPECT_EQ(kv_bytes_per_token(load("glm-5.2"), hal::DType::fp8, true).total(), 47'700u + 708u);
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
  EXPECT_NE(error_for([](nlohmann::json& j) { j.erase("max_position_embeddings"); })
                .find("max_position_embeddings: missing key"),
            std::string::npos)
      << "live mode refuses requests over the context length";
  EXPECT_NE(error_for([](nlohmann::json& j) { j["max_position_embeddings"] = 0; }).find("max_position_embeddings: expected an integer"),
            std::string::npos);
  EXPECT_NE(error_for([](nlohmann::json& j) { j["attention"] = "flash"; }).find("attention: expected \"mla\""),
            std::string::npos);
  EXPECT_NE(error_for([](nlohmann::json& j) { j["num_experts_per_tok"] = 300; }).find("num_experts_per_tok"), std::string::npos);
  EXPECT_NE(error_for([](nlohmann::json& j) { j["mtp_acceptance_rate"]["value"] = 1.5; }).find("mtp_acceptance_rate.value"),
            std::string::npos);
  EXPECT_NE(error_for([](nlohmann::json& j) { j.erase("mtp_acceptance_rate"); }).find("mtp_acceptance_rate: missing key"),
            std::string::npos)
      << "a model with MTP modules needs their acceptance rate";
  EXPECT_NE(error_for([](nlohmann::json& j) { j["index_topk_freq"] = 0; }).find("index_topk_freq: expected an integer"),
            std::string::npos);
  EXPECT_NE(error_for([](nlohmann::json& j) { j["index_topk_freq"] = 4; }).find("index_skip_topk_offset: missing key"),
            std::string::npos)
      << "IndexShare names the layers before the first shared one";
  EXPECT_NE(error_for([](nlohmann::json& j) {
              j["index_topk_freq"] = 4;
              j["index_skip_topk_offset"] = 0;
            }).find("index_skip_topk_offset: expected an integer"),
            std::string::npos)
      << "layer 0 must hold an indexer for the others to share";
}

}  // namespace model_profile_test
}  // namespace nvl::engine
