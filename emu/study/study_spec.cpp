#include "emu/study/study_spec.h"

#include <algorithm>
#include <cmath>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "emu/report/run_report.h"
#include "emu/rt/errors.h"
#include "emu/rt/json_path.h"
#include "emu/rt/json_reader.h"
#include "emu/sweep/sweep_plan.h"

namespace nvl::emu {

namespace {

std::vector<std::string> strings(rt::JsonReader& r, std::string_view key) {
  const nlohmann::json& list = r.array(key);
  std::vector<std::string> out;
  for (std::size_t i = 0; i < list.size(); ++i) {
    if (!list[i].is_string() || list[i].get<std::string>().empty()) {
      r.fail(key, "entry " + std::to_string(i) + " is not a non-empty string");
    }
    out.push_back(list[i].get<std::string>());
  }
  return out;
}

void check_overrides(rt::JsonReader& r, std::string_view key, const std::vector<std::string>& set) {
  for (const std::string& s : set) {
    if (s.find('=') == std::string::npos || s.front() == '=') r.fail(key, "'" + s + "' is not key.path=value");
  }
}

// "scenario": a path relative to the study file, which must exist.
std::string scenario_path(rt::JsonReader& r, const std::string& study_file) {
  const std::filesystem::path given(r.string("scenario"));
  const std::filesystem::path path = given.is_absolute() ? given : std::filesystem::path(study_file).parent_path() / given;
  const std::string resolved = path.lexically_normal().string();
  if (!std::filesystem::is_regular_file(resolved)) r.fail("scenario", "no scenario file at " + resolved);
  return resolved;
}

std::string figure(rt::JsonReader& r, std::string_view key) {
  std::string metric = r.string(key);
  if (!is_report_figure(metric)) {
    r.fail(key, "'" + metric + "' is not a number report.json carries (e.g. latency_ms.ttft.p90, "
                               "throughput.output_tokens_per_s, links.nvlink.mean_utilisation)");
  }
  return metric;
}

// report.json's shape, every figure zero: a metric names one of its numbers.
const nlohmann::json& report_skeleton() {
  static const nlohmann::json skeleton = [] {
    RunReport r;
    for (const char* cls : {"nvlink", "c2c", "pcie", "nic", "uplink", "host_memory"}) r.links[cls] = LinkUse{};
    return to_json(r);
  }();
  return skeleton;
}

}  // namespace

std::string axis_value_text(double x) {
  if (x == std::floor(x) && std::abs(x) < 1e15) return std::to_string(static_cast<long long>(x));
  return nlohmann::json(x).dump();
}

bool is_report_figure(const std::string& path) { return rt::number_at(report_skeleton(), path).has_value(); }

std::vector<std::string> StudySpec::all_metrics() const {
  std::vector<std::string> out = metrics;
  const auto add = [&out](const std::string& m) {
    if (!m.empty() && std::find(out.begin(), out.end(), m) == out.end()) out.push_back(m);
  };
  for (const StudyBound& b : bounds) add(b.metric);
  add(best_metric);
  return out;
}

const std::string& StudySpec::scenario_of(std::size_t v) const {
  return variants[v].scenario.empty() ? scenario : variants[v].scenario;
}

std::string StudySpec::x_override(std::size_t i) const {
  std::string text = x_format;
  text.replace(text.find("{}"), 2, axis_value_text(x_values[i]));
  return x_key + "=" + text;
}

StudySpec load_study(const std::string& file) {
  const nlohmann::json doc = rt::JsonReader::parse_file(file);
  rt::JsonReader r(doc, file);
  StudySpec s;
  s.file = file;
  s.name = r.string("name");
  s.question = r.string("question");
  s.scenario = scenario_path(r, file);
  if (r.has("set")) {
    s.set = strings(r, "set");
    check_overrides(r, "set", s.set);
  }

  rt::JsonReader x = r.object("x");
  s.x_key = x.string("key");
  if (s.x_key == "seed") x.fail("key", "the seeds are the study's \"seeds\", not an axis");
  s.x_label = x.has("label") ? x.string("label") : s.x_key;
  if (x.has("format")) {
    s.x_format = x.string("format");
    const std::size_t at = s.x_format.find("{}");
    if (at == std::string::npos || s.x_format.find("{}", at + 2) != std::string::npos) {
      x.fail("format", "'" + s.x_format + "' must hold \"{}\" exactly once: where the value goes");
    }
  }
  const nlohmann::json& values = x.array("values");
  if (values.empty()) x.fail("values", "empty: the axis needs at least one value");
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (!values[i].is_number()) x.fail("values", "entry " + std::to_string(i) + " is not a number (the plots' x)");
    s.x_values.push_back(values[i].get<double>());
    if (i > 0 && s.x_values[i] <= s.x_values[i - 1]) x.fail("values", "not ascending at entry " + std::to_string(i));
  }
  x.finish();

  if (r.has("variants")) {
    for (rt::JsonReader& v : r.objects("variants")) {
      StudyVariant variant{v.string("name"), {}, {}};
      if (v.has("scenario")) variant.scenario = scenario_path(v, file);
      if (v.has("set")) {
        variant.set = strings(v, "set");
        check_overrides(v, "set", variant.set);
      }
      v.finish();
      for (const StudyVariant& other : s.variants) {
        if (other.name == variant.name) r.fail("variants", "two variants named '" + variant.name + "'");
      }
      s.variants.push_back(std::move(variant));
    }
    if (s.variants.empty()) r.fail("variants", "empty: leave it out for one variant, the base scenario");
  } else {
    s.variants.push_back(StudyVariant{"base", {}, {}});
  }

  try {
    s.seeds = parse_seeds(r.string("seeds"));
  } catch (const rt::InputError& e) {
    r.fail("seeds", e.what());
  }
  const nlohmann::json& metrics = r.array("metrics");
  if (metrics.empty()) r.fail("metrics", "empty: name the report.json figures to show");
  for (std::size_t i = 0; i < metrics.size(); ++i) {
    const std::string metric = metrics[i].is_string() ? metrics[i].get<std::string>() : "";
    if (!is_report_figure(metric)) {
      r.fail("metrics", "entry " + std::to_string(i) + " (" + metrics[i].dump() +
                            ") is not a number report.json carries (e.g. latency_ms.ttft.p90)");
    }
    s.metrics.push_back(metric);
  }

  rt::JsonReader answer = r.object("answer");
  const int kinds = int(answer.has("highest_x_within")) + int(answer.has("best_variant")) + int(answer.has("best_x"));
  if (kinds != 1) answer.fail("highest_x_within", "give exactly one of highest_x_within (bounds), best_variant and best_x");
  if (answer.has("highest_x_within")) {
    for (rt::JsonReader& b : answer.objects("highest_x_within")) {
      StudyBound bound{figure(b, "metric"), std::nullopt, std::nullopt};
      if (b.has("max")) bound.max = b.number("max", rt::NumberRule::any);
      if (b.has("min")) bound.min = b.number("min", rt::NumberRule::any);
      if (!bound.max && !bound.min) b.fail("max", "a bound needs a max, a min or both");
      b.finish();
      s.bounds.push_back(std::move(bound));
    }
    if (s.bounds.empty()) answer.fail("highest_x_within", "empty: give at least one bound");
  } else {
    s.best_over_x = answer.has("best_x");
    rt::JsonReader best = answer.object(s.best_over_x ? "best_x" : "best_variant");
    s.best_metric = figure(best, "metric");
    const std::string goal = best.string("goal");
    if (goal != "max" && goal != "min") best.fail("goal", "'" + goal + "' is not max or min");
    s.best_is_max = goal == "max";
    best.finish();
  }
  answer.finish();
  r.finish();
  return s;
}

}  // namespace nvl::emu
