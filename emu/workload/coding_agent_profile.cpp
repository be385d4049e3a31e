#include "emu/workload/coding_agent_profile.h"

#include <algorithm>
#include <cmath>

#include <nlohmann/json.hpp>

#include "emu/rt/errors.h"
#include "emu/workload/trace_file.h"

namespace nvl::emu {

extern const char* const kCodexProfileJson;  // generated from profiles/codex-swebenchpro.json

namespace {

class Reader {
 public:
  explicit Reader(std::string file) : file_(std::move(file)) {}

  const nlohmann::json& at(const nlohmann::json& j, const std::string& path, const std::string& key) const {
    if (!j.is_object()) throw rt::InputError(file_, path, "expected an object");
    const auto it = j.find(key);
    if (it == j.end()) throw rt::InputError(file_, join(path, key), "missing field");
    return *it;
  }
  double number(const nlohmann::json& j, const std::string& path, const std::string& key, double lo,
                double hi) const {
    const auto& v = at(j, path, key);
    if (!v.is_number() || v.get<double>() < lo || v.get<double>() > hi) {
      throw rt::InputError(file_, join(path, key),
                           "expected a number in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
    }
    return v.get<double>();
  }
  std::int64_t integer(const nlohmann::json& j, const std::string& path, const std::string& key,
                       std::int64_t lo) const {
    const auto& v = at(j, path, key);
    if (!v.is_number_integer() || v.get<std::int64_t>() < lo) {
      throw rt::InputError(file_, join(path, key), "expected an integer >= " + std::to_string(lo));
    }
    return v.get<std::int64_t>();
  }
  Lognormal lognormal(const nlohmann::json& j, const std::string& path, const std::string& key) const {
    return Lognormal::from_json(at(j, path, key), file_, join(path, key));
  }
  LognormalMixture mixture(const nlohmann::json& j, const std::string& path, const std::string& key) const {
    const std::string p = join(path, key);
    return LognormalMixture::from_json(at(at(j, path, key), p, "mixture"), file_, p + ".mixture");
  }
  static std::string join(const std::string& path, const std::string& key) {
    return path.empty() ? key : path + "." + key;
  }

 private:
  std::string file_;
};

}  // namespace

CodingAgentProfile CodingAgentProfile::parse(const std::string& json_text, const std::string& file) {
  const nlohmann::json j = nlohmann::json::parse(json_text, nullptr, false);
  if (j.is_discarded()) throw rt::InputError(file, "", "malformed JSON");
  const Reader r(file);
  CodingAgentProfile p;
  const auto& name = r.at(j, "", "name");
  if (!name.is_string()) throw rt::InputError(file, "name", "expected a string");
  p.name = name.get<std::string>();
  p.tolerance = r.number(r.at(j, "", "tolerance"), "tolerance", "value", 0, 1);
  p.block_size_tokens = static_cast<std::int32_t>(r.integer(r.at(j, "", "block_size_tokens"), "block_size_tokens", "value", 1));
  p.context_window_tokens = r.integer(r.at(j, "", "context_window_tokens"), "context_window_tokens", "value", 1);
  p.default_trials = r.integer(r.at(j, "", "trials"), "trials", "value", 1);
  p.calls_per_trial = r.mixture(j, "", "calls_per_trial");
  p.min_calls_per_trial = r.integer(r.at(j, "", "calls_per_trial"), "calls_per_trial", "min", 1);
  const auto& prefix = r.at(j, "", "system_prefix");
  p.system_prefix_tokens = r.integer(prefix, "system_prefix", "tokens", 0);
  p.system_prefix_shared_share = r.number(prefix, "system_prefix", "shared_share", 0, 1);
  p.first_call_task_tokens = r.lognormal(j, "", "first_call_task_tokens");
  p.output_tokens = r.mixture(j, "", "output_tokens");
  p.inter_call_delay_s = r.mixture(j, "", "inter_call_delay_s");
  const auto& ni = r.at(j, "", "new_input_tokens");
  p.new_input_small_tokens = r.lognormal(ni, "new_input_tokens", "small");
  p.new_input_large_tokens = r.lognormal(ni, "new_input_tokens", "large");
  p.new_input_output_correlation = r.number(ni, "new_input_tokens", "output_correlation", -1, 1);
  p.trial_scale_sigma = r.number(ni, "new_input_tokens", "trial_scale_sigma", 0, 10);
  const auto& phases = r.at(ni, "new_input_tokens", "phases");
  if (!phases.is_array() || phases.empty()) throw rt::InputError(file, "new_input_tokens.phases", "expected a non-empty array");
  for (std::size_t i = 0; i < phases.size(); ++i) {
    const std::string at = "new_input_tokens.phases[" + std::to_string(i) + "]";
    PhaseShare ph{r.integer(phases[i], at, "first_turn", 2), r.number(phases[i], at, "large_share", 0, 1),
                  r.number(phases[i], at, "large_scale", 1, 100)};
    if (i == 0 ? ph.first_turn != 2 : ph.first_turn <= p.phases.back().first_turn) {
      throw rt::InputError(file, at + ".first_turn", "phases must start at turn 2 and increase");
    }
    p.phases.push_back(ph);
  }
  const auto& rw = r.at(j, "", "context_rewrites");
  p.rewrite_probability = r.number(rw, "context_rewrites", "probability", 0, 1);
  p.rewrite_depth_tokens = r.lognormal(rw, "context_rewrites", "depth_tokens");
  const auto& targets = r.at(j, "", "targets");
  if (!targets.is_array()) throw rt::InputError(file, "targets", "expected an array");
  for (std::size_t i = 0; i < targets.size(); ++i) {
    const std::string at = "targets[" + std::to_string(i) + "]";
    const auto& t = targets[i];
    const auto& fig = r.at(t, at, "figure");
    const auto& src = r.at(t, at, "source");
    if (!fig.is_string() || !src.is_string()) throw rt::InputError(file, at, "figure and source must be strings");
    p.targets.push_back({fig.get<std::string>(), r.number(t, at, "published", 0, 1e12), src.get<std::string>()});
  }
  return p;
}

CodingAgentProfile CodingAgentProfile::load(const std::string& path) { return parse(read_trace_file(path), path); }

CodingAgentProfile CodingAgentProfile::builtin_codex() {
  return parse(kCodexProfileJson, "emu/workload/profiles/codex-swebenchpro.json");
}

CodingAgentProfile CodingAgentProfile::with_contexts_scaled(double factor) const {
  CodingAgentProfile p = *this;
  const auto times = [factor](std::int64_t tokens) { return std::llround(static_cast<double>(tokens) * factor); };
  p.context_window_tokens = times(context_window_tokens);
  p.system_prefix_tokens = times(system_prefix_tokens);
  p.first_call_task_tokens = first_call_task_tokens.scaled(factor);
  p.new_input_small_tokens = new_input_small_tokens.scaled(factor);
  p.new_input_large_tokens = new_input_large_tokens.scaled(factor);
  p.rewrite_depth_tokens = rewrite_depth_tokens.scaled(factor);
  p.targets.clear();
  return p;
}

}  // namespace nvl::emu
