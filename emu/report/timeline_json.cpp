#include "emu/report/timeline_json.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <stdexcept>
#include <string>

namespace nvl::emu {

namespace {

double six_digits(double x) {
  if (x == 0 || !std::isfinite(x)) return x;
  char text[32];
  std::snprintf(text, sizeof text, "%.6g", x);
  return std::strtod(text, nullptr);
}

nlohmann::json series(const std::vector<double>& values) {
  nlohmann::json out = nlohmann::json::array();
  for (double v : values) out.push_back(six_digits(v));
  return out;
}

nlohmann::json series_by_name(const std::map<std::string, std::vector<double>>& by_name) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [name, values] : by_name) out[name] = series(values);
  return out;
}

std::vector<double> values_of(const nlohmann::json& list, const std::string& name) {
  if (!list.is_array()) throw std::invalid_argument("series." + name + ": expected a list of numbers");
  std::vector<double> out;
  out.reserve(list.size());
  for (const nlohmann::json& v : list) {
    if (v.is_null()) {
      out.push_back(std::numeric_limits<double>::quiet_NaN());
    } else if (v.is_number()) {
      out.push_back(v.get<double>());
    } else {
      throw std::invalid_argument("series." + name + ": expected numbers or null, found " + v.dump());
    }
  }
  return out;
}

const nlohmann::json& member(const nlohmann::json& object, const std::string& key, const std::string& where) {
  if (!object.is_object() || !object.contains(key)) throw std::invalid_argument(where + key + ": missing");
  return object.at(key);
}

std::map<std::string, std::vector<double>> values_by_name(const nlohmann::json& object, const std::string& name) {
  if (!object.is_object()) throw std::invalid_argument("series." + name + ": expected an object of lists");
  std::map<std::string, std::vector<double>> out;
  for (const auto& [key, list] : object.items()) out[key] = values_of(list, name + "." + key);
  return out;
}

}  // namespace

Timeline timeline_from_json(const nlohmann::json& timeline) {
  Timeline t;
  const nlohmann::json& interval = member(timeline, "interval_s", "");
  if (!interval.is_number()) throw std::invalid_argument("interval_s: expected a number");
  t.interval_s = interval.get<double>();
  const nlohmann::json& s = member(timeline, "series", "");
  const auto flat = [&s](const char* key) { return values_of(member(s, key, "series."), key); };
  t.t_s = flat("t_s");
  t.input_tokens_per_s = flat("input_tokens_per_s");
  t.output_tokens_per_s = flat("output_tokens_per_s");
  t.waiting = flat("waiting");
  t.running = flat("running");
  t.kv_lookup_tokens = flat("kv_lookup_tokens");
  t.kv_hit_tokens = values_by_name(member(s, "kv_hit_tokens", "series."), "kv_hit_tokens");
  t.link_mean = values_by_name(member(s, "link_mean", "series."), "link_mean");
  t.link_peak = values_by_name(member(s, "link_peak", "series."), "link_peak");
  if (s.contains("ttft_split_s")) t.ttft_split_s = values_by_name(s["ttft_split_s"], "ttft_split_s");
  if (s.contains("pools")) {
    if (!s["pools"].is_object()) throw std::invalid_argument("series.pools: expected an object");
    for (const auto& [name, p] : s["pools"].items()) {
      const std::string where = "series.pools." + name + ".";
      Timeline::PoolSeries& out = t.pools[name];
      out.waiting = values_of(member(p, "waiting", where), "pools." + name + ".waiting");
      out.running = values_of(member(p, "running", where), "pools." + name + ".running");
      out.kv_used = values_of(member(p, "kv_used", where), "pools." + name + ".kv_used");
    }
  }
  return t;
}

nlohmann::json to_json(const Timeline& t) {
  nlohmann::json pools = nlohmann::json::object();
  for (const auto& [name, p] : t.pools) {
    pools[name] = {{"waiting", series(p.waiting)}, {"running", series(p.running)}, {"kv_used", series(p.kv_used)}};
  }
  nlohmann::json gpu_busy = nlohmann::json::object();
  for (std::size_t g = 0; g < t.gpu_names.size() && g < t.gpu_busy.size(); ++g) gpu_busy[t.gpu_names[g]] = series(t.gpu_busy[g]);
  return {{"interval_s", t.interval_s},
          {"samples", t.samples()},
          {"series",
           {{"t_s", series(t.t_s)},
            {"input_tokens_per_s", series(t.input_tokens_per_s)},
            {"output_tokens_per_s", series(t.output_tokens_per_s)},
            {"waiting", series(t.waiting)},
            {"running", series(t.running)},
            {"kv_lookup_tokens", series(t.kv_lookup_tokens)},
            {"kv_hit_tokens", series_by_name(t.kv_hit_tokens)},
            {"link_mean", series_by_name(t.link_mean)},
            {"link_peak", series_by_name(t.link_peak)},
            {"pools", std::move(pools)},
            {"ttft_split_s", series_by_name(t.ttft_split_s)},
            {"gpu_busy", std::move(gpu_busy)}}}};
}

}  // namespace nvl::emu
