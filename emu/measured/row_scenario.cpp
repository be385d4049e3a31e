#include "emu/measured/row_scenario.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <filesystem>
#include <string_view>

#include "emu/measured/bench_keys.h"
#include "engine/model/model_profile.h"
#include "fakegpu/profile_library.h"
#include "fabric/profile_loader.h"

namespace nvl::emu {

namespace {

// aiconfigurator's system names and the profiles of the same machines (fakegpu/profiles, fabric/profiles).
struct SystemProfiles {
  std::string_view system, gpu_profile, fabric_profile;
};
constexpr std::array<SystemProfiles, 5> kSystems = {{
    {"gb200", "gb200", "gb200-nvl72"},
    {"gb300", "gb300", "gb300-nvl72"},
    {"b200_sxm", "b200", "hgx-b200"},
    {"h200_sxm", "h200", "hgx-h200"},
    {"h100_sxm", "h100", "hgx-h100"},
}};

// A row's precision as pool weights and KV type: `fp4` rows run NVFP4 routed experts with FP8 KV.
struct Precision {
  std::string_view precision, weights, kv_dtype;
};
constexpr std::array<Precision, 3> kPrecisions = {{
    {"fp8", "fp8", "fp8"},
    {"fp4", "nvfp4", "fp8"},
    {"bf16", "bf16", "bf16"},
}};

// The benchmark protocol of NVIDIA Dynamo's serving benchmark (ai-dynamo/dynamo benchmarks/llm/perf.sh, AIPerf
// with `--request-count $((concurrency*10)) --warmup-request-count $((concurrency*2))`): ten turns of every slot
// measured after two of warm-up. The rows do not state their client's settings; this is the published recipe of
// the framework that served the GB200 rows.
constexpr std::int64_t kMeasuredTurnsPerSlot = 10;
constexpr std::int64_t kWarmupTurnsPerSlot = 2;
constexpr double kMaxSimSeconds = 36'000;  // above any row's runs: the request count ends them

std::string lowered(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

std::string workers_text(const MeasuredWorkers& w) {
  std::string t = std::to_string(w.workers) + "x tp" + std::to_string(w.tp) + " dp" + std::to_string(w.dp);
  if (w.moe_tp) t += " moe_tp" + std::to_string(*w.moe_tp);
  t += " ep" + std::to_string(w.moe_ep);
  if (w.batch) t += " bs" + std::to_string(*w.batch);
  return t;
}

std::string config_of(const MeasuredRow& r) {
  const std::string layout = r.mode == "agg" ? "agg " + workers_text(r.aggregated)
                                             : "prefill " + workers_text(r.prefill) + ", decode " + workers_text(r.decode);
  return r.system + " " + r.model_path + " " + r.precision + " " + layout + ", c" + std::to_string(r.concurrency) + " " +
         std::to_string(r.isl) + "/" + std::to_string(r.osl);
}

nlohmann::json pool(const std::string& name, const std::string& role, const MeasuredWorkers& w, const Precision& p) {
  nlohmann::json out = {{"name", name}, {"role", role},   {"instances", w.workers}, {"tp", w.tp},
                        {"dp", w.dp},     {"ep", w.moe_ep}, {"weights", p.weights},   {"kv_dtype", p.kv_dtype}};
  // EP without attention DP: the tokens are on every GPU after the attention all-reduce; the three
  // backends' all-to-alls (DeepEP, TensorRT-LLM's, vLLM's) serve attention DP only.
  if (w.dp == 1 && w.moe_ep > 1) out["moe_all_to_all"] = false;
  return out;
}

}  // namespace

BenchSize bench_size(std::int64_t concurrency) {
  return {.requests = kMeasuredTurnsPerSlot * concurrency, .warmup_requests = kWarmupTurnsPerSlot * concurrency};
}

RowScenario map_row(const MeasuredRow& r) {
  RowScenario out;
  out.config = config_of(r);
  const auto system = std::find_if(kSystems.begin(), kSystems.end(), [&](const auto& s) { return s.system == r.system; });
  if (system == kSystems.end()) {
    out.reason = "system " + r.system + ": no cluster profile";
    return out;
  }
  const std::string model = lowered(r.model_path.substr(r.model_path.find_last_of('/') + 1));
  if (model.empty() || !std::filesystem::exists(engine::model_profile_path(model))) {
    out.reason = "model " + r.model_path + ": no profile (engine/models/" + model + ".json)";
    return out;
  }
  const auto precision =
      std::find_if(kPrecisions.begin(), kPrecisions.end(), [&](const auto& p) { return p.precision == r.precision; });
  if (precision == kPrecisions.end()) {
    out.reason = "precision " + r.precision + ": not one of fp8, fp4, bf16";
    return out;
  }

  nlohmann::json pools = nlohmann::json::array();
  std::int64_t gpus = 0;
  if (r.mode == "agg") {
    nlohmann::json agg = pool("agg", "aggregated", r.aggregated, *precision);
    // batch_size counts a worker's requests; max_running counts a DP rank's.
    if (r.aggregated.batch) agg["max_running"] = (*r.aggregated.batch + r.aggregated.dp - 1) / r.aggregated.dp;
    pools.push_back(agg);
    gpus = r.aggregated.tp * r.aggregated.dp;
  } else {
    const MeasuredWorkers& d = r.decode;
    if (d.moe_tp && *d.moe_tp * d.moe_ep != d.tp * d.dp) {
      out.reason = "decode moe_tp x moe_ep = " + std::to_string(*d.moe_tp * d.moe_ep) +
                   " is not the worker's tp x attention_dp = " + std::to_string(d.tp * d.dp) + " GPUs";
      return out;
    }
    nlohmann::json decode = pool("decode", "decode", d, *precision);
    if (d.batch) decode["max_running"] = *d.batch;  // requests per decode rank
    // Decode pools send every prompt to the prefill pool, whatever its length.
    pools.push_back(decode);
    pools.push_back(pool("prefill", "prefill", r.prefill, *precision));
    gpus = d.workers * d.tp * d.dp + r.prefill.workers * r.prefill.tp * r.prefill.dp;
  }
  const std::int64_t per_unit = fabric::make_cluster(std::string(system->fabric_profile), 1).node.gpus();
  const BenchSize size = bench_size(r.concurrency);
  // The row's backend's kernels where the GPU profile has them measured, else the roofline.
  const bool measured_kernels =
      fakegpu::load_device_profile_named(std::string(system->gpu_profile)).measured_kernels.contains(r.backend);
  out.scenario = nlohmann::json{
      {"name", "measured-" + r.id},
      {"seed", 1},
      {"cluster", {{"gpu_profile", system->gpu_profile}, {"fabric_profile", system->fabric_profile},
                   {"units", (gpus + per_unit - 1) / per_unit},
                   {"kernel_library", measured_kernels ? r.backend : "roofline"}}},
      {"model", {{"profile", model}, {"kv_dtype", precision->kv_dtype}}},
      {"deployment", {{"pools", pools}, {"router_policy", "least_load"}}},
      {"workload", {{"source", bench_keys::source(r.isl, r.osl)},
                    {bench_keys::kConcurrency, r.concurrency},
                    {bench_keys::kRequests, size.requests},
                    {bench_keys::kWarmupRequests, size.warmup_requests}}},
      {"run", {{"max_sim_seconds", kMaxSimSeconds}}},
      {"outputs", {{"trace", false}, {"html", false}}},
  };
  return out;
}

}  // namespace nvl::emu
