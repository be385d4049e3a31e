#include <algorithm>
#include <array>
#include <string_view>

#include <nlohmann/json.hpp>

#include "emu/rt/errors.h"
#include "emu/rt/json_reader.h"
#include "emu/scenario/deployment_check.h"
#include "emu/scenario/pool_reader.h"
#include "emu/scenario/scenario.h"
#include "emu/workload/bench_spec.h"
#include "engine/hal/types.h"
#include "engine/model/model_profile.h"
#include "fabric/profile_loader.h"
#include "fakegpu/profile_library.h"

namespace nvl::emu {

namespace {

constexpr std::string_view kGeneratorPrefix = "gen:";
constexpr std::array<std::string_view, 4> kRouterPolicies = {"round_robin", "least_load", "cache_aware", "pooled"};
constexpr std::array<std::string_view, 3> kGraceTiers = {"off", "write_through", "write_back"};
// Bounds that keep GPU counts far from overflow; the fabric's own size is checked after.
constexpr std::int64_t kMaxUnits = 1'024;
constexpr std::array<std::string_view, 2> kKvTransferPaths = {"rdma", "nvlink"};
constexpr std::array<std::string_view, 2> kSessionStarts = {"poisson", "recorded"};
constexpr std::array<std::string_view, 2> kFabricModes = {"fast", "exact"};
constexpr std::array<std::string_view, 13> kAssertionGroups = {
    "sim_time_s", "wall_time_s", "speedup", "gpu_seconds_per_wall_second", "peak_rss_bytes", "requests",
    "latency_ms", "throughput", "kv", "links", "kernels", "routing", "benchmark"};
constexpr std::array<std::string_view, 2> kTraceDetails = {"steps", "kernels"};
constexpr double kMinTimelineIntervalS = 0.001;  // finer sampling costs more than it shows
constexpr std::int64_t kMaxTraceBlockTokens = 1 << 20;  // far above any KV block size

template <std::size_t N>
std::string one_of(rt::JsonReader& r, std::string_view key, const std::array<std::string_view, N>& allowed,
                   const std::string& fallback) {
  if (!r.has(key)) return fallback;
  std::string v = r.string(key);
  if (std::find(allowed.begin(), allowed.end(), v) != allowed.end()) return v;
  std::string list;
  for (auto a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
  r.fail(key, "'" + v + "' is not one of " + list);
}

std::string opt_string(rt::JsonReader& r, std::string_view key, const std::string& fallback) {
  return r.has(key) ? r.string(key) : fallback;
}
std::int64_t opt_int(rt::JsonReader& r, std::string_view key, std::int64_t fallback, std::int64_t min = 0,
                     std::int64_t max = INT64_MAX) {
  return r.has(key) ? r.integer(key, min, max) : fallback;
}

void read_outputs(rt::JsonReader o, ScenarioOutputs& out) {
  if (o.has("trace")) out.trace = o.boolean("trace");
  if (o.has("trace_start_s")) out.trace_start_s = o.number("trace_start_s");
  if (o.has("trace_window_s")) out.trace_window_s = o.seconds("trace_window_s", rt::NumberRule::positive);
  out.trace_max_events = opt_int(o, "trace_max_events", out.trace_max_events, 1);
  out.trace_detail = one_of(o, "trace_detail", kTraceDetails, out.trace_detail);
  if (o.has("html")) out.html = o.boolean("html");
  if (o.has("html_smoothing_s")) out.html_smoothing_s = o.seconds("html_smoothing_s");
  if (o.has("timeline_interval_s")) {
    out.timeline_interval_s = o.seconds("timeline_interval_s", rt::NumberRule::positive);
    if (out.timeline_interval_s < kMinTimelineIntervalS) {
      o.fail("timeline_interval_s", "must be at least " + std::to_string(kMinTimelineIntervalS) + " s");
    }
  }
  o.finish();
}

// Assertions name a report.json figure by its dotted path; the first part must be a figure group.
void read_checks(rt::JsonReader c, ScenarioChecks& out) {
  if (c.has("determinism")) out.determinism = c.boolean("determinism");
  if (c.has("assertions")) {
    for (rt::JsonReader a : c.objects("assertions")) {
      Assertion x;
      x.metric = a.string("metric");
      const std::string group = x.metric.substr(0, x.metric.find('.'));
      if (std::find(kAssertionGroups.begin(), kAssertionGroups.end(), group) == kAssertionGroups.end()) {
        std::string list;
        for (auto g : kAssertionGroups) list += (list.empty() ? "" : ", ") + std::string(g);
        a.fail("metric", "'" + x.metric + "' is not a report.json figure (starts with one of " + list + ")");
      }
      if (a.has("max")) x.max = a.number("max", rt::NumberRule::any);
      if (a.has("min")) x.min = a.number("min", rt::NumberRule::any);
      if (!x.max && !x.min) a.fail("max", "an assertion needs a max, a min or both");
      a.finish();
      out.assertions.push_back(std::move(x));
    }
  }
  c.finish();
}

// workload.concurrency, requests, warmup_requests: the bench tools' closed loop and its request counts.
void read_benchmark_keys(rt::JsonReader& w, ScenarioWorkload& out) {
  out.concurrency = opt_int(w, "concurrency", out.concurrency, 1);
  out.requests = opt_int(w, "requests", out.requests, 1);
  out.warmup_requests = opt_int(w, "warmup_requests", out.warmup_requests);
  const bool bench = out.source.starts_with(kBenchPrefix);
  if (bench && out.requests == 0) w.fail("requests", "missing key: a bench: source needs the number of requests to send");
  if (out.requests > 0 && w.has("max_sessions")) w.fail("max_sessions", "give workload.requests or max_sessions, not both");
  if (out.concurrency == 0) {
    if (out.warmup_requests > 0) w.fail("warmup_requests", "a warm-up phase needs a closed loop: set workload.concurrency");
    return;
  }
  for (const char* paced : {"starts", "rate_sessions_per_s", "rate_scale", "burst"}) {
    if (w.has(paced)) w.fail(paced, "not used by a closed loop (workload.concurrency sends the next request when one is over)");
  }
}

// workload.burst: {"sessions", "at_s", "within_s"}; 0 sessions: none (so that a sweep may start from none).
void read_burst(rt::JsonReader b, ScenarioWorkload& out) {
  out.burst_sessions = b.integer("sessions");
  if (b.has("at_s")) out.burst_at_s = b.seconds("at_s");
  out.burst_within_s = b.seconds("within_s");
  b.finish();
}

// deployment.router: every number non-negative; the thresholds in their ranges.
void read_router(rt::JsonReader r, ScenarioRouter& out) {
  if (r.has("cache_threshold")) {
    out.cache_threshold = r.number("cache_threshold", rt::NumberRule::non_negative);
    if (out.cache_threshold > 1) r.fail("cache_threshold", "a share of the prompt: expected 0 to 1");
  }
  out.balance_abs_threshold = opt_int(r, "balance_abs_threshold", out.balance_abs_threshold);
  if (r.has("balance_rel_threshold")) {
    out.balance_rel_threshold = r.number("balance_rel_threshold", rt::NumberRule::positive);
    if (out.balance_rel_threshold < 1) r.fail("balance_rel_threshold", "a ratio of loads: expected at least 1");
  }
  if (r.has("weight_requests")) out.weight_requests = r.number("weight_requests", rt::NumberRule::non_negative);
  if (r.has("weight_tokens_in_flight_per_1k")) {
    out.weight_tokens_in_flight_per_1k = r.number("weight_tokens_in_flight_per_1k", rt::NumberRule::non_negative);
  }
  if (r.has("weight_free_kv_per_1k_blocks")) {
    out.weight_free_kv_per_1k_blocks = r.number("weight_free_kv_per_1k_blocks", rt::NumberRule::non_negative);
  }
  if (r.has("load_report_interval_s")) {
    out.load_report_interval_s = r.seconds("load_report_interval_s", rt::NumberRule::positive);
    if (out.load_report_interval_s < 1e-6) r.fail("load_report_interval_s", "expected at least 1e-6 s");
  }
  r.finish();
}

// "a.b.c=value": sets a.b.c in `root`, creating objects on the way; value is JSON when it parses, else a
// string. A list entry is picked by its index or by its "name": "deployment.pools[0].dp",
// "deployment.pools[prefill].tp".
void apply_override(nlohmann::json& root, const std::string& file, const std::string& spec) {
  const auto eq = spec.find('=');
  if (eq == std::string::npos || eq == 0) throw rt::InputError(file, "--set " + spec, "expected key.path=value");
  const std::string path = spec.substr(0, eq);
  const std::string text = spec.substr(eq + 1);
  nlohmann::json value = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (value.is_discarded()) value = text;
  const auto bad = [&](const std::string& problem) { throw rt::InputError(file, "--set " + spec, problem); };
  nlohmann::json* node = &root;
  std::size_t begin = 0;
  for (;;) {
    const auto dot = path.find('.', begin);
    std::string key = path.substr(begin, dot == std::string::npos ? std::string::npos : dot - begin);
    std::string entry;  // "[...]" after the key: a list entry
    if (const auto open = key.find('['); open != std::string::npos) {
      if (key.back() != ']' || open + 2 > key.size() - 1) bad("expected key[index] or key[name]");
      entry = key.substr(open + 1, key.size() - open - 2);
      key.resize(open);
    }
    if (key.empty()) bad("empty key in the key path");
    if (!node->is_object()) throw rt::InputError(file, path, "--set: not inside an object");
    const bool last = dot == std::string::npos;
    if (last && entry.empty()) {
      (*node)[key] = value;
      return;
    }
    node = &(*node)[key];
    if (!entry.empty()) {
      if (!node->is_array()) bad("'" + key + "' is not a list");
      nlohmann::json* found = nullptr;
      if (entry.size() < 10 && std::all_of(entry.begin(), entry.end(), [](char c) { return c >= '0' && c <= '9'; })) {
        const std::size_t i = std::stoul(entry);
        if (i < node->size()) found = &(*node)[i];
      } else {
        for (auto& e : *node) {
          if (e.is_object() && e.value("name", "") == entry) found = &e;
        }
      }
      if (found == nullptr) bad("'" + key + "' has no entry " + entry);
      node = found;
      if (last) {
        *node = value;
        return;
      }
    } else if (node->is_null()) {
      *node = nlohmann::json::object();
    }
    begin = dot + 1;
  }
}

}  // namespace

FaultContext fault_context(const Scenario& s) {
  return FaultContext{.rank_gpus = s.deployment.rank_gpus(),
                      .decoding_gpus = s.deployment.decoding_gpus(),
                      .prefill_gpus = s.deployment.prefill_gpus(),
                      .cluster_gpus = s.deployment.cluster_gpus(),
                      .fabric_profile = s.cluster.fabric_profile,
                      .units = s.cluster.units};
}

Scenario load_scenario(const std::filesystem::path& path, const std::vector<std::string>& overrides) {
  const std::string file = path.string();
  nlohmann::json root = rt::JsonReader::parse_file(path);
  for (const auto& o : overrides) apply_override(root, file, o);

  Scenario s;
  s.file = file;
  rt::JsonReader top(root, file);
  s.name = top.string("name");
  if (top.has("seed")) s.seed = static_cast<std::uint64_t>(top.integer("seed"));

  if (top.has("cluster")) {
    rt::JsonReader c = top.object("cluster");
    s.cluster.gpu_profile = opt_string(c, "gpu_profile", s.cluster.gpu_profile);
    s.cluster.fabric_profile = opt_string(c, "fabric_profile", s.cluster.fabric_profile);
    if (!std::filesystem::exists(fakegpu::default_profile_dir() / (s.cluster.gpu_profile + ".json"))) {
      c.fail("gpu_profile", "no device profile '" + s.cluster.gpu_profile +
                                "' (expected one of: " + fakegpu::device_profile_names() + ")");
    }
    if (const auto nodes = fabric::node_profile_names();
        std::find(nodes.begin(), nodes.end(), s.cluster.fabric_profile) == nodes.end()) {
      std::string names;
      for (const auto& n : nodes) names += (names.empty() ? "" : ", ") + n;
      c.fail("fabric_profile", "no fabric (node) profile '" + s.cluster.fabric_profile + "' (expected one of: " + names + ")");
    }
    s.cluster.units = opt_int(c, "units", s.cluster.units, 1, kMaxUnits);
    s.cluster.kernel_library = opt_string(c, "kernel_library", s.cluster.kernel_library);
    if (s.cluster.kernel_library != "roofline") {
      const fakegpu::DeviceProfile gpu = fakegpu::load_device_profile_named(s.cluster.gpu_profile);
      if (!gpu.measured_kernels.contains(s.cluster.kernel_library)) {
        c.fail("kernel_library", "'" + s.cluster.kernel_library + "': " + s.cluster.gpu_profile +
                                     " has no measured kernel tables for it (expected one of: " +
                                     gpu.kernel_libraries() + ")");
      }
    }
    c.finish();
  }
  if (top.has("model")) {
    rt::JsonReader m = top.object("model");
    s.model.profile = opt_string(m, "profile", s.model.profile);
    s.model.kv_dtype = opt_string(m, "kv_dtype", s.model.kv_dtype);
    try {
      (void)hal::dtype_from_string(s.model.kv_dtype);
    } catch (const std::invalid_argument&) {
      m.fail("kv_dtype", "'" + s.model.kv_dtype + "' is not a data type (fp8, bf16, ...)");
    }
    if (!std::filesystem::exists(engine::model_profile_path(s.model.profile))) {
      m.fail("profile", "no model profile '" + s.model.profile + "' in engine/models");
    }
    m.finish();
  }
  rt::JsonReader d = top.object("deployment");
  auto& dep = s.deployment;
  for (const char* gone : {"normal_gpus", "prefill_gpus", "prefill_expert_parallel", "prefill_token_budget", "token_budget",
                           "max_running", "chunk_tokens", "mtp_draft_tokens", "two_batch_overlap", "eplb"}) {
    if (d.has(gone)) {
      d.fail(gone, "is a key of each pool now: write the deployment as deployment.pools (scenarios/README.md)");
    }
  }
  dep.pools = read_pools(d);
  dep.threshold_tokens = opt_int(d, "threshold_tokens", dep.threshold_tokens);
  dep.router_policy = one_of(d, "router_policy", kRouterPolicies, dep.router_policy);
  if (d.has("router")) read_router(d.object("router"), dep.router);
  dep.kv_transfer_path = one_of(d, "kv_transfer_path", kKvTransferPaths, dep.kv_transfer_path);
  if (d.has("kv_transfer_timeout_s")) {
    dep.kv_transfer_timeout_s = d.seconds("kv_transfer_timeout_s", rt::NumberRule::positive);
  }
  if (d.has("kv_pool")) dep.kv_pool = d.boolean("kv_pool");
  if (d.has("fetch_remote_prefix")) dep.fetch_remote_prefix = d.boolean("fetch_remote_prefix");
  if (dep.router_policy == "pooled" && !dep.kv_pool) {
    d.fail("router_policy", "'pooled' routes by load alone, which needs one KV pool: set deployment.kv_pool to true");
  }
  dep.grace_tier = one_of(d, "grace_tier", kGraceTiers, dep.grace_tier);
  // Kept when the tier is off, so that `--set deployment.grace_tier=off` compares a scenario without it.
  if (d.has("grace_bytes_per_gpu")) {
    dep.grace_bytes_per_gpu = static_cast<std::uint64_t>(d.integer("grace_bytes_per_gpu", 1));
  } else if (dep.grace_tier != "off") {
    d.fail("grace_bytes_per_gpu", "missing key: grace_tier \"" + dep.grace_tier + "\" needs the Grace memory each GPU gives to KV");
  }
  dep.kv_block_tokens = opt_int(d, "kv_block_tokens", dep.kv_block_tokens, 1);

  for (auto [key, value] : {std::pair{"health_check_interval_s", &dep.health_check_interval_s},
                            std::pair{"fault_detection_delay_s", &dep.fault_detection_delay_s},
                            std::pair{"gpu_reset_s", &dep.gpu_reset_s}, std::pair{"worker_restart_s", &dep.worker_restart_s}}) {
    if (d.has(key)) *value = d.seconds(key, key == std::string_view("health_check_interval_s") ? rt::NumberRule::positive : rt::NumberRule::non_negative);
  }
  d.finish();
  for (ScenarioPool& p : dep.pools) {
    if (p.kv_dtype.empty()) p.kv_dtype = s.model.kv_dtype;
  }
  // The pools take GPUs of the fabric: every one must fit in it.
  const auto spec = fabric::make_cluster(s.cluster.fabric_profile, static_cast<int>(s.cluster.units));
  check_deployment(s);
  place_pools(dep.pools, static_cast<std::int64_t>(spec.node.gpus()), s.cluster.units, file, s.cluster.fabric_profile);
  if (dep.kv_transfer_path == "nvlink") {
    // NVLink ends at the rack (or node): P/D KV between units can only cross the NICs.
    const auto unit = [&](std::int64_t gpu) { return gpu / static_cast<std::int64_t>(spec.node.gpus()); };
    for (const std::int64_t p : dep.prefill_gpus()) {
      for (const std::int64_t g : dep.decoding_gpus()) {
        if (unit(p) == unit(g)) continue;
        throw rt::InputError(file, "deployment.kv_transfer_path",
                             "nvlink does not reach from prefill GPU " + std::to_string(p) + " (" + spec.node.unit_name + " " +
                                 std::to_string(unit(p)) + ") to decoding GPU " + std::to_string(g) + " (" +
                                 spec.node.unit_name + " " + std::to_string(unit(g)) + "): use rdma");
      }
    }
  }

  rt::JsonReader w = top.object("workload");
  s.workload.source = w.string("source");
  if (s.workload.source.starts_with(kBenchPrefix)) {
    try {
      (void)parse_bench_spec(s.workload.source);
    } catch (const rt::InputError& e) {
      w.fail("source", e.what());
    }
  } else if (!s.workload.source.starts_with(kGeneratorPrefix)) {
    std::filesystem::path p(s.workload.source);
    if (p.is_relative()) p = path.parent_path() / p;  // relative to the scenario file
    if (!std::filesystem::exists(p)) w.fail("source", "no such file or folder: " + p.string());
    s.workload.source = p.string();
  }
  s.workload.max_sessions = opt_int(w, "max_sessions", s.workload.max_sessions);
  if (w.has("rate_sessions_per_s")) s.workload.rate_sessions_per_s = w.number("rate_sessions_per_s", rt::NumberRule::positive);
  s.workload.starts = one_of(w, "starts", kSessionStarts, s.workload.starts);
  if (w.has("rate_scale")) s.workload.rate_scale = w.number("rate_scale", rt::NumberRule::positive);
  if (w.has("time_scale")) s.workload.time_scale = w.number("time_scale", rt::NumberRule::positive);
  if (w.has("burst")) read_burst(w.object("burst"), s.workload);
  read_benchmark_keys(w, s.workload);
  if (w.has("trace_block_tokens")) {
    if (!s.workload.source.ends_with(".jsonl")) w.fail("trace_block_tokens", "the block size of a Mooncake JSONL trace's hash_ids: the source is not one");
    s.workload.trace_block_tokens = w.integer("trace_block_tokens", 1, kMaxTraceBlockTokens);
  }
  w.finish();

  if (top.has("run")) {
    rt::JsonReader r = top.object("run");
    if (r.has("max_sim_seconds")) s.run.max_sim_seconds = r.seconds("max_sim_seconds", rt::NumberRule::positive);
    s.run.fabric_mode = one_of(r, "fabric_mode", kFabricModes, "fast") == "exact" ? FabricMode::exact : FabricMode::fast;
    r.finish();
  }
  if (top.has("outputs")) read_outputs(top.object("outputs"), s.outputs);
  if (top.has("checks")) read_checks(top.object("checks"), s.checks);
  if (top.has("faults")) s.faults = read_fault_plan(top.array("faults"), file, fault_context(s));
  top.finish();
  return s;
}

}  // namespace nvl::emu
