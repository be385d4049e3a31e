#include "emu/report/timeline_json.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

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

}  // namespace

nlohmann::json to_json(const Timeline& t) {
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
            {"gpu_busy", std::move(gpu_busy)}}}};
}

}  // namespace nvl::emu
