// Measured rows as scenarios: representative rows map to the pools, profiles and bench workload they
// describe; what the mapping cannot know is a reason, never a guess.
#include <gtest/gtest.h>

#include "emu/measured/bench_keys.h"
#include "emu/measured/row_scenario.h"

namespace nvl::emu {
namespace row_scenario_test {

MeasuredRow glm5_on_hgx_b200() {
  MeasuredRow r;
  r.id = "glm";
  r.system = "b200_sxm";
  r.backend = "sglang";
  r.model_path = "zhipuai/GLM-5";
  r.precision = "fp8";
  r.mode = "agg";
  r.isl = 8192;
  r.osl = 1024;
  r.concurrency = 32;
  r.aggregated = {.tp = 2, .dp = 4, .moe_ep = 8, .batch = 30};
  return r;
}

// GB200, DeepSeek-V3 FP4: two TP4 prefill workers and three TP8 x EP8 decode workers (32 GPUs).
MeasuredRow deepseek_on_gb200() {
  MeasuredRow r;
  r.id = "ds";
  r.system = "gb200";
  r.backend = "trtllm";
  r.model_path = "deepseek-ai/DeepSeek-V3";
  r.precision = "fp4";
  r.mode = "disagg";
  r.isl = 1024;
  r.osl = 2048;
  r.concurrency = 384;
  r.prefill = {.workers = 2, .tp = 4, .dp = 1, .moe_ep = 4, .batch = 1};
  r.decode = {.workers = 3, .tp = 8, .dp = 1, .moe_ep = 8, .moe_tp = 1, .batch = 16};
  return r;
}

TEST(RowScenario, AnAggregatedRowIsOneAggregatedPoolOnItsNode) {
  const RowScenario m = map_row(glm5_on_hgx_b200());
  ASSERT_TRUE(m.scenario) << m.reason;
  const nlohmann::json& s = *m.scenario;
  EXPECT_EQ(s["cluster"]["gpu_profile"], "b200");
  EXPECT_EQ(s["cluster"]["fabric_profile"], "hgx-b200");
  EXPECT_EQ(s["cluster"]["units"], 1);  // 2 x 4 GPUs: one 8-GPU node
  EXPECT_EQ(s["model"]["profile"], "glm-5");
  EXPECT_EQ(s["model"]["kv_dtype"], "fp8");
  ASSERT_EQ(s["deployment"]["pools"].size(), 1u);
  const nlohmann::json& p = s["deployment"]["pools"][0];
  EXPECT_EQ(p["role"], "aggregated");
  EXPECT_EQ(p["instances"], 1);
  EXPECT_EQ(p["tp"], 2);
  EXPECT_EQ(p["dp"], 4);
  EXPECT_EQ(p["ep"], 8);
  EXPECT_FALSE(p.contains("moe_all_to_all")) << "attention DP dispatches";
  EXPECT_EQ(p["weights"], "fp8");
  EXPECT_EQ(p["max_running"], 8);  // 30 requests per worker over 4 DP ranks: at most 8 on one
}

TEST(RowScenario, ADisaggregatedRowIsAPrefillAndADecodePool) {
  const RowScenario m = map_row(deepseek_on_gb200());
  ASSERT_TRUE(m.scenario) << m.reason;
  const nlohmann::json& s = *m.scenario;
  EXPECT_EQ(s["cluster"]["gpu_profile"], "gb200");
  EXPECT_EQ(s["cluster"]["fabric_profile"], "gb200-nvl72");
  EXPECT_EQ(s["cluster"]["units"], 1);  // 8 + 24 GPUs of 72
  EXPECT_EQ(s["model"]["profile"], "deepseek-v3");
  const nlohmann::json& pools = s["deployment"]["pools"];
  ASSERT_EQ(pools.size(), 2u);
  const nlohmann::json& decode = pools[0];
  EXPECT_EQ(decode["role"], "decode");  // every prompt goes to the prefill pool
  EXPECT_EQ(decode["instances"], 3);
  EXPECT_EQ(decode["tp"], 8);
  EXPECT_EQ(decode["dp"], 1);
  EXPECT_EQ(decode["ep"], 8);
  EXPECT_EQ(decode["max_running"], 16);
  EXPECT_EQ(decode["moe_all_to_all"], false) << "EP at dp 1: the tokens are on every GPU already";
  EXPECT_EQ(decode["weights"], "nvfp4");
  EXPECT_EQ(decode["kv_dtype"], "fp8");
  const nlohmann::json& prefill = pools[1];
  EXPECT_EQ(prefill["role"], "prefill");
  EXPECT_EQ(prefill["instances"], 2);
  EXPECT_EQ(prefill["tp"], 4);
  EXPECT_EQ(prefill["dp"], 1);
  EXPECT_EQ(prefill["ep"], 4);
  EXPECT_EQ(prefill["moe_all_to_all"], false);
  EXPECT_FALSE(prefill.contains("max_running"));  // prefill_batch_size is not a limit of the server's
  EXPECT_EQ(prefill["weights"], "nvfp4");
}

TEST(RowScenario, TheWorkloadIsTheRowsBenchmark) {
  const nlohmann::json w = map_row(deepseek_on_gb200()).scenario->at("workload");
  EXPECT_EQ(w["source"], "bench:isl=1024,osl=2048");
  EXPECT_EQ(w[bench_keys::kConcurrency], 384);
  const BenchSize size = bench_size(384);
  EXPECT_EQ(w[bench_keys::kRequests], size.requests);
  EXPECT_EQ(w[bench_keys::kWarmupRequests], size.warmup_requests);
}

TEST(RowScenario, TheBenchmarkIsDynamosRecipeTwoTurnsOfWarmUpThenTen) {
  // ai-dynamo/dynamo benchmarks/llm/perf.sh: --warmup-request-count $((c*2)) --request-count $((c*10)).
  EXPECT_EQ(bench_size(384).warmup_requests, 768);
  EXPECT_EQ(bench_size(384).requests, 3840);
  EXPECT_EQ(bench_size(4).warmup_requests, 8);
  EXPECT_EQ(bench_size(4).requests, 40);
}

TEST(RowScenario, ADeploymentLargerThanANodeTakesSeveralNodes) {
  MeasuredRow r = glm5_on_hgx_b200();
  r.aggregated = {.tp = 4, .dp = 4, .moe_ep = 16};
  EXPECT_EQ(map_row(r).scenario->at("cluster")["units"], 2);
  EXPECT_FALSE(map_row(r).scenario->at("deployment")["pools"][0].contains("max_running"));  // batch not recorded
}

// The row's backend prices the kernels where the GPU profile holds its measured tables (GB200, B200:
// sglang, trtllm); elsewhere (vLLM) the roofline does.
TEST(RowScenario, TheBackendsMeasuredKernelsPriceTheRowWhereTheGpuHasThem) {
  EXPECT_EQ(map_row(deepseek_on_gb200()).scenario->at("cluster")["kernel_library"], "trtllm");
  MeasuredRow vllm = deepseek_on_gb200();
  vllm.backend = "vllm";
  EXPECT_EQ(map_row(vllm).scenario->at("cluster")["kernel_library"], "roofline");
  EXPECT_EQ(map_row(glm5_on_hgx_b200()).scenario->at("cluster")["kernel_library"], "sglang");
}

TEST(RowScenario, AnUnknownSystemIsNotExpressible) {
  MeasuredRow r = glm5_on_hgx_b200();
  r.system = "mi355x";
  const RowScenario m = map_row(r);
  EXPECT_FALSE(m.scenario);
  EXPECT_EQ(m.reason, "system mi355x: no cluster profile");
}

TEST(RowScenario, AnUnknownModelIsNotExpressible) {
  MeasuredRow r = glm5_on_hgx_b200();
  r.model_path = "Qwen/Qwen3-235B-A22B";
  const RowScenario m = map_row(r);
  EXPECT_FALSE(m.scenario);
  EXPECT_EQ(m.reason, "model Qwen/Qwen3-235B-A22B: no profile (engine/models/qwen3-235b-a22b.json)");
}

TEST(RowScenario, AnUnknownPrecisionIsNotExpressible) {
  MeasuredRow r = glm5_on_hgx_b200();
  r.precision = "int4";
  EXPECT_EQ(map_row(r).reason, "precision int4: not one of fp8, fp4, bf16");
}

TEST(RowScenario, DecodeMoeParallelismMustCoverTheWorker) {
  MeasuredRow r = deepseek_on_gb200();
  r.decode.moe_tp = 2;  // 2 x EP8 = 16, but a decode worker is 8 GPUs
  const RowScenario m = map_row(r);
  EXPECT_FALSE(m.scenario);
  EXPECT_EQ(m.reason, "decode moe_tp x moe_ep = 16 is not the worker's tp x attention_dp = 8 GPUs");
}

TEST(RowScenario, MoeTpDecodeIsWrittenAsEpOne) {
  // MoE TP over the whole worker: ep 1, for the deployment check to accept or refuse.
  MeasuredRow r = deepseek_on_gb200();
  r.decode = {.workers = 1, .tp = 1, .dp = 4, .moe_ep = 1, .moe_tp = 4};
  EXPECT_EQ(map_row(r).scenario->at("deployment")["pools"][0]["ep"], 1);
}

TEST(RowScenario, TheConfigNamesTheLayout) {
  EXPECT_EQ(map_row(deepseek_on_gb200()).config,
            "gb200 deepseek-ai/DeepSeek-V3 fp4 prefill 2x tp4 dp1 ep4 bs1, decode 3x tp8 dp1 moe_tp1 ep8 bs16, c384 1024/2048");
}

}  // namespace row_scenario_test
}  // namespace nvl::emu
