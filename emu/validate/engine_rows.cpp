#include "emu/validate/engine_rows.h"

#include <string>
#include <utility>

#include "emu/cluster/emulated_cluster.h"
#include "emu/rt/virtual_runtime.h"
#include "engine/model/kv_footprint.h"
#include "engine/worker/normal_worker_group.h"

namespace nvl::emu {

namespace {

using engine::NormalGroupConfig;
using engine::NormalWorkerGroup;
using engine::RequestState;
using engine::StepOutcome;

struct DecodeSetup {
  std::string gpu, fabric, model;
  int gpus = 0;
  int units = 1;
  std::int64_t redundant_experts = 0;
  std::int64_t batch_per_gpu = 0;
  std::int64_t input_tokens = 0;
  hal::DType kv_dtype = hal::DType::bf16;
  bool two_batch_overlap = false;
  // The published runs' kernels: SGLang's, as the GPU profile's measured tables hold them.
  std::string kernel_library = "sglang";
};

// Steady decode throughput of the normal worker group, output tokens per second per GPU: every rank
// holds `batch_per_gpu` requests of `input_tokens`; timing starts once all have their first token.
double decode_tokens_per_s_per_gpu(const DecodeSetup& s) {
  constexpr std::int64_t kOutputTokens = 64;
  rt::VirtualRuntime rt;
  EmulatedCluster cluster(rt, s.gpu, s.fabric, s.gpus, s.units);
  cluster.use_kernel_library(s.kernel_library);
  const engine::ModelProfile model = engine::load_model_profile(engine::model_profile_path(s.model));
  NormalGroupConfig cfg;
  cfg.kv_dtype = s.kv_dtype;
  cfg.redundant_experts = s.redundant_experts;
  cfg.two_batch_overlap = s.two_batch_overlap;
  cfg.scheduler.max_running = s.batch_per_gpu;
  cfg.scheduler.token_budget = 16'384;
  const std::int64_t everyone = s.batch_per_gpu * s.gpus;
  std::int64_t first_tokens = 0, decoded = 0;
  rt::Time decode_start, last;
  NormalWorkerGroup group(
      rt, model, cluster.devices(0, s.gpus), cluster.collectives(), cfg,
      [&](std::int32_t, const StepOutcome& o) {
        if (o.first_token) {
          if (++first_tokens == everyone) decode_start = rt.now();
          return;
        }
        if (first_tokens == everyone) {
          decoded += o.new_output_tokens;
          last = rt.now();
        }
      },
      [](std::int32_t, engine::RequestId, const std::string& why) { throw std::runtime_error(why); });
  group.start();
  engine::RequestId id = 1;
  for (std::int32_t r = 0; r < s.gpus; ++r) {
    for (std::int64_t b = 0; b < s.batch_per_gpu; ++b) {
      RequestState q;
      q.id = id++;
      q.prompt_tokens = s.input_tokens;
      q.max_output_tokens = kOutputTokens;
      group.submit(r, std::move(q));
    }
  }
  rt.run();
  return static_cast<double>(decoded) / (last - decode_start).seconds() / s.gpus;
}

// Prefill throughput of the normal group as SGLang's P/D prefill runs DeepSeek-V3 (V1): 4 x 8 H100 over
// IB, DP attention + EP32, 16,384 tokens per GPU per step, two-batch overlap; every rank gets two
// steps' worth of `prompt`-token requests that finish at their first token (the KV leaves for decode).
// Input tokens per second per node.
double v1_prefill_tokens_per_s_per_node(std::int64_t prompt) {
  constexpr int kGpus = 32, kNodes = 4, kSteps = 2;
  constexpr std::int64_t kTokensPerGpu = 16'384;
  rt::VirtualRuntime rt;
  EmulatedCluster cluster(rt, "h100", "hgx-h100", kGpus, kNodes);
  cluster.use_kernel_library("sglang");  // the published run's
  const engine::ModelProfile model = engine::load_model_profile(engine::model_profile_path("deepseek-v3"));
  NormalGroupConfig cfg;
  cfg.kv_dtype = hal::DType::bf16;
  cfg.two_batch_overlap = true;
  cfg.scheduler.token_budget = kTokensPerGpu;
  cfg.scheduler.chunk_tokens = kTokensPerGpu;
  cfg.scheduler.max_running = kTokensPerGpu / prompt;
  std::int64_t prefilled = 0;
  rt::Time last;
  NormalWorkerGroup group(
      rt, model, cluster.devices(0, kGpus), cluster.collectives(), cfg,
      [&](std::int32_t, const StepOutcome& o) {
        if (!o.finished) return;
        prefilled += prompt;
        last = rt.now();
      },
      [](std::int32_t, engine::RequestId, const std::string& why) { throw std::runtime_error(why); });
  group.start();
  engine::RequestId id = 1;
  for (std::int32_t r = 0; r < kGpus; ++r) {
    for (std::int64_t b = 0; b < kSteps * kTokensPerGpu / prompt; ++b) {
      RequestState q;
      q.id = id++;
      q.prompt_tokens = prompt;
      q.max_output_tokens = 1;
      group.submit(r, std::move(q));
    }
  }
  rt.run();
  return static_cast<double>(prefilled) / last.since_start().seconds() / kNodes;
}

}  // namespace

std::vector<CalibrationRow> v6_rows() {
  std::vector<CalibrationRow> rows;
  rt::VirtualRuntime rt;
  EmulatedCluster cluster(rt, "gb300", "gb300-nvl72", 64);
  const engine::ModelProfile model = engine::load_model_profile(engine::model_profile_path("glm-5"));
  NormalGroupConfig cfg;
  cfg.kv_dtype = hal::DType::fp8;
  NormalWorkerGroup group(rt, model, cluster.devices(0, 64), cluster.collectives(), cfg,
                          [](std::int32_t, const StepOutcome&) {}, [](std::int32_t, engine::RequestId, const std::string&) {});
  // Calibrated: both check the design notes' arithmetic (model dimensions, HBM, reserves) as entered.
  rows.push_back(row("v6_kv_gb_per_gpu_glm5_b300", RowBasis::calibrated, "GLM-5 FP8 at DP64 x EP64 on B300: HBM left for KV per GPU", "GB",
                     "REFERENCE.md §2-3 V6 (design notes)", 230, static_cast<double>(group.kv_bytes_per_rank()) / 1e9, 5));
  // Requests of 256K (262,144) tokens whose KV fits at once, by the rank's own block accounting.
  const std::int64_t context = 256 * 1024;
  const auto blocks = group.kv(0).gpu().capacity();
  const auto per_request = group.kv(0).blocks_for(context);
  CalibrationRow r = row("v6_requests_256k_glm5_b300", RowBasis::calibrated, "GLM-5 FP8 KV at DP64 x EP64 on B300: 256K-token requests per GPU",
                         "requests", "REFERENCE.md §2-3 V6 (design notes)", 17,
                         static_cast<double>(blocks / per_request), 0);
  r.tolerance_abs = 1;
  rows.push_back(r);
  return rows;
}

std::vector<CalibrationRow> v1_rows() {
  std::vector<CalibrationRow> rows;
  // V1: SGLang DeepSeek-V3 prefill, 4 x 8 H100, EP32 with DP attention, 16,384 tokens per GPU, TBO.
  const std::pair<const char*, std::pair<std::int64_t, double>> v1[] = {
      {"1k", {1'024, 57'674}}, {"2k", {2'048, 54'543}}, {"4k", {4'096, 50'302}}};
  for (const auto& [tag, setup] : v1) {
    CalibrationRow r = row(std::string("v1_prefill_h100_") + tag, RowBasis::independent,
                           std::string("SGLang DeepSeek-V3 prefill, 4x8 H100, EP32, 16,384 tokens/GPU, TBO, ") + tag +
                               " prompts: input tok/s per node",
                           "tok/s/node", "REFERENCE.md §3 V1", setup.second,
                           v1_prefill_tokens_per_s_per_node(setup.first), 15);
    r.note =
        "pessimistic at short prompts: the dispatch sends each token to each of its experts over IB, about 2.2x the "
        "bytes of DeepEP normal mode, which sends a token once per node and fans it out over NVLink (measured DeepEP "
        "tables, #18)";
    rows.push_back(r);
  }
  return rows;
}

std::vector<CalibrationRow> v2_rows() {
  // V2: SGLang DeepSeek-V3 decode, 9 x 8 H100 (IB 400 Gb/GPU), EP72 (with 32 redundant experts so 288
  // slots spread over 72), batch 256 per GPU, KV length 2,000 (BF16 KV, SGLang's default), two-batch
  // overlap (--enable-two-batch-overlap in the decode command of sglang issue #6017). GEMMs and MLA decode
  // attention priced from SGLang's kernels as measured on H100, and so are the routed experts behind
  // DeepEP's low-latency dispatch (at EP72, read between the measured EP64 and EP128).
  const double v2 = decode_tokens_per_s_per_gpu(
      DecodeSetup{"h100", "hgx-h100", "deepseek-v3", 72, 9, 32, 256, 2'000, hal::DType::bf16, true});
  CalibrationRow r2 = row("v2_decode_h100", RowBasis::independent,
                          "SGLang DeepSeek-V3 decode, 9x8 H100, EP72, batch 256/GPU, KV 2,000, TBO: output tok/s per node",
                          "tok/s/node", "REFERENCE.md §3 V2", 22'282, v2 * 8, 15);
  return {r2};
}

std::vector<CalibrationRow> v3_rows() {
  // V3: SGLang DeepSeek-V3 decode on GB200 NVL72 (lmsys blog 2025-06-16, reproduction in sglang issue
  // #7227): 12 nodes x 4 = 48 GPUs as one DP48 x EP48 decode instance (DP attention, DeepEP low-latency,
  // 32 redundant experts), CUDA graphs and DeepEP dispatch sized for 768 tokens per rank
  // (--cuda-graph-bs 768, --max-running-requests 36864 = 768 x 48), decode kept saturated by the
  // slow-down API, BF16 KV (cutlass_mla; FP8 attention came in Part II), no two-batch overlap (the blog
  // disables it on NVL72), no MTP, 2,000-token input. GEMMs, MLA decode attention and the routed experts
  // behind DeepEP's low-latency dispatch priced from SGLang's kernels as measured on GB200 (the experts at
  // EP48, read between the measured EP32 and EP64).
  const double v3 = decode_tokens_per_s_per_gpu(DecodeSetup{"gb200", "gb200-nvl72", "deepseek-v3", 48, 1, 32, 768, 2'000});
  CalibrationRow r3 = row("v3_decode_gb200", RowBasis::independent,
                          "SGLang DeepSeek-V3 decode, GB200 NVL72, DP48 x EP48, batch 768/GPU, BF16 KV, input 2,000: "
                          "output tok/s per GPU",
                          "tok/s/GPU", "REFERENCE.md §3 V3; batch from the blog's reproduction commands", 7'583, v3, 15);
  return {r3};
}

}  // namespace nvl::emu
