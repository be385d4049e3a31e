#include "emu/study/study_results.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <set>
#include <sstream>
#include <tuple>
#include <utility>

#include "emu/report/si_figure.h"
#include "emu/rt/json_path.h"

namespace nvl::emu {

namespace {

constexpr double kPercent = 100.0;

// The best's mean against the next one's, signed, in %: "-36.1%".
std::string relative_change(double best, double other) {
  char text[32];
  std::snprintf(text, sizeof text, "%+.1f%%", other != 0 ? kPercent * (best - other) / std::abs(other) : 0.0);
  return text;
}

// Each pool's longest queue over the run and when, longest first, and the router's own queue when it
// had one: where a run that no longer drains piled its requests up.
std::string peak_queues(const nlohmann::json& report) {
  const nlohmann::json* pools = rt::value_at(report, "timeline.series.pools");
  const nlohmann::json* total = rt::value_at(report, "timeline.series.waiting");
  const nlohmann::json* t_s = rt::value_at(report, "timeline.series.t_s");
  if (pools == nullptr || !pools->is_object() || total == nullptr || !total->is_array() || t_s == nullptr) return "";
  const auto number = [](const nlohmann::json& list, std::size_t i) {
    return i < list.size() && list[i].is_number() ? list[i].get<double>() : 0.0;
  };
  std::vector<double> router(total->size());
  for (std::size_t i = 0; i < router.size(); ++i) router[i] = number(*total, i);
  std::vector<std::tuple<double, std::string, double>> peaks;  // queue, pool, when
  const auto add_peak = [&](const std::string& name, const std::vector<double>& queue) {
    const auto it = std::max_element(queue.begin(), queue.end());
    if (it != queue.end()) peaks.emplace_back(*it, name, number(*t_s, static_cast<std::size_t>(it - queue.begin())));
  };
  for (const auto& [pool, series] : pools->items()) {
    const nlohmann::json* waiting = rt::value_at(series, "waiting");
    if (waiting == nullptr || !waiting->is_array()) continue;
    std::vector<double> queue(waiting->size());
    for (std::size_t i = 0; i < queue.size(); ++i) {
      queue[i] = number(*waiting, i);
      if (i < router.size()) router[i] -= queue[i];
    }
    add_peak(pool, queue);
  }
  if (std::any_of(router.begin(), router.end(), [](double q) { return q > 0.5; })) add_peak("router", router);
  std::sort(peaks.rbegin(), peaks.rend());
  std::string out;
  for (const auto& [queue, pool, when] : peaks) {
    out += (out.empty() ? "" : ", ") + pool + " " + si_figure(queue) + " at " + std::to_string(std::llround(when)) + " s";
  }
  return out;
}

std::string bound_text(const StudyBound& b) {
  std::ostringstream os;
  os << b.metric;
  if (b.min) os << " >= " << study_figure(*b.min);
  if (b.min && b.max) os << " and";
  if (b.max) os << " <= " << study_figure(*b.max);
  return os.str();
}

}  // namespace

std::string study_figure(double v) { return std::isnan(v) ? "n/a" : si_figure(v); }

StudyResults::StudyResults(StudySpec spec)
    : spec_(std::move(spec)), metrics_(spec_.all_metrics()),
      runs_(spec_.variants.size() * spec_.x_values.size() * spec_.seeds.size()) {}

std::size_t StudyResults::index(std::size_t variant, std::size_t x, std::size_t seed) const {
  return (variant * spec_.x_values.size() + x) * spec_.seeds.size() + seed;
}

std::size_t StudyResults::metric_index(const std::string& metric) const {
  return static_cast<std::size_t>(std::find(metrics_.begin(), metrics_.end(), metric) - metrics_.begin());
}

void StudyResults::add(std::size_t variant, std::size_t x, std::size_t seed, int exit_code, const nlohmann::json& report) {
  Run& r = runs_.at(index(variant, x, seed));
  r.exit_code = exit_code;
  const auto text = [&report](const char* path) {
    const nlohmann::json* v = rt::value_at(report, path);
    return v != nullptr && v->is_string() ? v->get<std::string>() : std::string();
  };
  r.stop_reason = text("stop_reason");
  r.figures.clear();
  for (const std::string& m : metrics_) {
    r.figures.push_back(rt::number_at(report, m).value_or(std::numeric_limits<double>::quiet_NaN()));
  }
  r.peak_queues = peak_queues(report);
  r.library = text("kernels.library");
  r.measured_share = rt::number_at(report, "kernels.measured_share").value_or(0);
}

SeedSpread StudyResults::spread(const std::string& metric, std::size_t variant, std::size_t x) const {
  const std::size_t m = metric_index(metric);
  SeedSpread s{0, std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::infinity(), 0};
  double sum = 0;
  for (std::size_t k = 0; k < spec_.seeds.size(); ++k) {
    const Run& r = run(variant, x, k);
    const double v = m < r.figures.size() ? r.figures[m] : std::numeric_limits<double>::quiet_NaN();
    if (std::isnan(v)) continue;
    sum += v;
    s.min = std::min(s.min, v);
    s.max = std::max(s.max, v);
    ++s.runs;
  }
  if (s.runs == 0) return SeedSpread{std::nan(""), std::nan(""), std::nan(""), 0};
  s.mean = sum / static_cast<double>(s.runs);
  return s;
}

bool StudyResults::drained(std::size_t variant, std::size_t x) const {
  for (std::size_t k = 0; k < spec_.seeds.size(); ++k) {
    const Run& r = run(variant, x, k);
    if (r.exit_code != 0 || r.stop_reason != "quiescent") return false;
  }
  return true;
}

std::string StudyResults::miss(std::size_t variant, std::size_t x) const {
  for (std::size_t k = 0; k < spec_.seeds.size(); ++k) {
    const Run& r = run(variant, x, k);
    const std::string seed = "seed " + std::to_string(spec_.seeds[k]);
    if (r.exit_code != 0 && r.stop_reason.empty()) return "a run failed (" + seed + ", exit " + std::to_string(r.exit_code) + ")";
    if (r.stop_reason == "time_limit") {
      return "the runs no longer drain before run.max_sim_seconds (" + seed + "; longest queue by pool: " +
             (r.peak_queues.empty() ? "not reported" : r.peak_queues) + ")";
    }
    if (r.exit_code != 0) return "a run's checks failed (" + seed + ")";
  }
  for (const StudyBound& b : spec_.bounds) {
    const SeedSpread s = spread(b.metric, variant, x);
    if (s.runs < spec_.seeds.size()) return b.metric + " is missing from a report";
    const std::string spread_text = " (worst seed; mean " + study_figure(s.mean) + ", bound ";
    if (b.max && s.max > *b.max) return b.metric + " reaches " + study_figure(s.max) + spread_text + study_figure(*b.max) + ")";
    if (b.min && s.min < *b.min) return b.metric + " falls to " + study_figure(s.min) + spread_text + study_figure(*b.min) + ")";
  }
  return "";
}

std::string StudyResults::highest_x_answer() const {
  std::ostringstream os;
  std::string within;
  for (const StudyBound& b : spec_.bounds) within += (within.empty() ? "" : " and ") + bound_text(b);
  std::vector<std::ptrdiff_t> highest_of(spec_.variants.size(), -1);
  for (std::size_t v = 0; v < spec_.variants.size(); ++v) {
    std::ptrdiff_t highest = -1;
    std::string why;
    for (std::size_t x = 0; x < spec_.x_values.size(); ++x) {
      why = miss(v, x);
      if (!why.empty()) break;
      highest = static_cast<std::ptrdiff_t>(x);
    }
    os << "- **" << spec_.variants[v].name << "**: ";
    if (highest < 0) {
      os << "not even " << spec_.x_label << " = " << axis_value_text(spec_.x_values.front()) << " meets " << within << ": " << why << ".\n";
      continue;
    }
    os << spec_.x_label << " up to **" << axis_value_text(spec_.x_values[static_cast<std::size_t>(highest)]) << "** meets " << within
       << " on all " << spec_.seeds.size() << " seeds";
    if (static_cast<std::size_t>(highest) + 1 < spec_.x_values.size()) {
      os << "; at " << axis_value_text(spec_.x_values[static_cast<std::size_t>(highest) + 1]) << " " << why << ".\n";
    } else {
      os << " (the highest value studied: the limit lies above it).\n";
    }
    highest_of[v] = highest;
  }
  const std::ptrdiff_t best_x = *std::max_element(highest_of.begin(), highest_of.end());
  std::vector<std::string> best;
  for (std::size_t v = 0; v < spec_.variants.size(); ++v) {
    if (highest_of[v] == best_x) best.push_back(spec_.variants[v].name);
  }
  std::ostringstream answer;
  if (best_x < 0) {
    answer << "No variant meets " << within << " at any " << spec_.x_label << " studied.\n\n";
    return answer.str() + os.str();
  }
  const std::string reach = spec_.x_label + " up to " + axis_value_text(spec_.x_values[static_cast<std::size_t>(best_x)]);
  if (spec_.variants.size() == 1) {
    answer << reach << ".\n\n";
  } else if (best.size() == 1) {
    answer << best.front() << " goes highest: " << reach << ".\n\n";
  } else {
    std::string names;
    for (std::size_t i = 0; i < best.size(); ++i) names += (i == 0 ? "" : i + 1 == best.size() ? " and " : ", ") + best[i];
    answer << names << " go equally high: " << reach << ".\n\n";
  }
  return answer.str() + os.str();
}

std::string StudyResults::best_variant_answer() const {
  std::ostringstream os;
  std::set<std::string> winners;
  for (std::size_t x = 0; x < spec_.x_values.size(); ++x) {
    std::vector<std::pair<double, std::size_t>> ranked;
    for (std::size_t v = 0; v < spec_.variants.size(); ++v) {
      const SeedSpread s = spread(spec_.best_metric, v, x);
      if (s.runs > 0) ranked.emplace_back(spec_.best_is_max ? -s.mean : s.mean, v);
    }
    os << "- " << spec_.x_label << " = " << axis_value_text(spec_.x_values[x]) << ": ";
    if (ranked.empty()) {
      os << "no run reported " << spec_.best_metric << ".\n";
      continue;
    }
    std::sort(ranked.begin(), ranked.end());
    const std::size_t first = ranked.front().second;
    const SeedSpread s = spread(spec_.best_metric, first, x);
    winners.insert(spec_.variants[first].name);
    os << "**" << spec_.variants[first].name << "**, " << study_figure(s.mean) << " (seeds " << study_figure(s.min) << " to "
       << study_figure(s.max) << ")";
    if (ranked.size() > 1) {
      const std::size_t second = ranked[1].second;
      const double other = spread(spec_.best_metric, second, x).mean;
      os << ", " << relative_change(s.mean, other) << " against " << spec_.variants[second].name << " (" << study_figure(other) << ")";
      if (!drained(second, x)) os << ", not every run of which drained";
    }
    if (!drained(first, x)) os << "; not every run of it drained";
    os << ".\n";
  }
  std::ostringstream answer;
  answer << (spec_.best_is_max ? "The most " : "The least ") << spec_.best_metric << ": ";
  if (winners.size() == 1) {
    answer << *winners.begin() << " at every " << spec_.x_label << " studied.\n\n";
  } else {
    answer << "it depends on " << spec_.x_label << " (below).\n\n";
  }
  return answer.str() + os.str();
}

std::string StudyResults::best_x_answer() const {
  std::ostringstream os;
  std::set<double> best_values;
  for (std::size_t v = 0; v < spec_.variants.size(); ++v) {
    // Runs that do not drain leave requests unfinished and their figures flattered: they rank last.
    std::vector<std::tuple<bool, double, std::size_t>> ranked;  // not drained, signed mean, x
    for (std::size_t x = 0; x < spec_.x_values.size(); ++x) {
      const SeedSpread s = spread(spec_.best_metric, v, x);
      if (s.runs > 0) ranked.emplace_back(!drained(v, x), spec_.best_is_max ? -s.mean : s.mean, x);
    }
    if (spec_.variants.size() > 1) os << "- **" << spec_.variants[v].name << "**: ";
    if (ranked.empty()) {
      os << "no run reported " << spec_.best_metric << ".\n";
      continue;
    }
    std::sort(ranked.begin(), ranked.end());
    const auto [first_stuck, first_mean, first] = ranked.front();
    const SeedSpread s = spread(spec_.best_metric, v, first);
    best_values.insert(spec_.x_values[first]);
    os << spec_.x_label << " = **" << axis_value_text(spec_.x_values[first]) << "**: " << spec_.best_metric << " "
       << study_figure(s.mean) << " (seeds " << study_figure(s.min) << " to " << study_figure(s.max) << ")";
    if (ranked.size() > 1) {
      const auto [second_stuck, second_mean, second] = ranked[1];
      const double other = spread(spec_.best_metric, v, second).mean;
      os << ", " << relative_change(s.mean, other) << " against " << axis_value_text(spec_.x_values[second]) << " (" << study_figure(other) << ")";
      if (second_stuck) os << ", whose runs do not all drain";
    }
    if (first_stuck) os << "; no value studied drains on every seed";
    os << ".\n";
  }
  std::ostringstream answer;
  answer << (spec_.best_is_max ? "The most " : "The least ") << spec_.best_metric << ": ";
  if (best_values.size() == 1) {
    answer << spec_.x_label << " = " << axis_value_text(*best_values.begin())
           << (spec_.variants.size() > 1 ? " for every variant" : "") << ".\n\n";
  } else {
    answer << "the best " << spec_.x_label << " depends on the variant (below).\n\n";
  }
  return answer.str() + os.str();
}

std::string StudyResults::answer() const {
  if (!spec_.bounds.empty()) return highest_x_answer();
  return spec_.best_over_x ? best_x_answer() : best_variant_answer();
}

std::string StudyResults::calibration() const {
  std::set<std::string> libraries;
  double lo = 1, hi = 0;
  for (const Run& r : runs_) {
    if (r.library.empty()) continue;
    libraries.insert(r.library);
    lo = std::min(lo, r.measured_share);
    hi = std::max(hi, r.measured_share);
  }
  if (libraries.empty()) return "no run reported its kernel pricing";
  std::string names;
  for (const std::string& l : libraries) names += (names.empty() ? "" : ", ") + l;
  std::ostringstream os;
  os << "kernels priced with " << names << ": " << study_figure(kPercent * lo);
  if (hi > lo) os << "% to " << study_figure(kPercent * hi);
  os << "% of GPU time from measured tables";
  if (hi == 0) os << ". The rest comes from the roofline: this timing is not yet calibrated on Blackwell measurements";
  return os.str();
}

nlohmann::json StudyResults::to_json() const {
  nlohmann::json rows = nlohmann::json::array();
  for (std::size_t v = 0; v < spec_.variants.size(); ++v) {
    for (std::size_t x = 0; x < spec_.x_values.size(); ++x) {
      for (std::size_t k = 0; k < spec_.seeds.size(); ++k) {
        const Run& r = run(v, x, k);
        nlohmann::json figures = nlohmann::json::object();
        for (std::size_t m = 0; m < metrics_.size() && m < r.figures.size(); ++m) {
          figures[metrics_[m]] = std::isnan(r.figures[m]) ? nlohmann::json(nullptr) : nlohmann::json(r.figures[m]);
        }
        rows.push_back({{"variant", spec_.variants[v].name},
                        {"x", spec_.x_values[x]},
                        {"seed", spec_.seeds[k]},
                        {"exit_code", r.exit_code},
                        {"stop_reason", r.stop_reason},
                        {"figures", std::move(figures)}});
      }
    }
  }
  return {{"study", spec_.name}, {"question", spec_.question}, {"x_key", spec_.x_key}, {"answer", answer()},
          {"calibration", calibration()}, {"runs", std::move(rows)}};
}

}  // namespace nvl::emu
