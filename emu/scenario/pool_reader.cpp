#include "emu/scenario/pool_reader.h"

#include <algorithm>
#include <array>
#include <set>
#include <string_view>

#include "emu/rt/errors.h"

namespace nvl::emu {

namespace {

constexpr std::int64_t kMaxMtpDraftTokens = 16;

constexpr std::array<std::string_view, 4> kRoles = {"decode", "prefill", "mixed", "aggregated"};
constexpr std::array<std::string_view, 3> kWeights = {"bf16", "fp8", "nvfp4"};
constexpr std::int64_t kMaxParallel = 1 << 16;  // far above any rack, far from overflow when multiplied

template <std::size_t N>
std::string listed(const std::array<std::string_view, N>& allowed) {
  std::string list;
  for (auto a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
  return list;
}

template <std::size_t N>
std::string one_of(rt::JsonReader& r, std::string_view key, const std::array<std::string_view, N>& allowed) {
  std::string v = r.string(key);
  if (std::find(allowed.begin(), allowed.end(), v) == allowed.end()) {
    r.fail(key, "'" + v + "' is not one of " + listed(allowed));
  }
  return v;
}

void read_placement(rt::JsonReader& p, ScenarioPlacement& out) {
  if (!p.has("gpus")) return;
  const nlohmann::json& g = p.value("gpus");  // a string, a list or {"rack": R}
  const std::string expected = "expected \"auto\", a list of GPU indices or {\"rack\": R}";
  if (g.is_string()) {
    if (g.get<std::string>() != "auto") p.fail("gpus", expected + ", got \"" + g.get<std::string>() + "\"");
    return;
  }
  if (g.is_array()) {
    out.kind = ScenarioPlacement::Kind::list;
    for (const auto& i : g) {
      if (!i.is_number_integer() || i.get<std::int64_t>() < 0) p.fail("gpus", "GPU indices are whole numbers >= 0");
      out.gpus.push_back(i.get<std::int64_t>());
    }
    return;
  }
  if (g.is_object() && g.size() == 1 && g.contains("rack") && g["rack"].is_number_integer() &&
      g["rack"].get<std::int64_t>() >= 0) {
    out.kind = ScenarioPlacement::Kind::rack;
    out.rack = g["rack"].get<std::int64_t>();
    return;
  }
  p.fail("gpus", expected + " with R >= 0");
}

ScenarioPool read_pool(rt::JsonReader p) {
  ScenarioPool pool;
  pool.name = p.string("name");
  if (pool.name.empty()) p.fail("name", "a pool needs a non-empty name");
  pool.role = one_of(p, "role", kRoles);
  const bool prefill = pool.role == "prefill";
  // A prefill instance runs long prompts in big chunks and holds few requests (it finishes each at
  // its first token): the defaults the prefill worker had.
  if (prefill) {
    pool.token_budget = 16'384;
    pool.max_running = 64;
  }
  if (p.has("instances")) pool.instances = p.integer("instances", 1, kMaxParallel);
  for (auto [key, value] : {std::pair{"tp", &pool.tp}, std::pair{"dp", &pool.dp}, std::pair{"ep", &pool.ep},
                            std::pair{"pp", &pool.pp}}) {
    if (p.has(key)) *value = p.integer(key, 1, kMaxParallel);
  }
  read_placement(p, pool.placement);
  if (p.has("weights")) pool.weights = one_of(p, "weights", kWeights);
  if (p.has("kv_dtype")) pool.kv_dtype = p.string("kv_dtype");
  if (p.has("token_budget")) pool.token_budget = p.integer("token_budget", 1);
  if (p.has("max_running")) pool.max_running = p.integer("max_running", 1);
  pool.chunk_tokens = p.has("chunk_tokens") ? p.integer("chunk_tokens", 1) : (prefill ? pool.token_budget : pool.chunk_tokens);
  // At most 16 drafts: each needs the one before it accepted, so at acceptance 0.8 the 16th is kept 3% of
  // the time (0.8^16) while every draft costs a verify token; SGLang's MTP configurations use 1-4.
  if (p.has("mtp_draft_tokens")) pool.mtp_draft_tokens = p.integer("mtp_draft_tokens", 0, kMaxMtpDraftTokens);
  if (p.has("mixed_batches")) {
    if (prefill) p.fail("mixed_batches", "a prefill pool never decodes, so it has no decodes to mix: leave it out");
    pool.mixed_batches = p.boolean("mixed_batches");
  }
  if (p.has("mtp_acceptance_rate")) pool.mtp_acceptance_rate = p.number("mtp_acceptance_rate", rt::NumberRule::fraction);
  if (p.has("two_batch_overlap")) pool.two_batch_overlap = p.boolean("two_batch_overlap");
  if (p.has("single_batch_overlap")) pool.single_batch_overlap = p.boolean("single_batch_overlap");
  if (p.has("moe_all_to_all")) pool.moe_all_to_all = p.boolean("moe_all_to_all");
  if (p.has("sbo_combine_sms")) {
    if (!pool.single_batch_overlap) p.fail("sbo_combine_sms", "sets single-batch overlap's SMs: set single_batch_overlap true too");
    pool.sbo_combine_sms = p.integer("sbo_combine_sms", 1);
  }
  if (p.has("eplb")) {
    rt::JsonReader e = p.object("eplb");
    if (e.has("redundant_experts")) pool.eplb.redundant_experts = e.integer("redundant_experts");
    if (e.has("expert_skew")) pool.eplb.expert_skew = e.number("expert_skew", rt::NumberRule::non_negative);
    if (e.has("drift_interval_ms")) pool.eplb.drift_interval_ms = e.number("drift_interval_ms", rt::NumberRule::non_negative);
    if (e.has("drift_fraction")) pool.eplb.drift_fraction = e.number("drift_fraction", rt::NumberRule::fraction);
    if (e.has("interval_steps")) pool.eplb.interval_steps = e.integer("interval_steps");
    if (pool.eplb.drift_interval_ms > 0 && pool.eplb.expert_skew == 0) {
      e.fail("drift_interval_ms", "a uniform popularity (expert_skew 0) has nothing to drift: set expert_skew > 0");
    }
    e.finish();
  }
  if (p.has("sm_partition")) {
    rt::JsonReader sm = p.object("sm_partition");
    pool.sm_partition_prefill = sm.number("prefill", rt::NumberRule::any);
    if (!(pool.sm_partition_prefill > 0 && pool.sm_partition_prefill < 1)) {
      sm.fail("prefill", "the prefill stream's SM share must be strictly between 0 and 1");
    }
    sm.finish();
    if (pool.role != "mixed") {
      p.fail("sm_partition", "SM partitions (green contexts) split prefill and decode of one GPU: only a mixed pool has both");
    }
  }
  p.finish();
  return pool;
}

}  // namespace

std::vector<ScenarioPool> read_pools(rt::JsonReader& d) {
  if (!d.has("pools")) {
    d.fail("pools", "a deployment is a list of worker pools (scenarios/README.md, \"deployment.pools\")");
  }
  std::vector<ScenarioPool> pools;
  std::set<std::string> names;
  const std::vector<rt::JsonReader> entries = d.objects("pools");
  if (entries.empty()) d.fail("pools", "needs at least one pool");
  for (const rt::JsonReader& e : entries) {
    pools.push_back(read_pool(e));
    if (!names.insert(pools.back().name).second) {
      e.fail("name", "another pool is already named '" + pools.back().name + "'");
    }
  }
  return pools;
}

void place_pools(std::vector<ScenarioPool>& pools, std::int64_t gpus_per_unit, std::int64_t units,
                 const std::string& file, const std::string& fabric_profile) {
  const std::int64_t total = gpus_per_unit * units;
  std::vector<int> owner(static_cast<std::size_t>(total), -1);  // GPU -> pool index
  const auto key = [](std::size_t i) { return "deployment.pools[" + std::to_string(i) + "].gpus"; };
  const auto cluster = std::to_string(units) + " x " + fabric_profile + " (" + std::to_string(total) + " GPUs)";
  std::vector<std::vector<std::int64_t>> placed(pools.size());
  const auto take = [&](std::size_t i, std::int64_t gpu) {
    if (gpu >= total) throw rt::InputError(file, key(i), "GPU " + std::to_string(gpu) + " is not in the cluster: " + cluster);
    int& o = owner[static_cast<std::size_t>(gpu)];
    if (o >= 0) {
      throw rt::InputError(file, key(i), "GPU " + std::to_string(gpu) + " is already used by pool '" +
                                             pools[static_cast<std::size_t>(o)].name + "'");
    }
    o = static_cast<int>(i);
    placed[i].push_back(gpu);
  };
  // Explicit lists first, then rack pools, then the rest: an "auto" pool never takes a GPU another
  // pool named or a rack pool needs.
  for (int pass = 0; pass < 3; ++pass) {
    for (std::size_t i = 0; i < pools.size(); ++i) {
      const ScenarioPool& p = pools[i];
      const auto kind = p.placement.kind;
      if ((pass == 0) != (kind == ScenarioPlacement::Kind::list)) continue;
      if ((pass == 1) != (kind == ScenarioPlacement::Kind::rack)) continue;
      const std::int64_t need = p.instances * p.gpus_per_instance();
      if (kind == ScenarioPlacement::Kind::list) {
        if (static_cast<std::int64_t>(p.placement.gpus.size()) != need) {
          throw rt::InputError(file, key(i), std::to_string(p.placement.gpus.size()) + " GPUs listed; the pool needs " +
                                                 std::to_string(p.instances) + " instances x " +
                                                 std::to_string(p.gpus_per_instance()) + " (tp x dp x pp) = " +
                                                 std::to_string(need));
        }
        for (std::int64_t g : p.placement.gpus) take(i, g);
        continue;
      }
      std::int64_t first = 0, last = total;
      if (kind == ScenarioPlacement::Kind::rack) {
        if (p.placement.rack >= units) {
          throw rt::InputError(file, key(i) + ".rack", "no rack " + std::to_string(p.placement.rack) + ": the cluster has " +
                                                           std::to_string(units) + " (cluster.units)");
        }
        first = p.placement.rack * gpus_per_unit;
        last = first + gpus_per_unit;
      }
      std::int64_t free = 0;
      for (std::int64_t g = first; g < last; ++g) free += owner[static_cast<std::size_t>(g)] < 0 ? 1 : 0;
      if (free < need) {
        throw rt::InputError(file, key(i), "pool '" + p.name + "' needs " + std::to_string(need) + " GPUs; " +
                                               std::to_string(free) + " are free " +
                                               (kind == ScenarioPlacement::Kind::rack
                                                    ? "in rack " + std::to_string(p.placement.rack)
                                                    : "in " + cluster));
      }
      for (std::int64_t g = first; g < last && static_cast<std::int64_t>(placed[i].size()) < need; ++g) {
        if (owner[static_cast<std::size_t>(g)] < 0) take(i, g);
      }
    }
  }
  for (std::size_t i = 0; i < pools.size(); ++i) {
    ScenarioPool& p = pools[i];
    p.instance_gpus.clear();
    const auto per = static_cast<std::size_t>(p.gpus_per_instance());
    for (std::size_t k = 0; k < placed[i].size(); k += per) {
      p.instance_gpus.emplace_back(placed[i].begin() + static_cast<std::ptrdiff_t>(k),
                                   placed[i].begin() + static_cast<std::ptrdiff_t>(k + per));
    }
  }
}

std::int64_t ScenarioDeployment::cluster_gpus() const {
  std::int64_t n = 0;
  for (const ScenarioPool& p : pools) {
    for (const auto& inst : p.instance_gpus) {
      for (std::int64_t g : inst) n = std::max(n, g + 1);
    }
  }
  return n;
}

std::vector<std::int64_t> ScenarioDeployment::rank_gpus() const {
  std::vector<std::int64_t> out;
  for (const ScenarioPool& p : pools) {
    if (!p.decodes()) continue;
    for (const auto& inst : p.instance_gpus) {
      for (std::size_t g = 0; g < inst.size(); g += static_cast<std::size_t>(p.tp)) out.push_back(inst[g]);
    }
  }
  return out;
}

std::vector<std::int64_t> ScenarioDeployment::decoding_gpus() const {
  std::vector<std::int64_t> out;
  for (const ScenarioPool& p : pools) {
    if (!p.decodes()) continue;
    for (const auto& inst : p.instance_gpus) out.insert(out.end(), inst.begin(), inst.end());
  }
  return out;
}

std::vector<std::int64_t> ScenarioDeployment::prefill_gpus() const {
  std::vector<std::int64_t> out;
  for (const ScenarioPool& p : pools) {
    if (p.decodes()) continue;
    for (const auto& inst : p.instance_gpus) out.insert(out.end(), inst.begin(), inst.end());
  }
  return out;
}

}  // namespace nvl::emu
