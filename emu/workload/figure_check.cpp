#include "emu/workload/figure_check.h"

#include <cmath>
#include <cstdio>

#include <nlohmann/json.hpp>

namespace nvl::emu {

std::vector<FigureCheck> FigureCheck::run(const TraceStats& stats, const std::vector<PublishedFigure>& targets,
                                          double tolerance) {
  std::vector<FigureCheck> out;
  for (const auto& t : targets) {
    FigureCheck c;
    c.target = t;
    const auto it = stats.figures().find(t.figure);
    c.missing = it == stats.figures().end();
    if (!c.missing) {
      c.generated = it->second;
      c.error = t.published != 0 ? (c.generated - t.published) / t.published : c.generated;
      c.within = std::fabs(c.error) <= tolerance;
    }
    out.push_back(c);
  }
  return out;
}

void print_checks(std::ostream& os, const std::vector<FigureCheck>& checks, double tolerance) {
  char buf[256];
  std::snprintf(buf, sizeof buf, "published figures (tolerance %.1f%%):\n  %-40s %12s %12s %8s  %s\n",
                tolerance * 100, "figure", "published", "generated", "error", "ok");
  os << buf;
  int outside = 0;
  for (const auto& c : checks) {
    if (c.missing) {
      std::snprintf(buf, sizeof buf, "  %-40s %12.4g %12s %8s  MISSING\n", c.target.figure.c_str(),
                    c.target.published, "-", "-");
    } else {
      std::snprintf(buf, sizeof buf, "  %-40s %12.4g %12.4g %+7.1f%%  %s\n", c.target.figure.c_str(),
                    c.target.published, c.generated, c.error * 100, c.within ? "ok" : "OUTSIDE");
    }
    outside += c.within ? 0 : 1;
    os << buf;
  }
  os << "  " << checks.size() - static_cast<std::size_t>(outside) << " of " << checks.size() << " within tolerance\n";
}

nlohmann::json to_json(const std::vector<FigureCheck>& checks) {
  nlohmann::json arr = nlohmann::json::array();
  for (const auto& c : checks) {
    nlohmann::json j{{"figure", c.target.figure}, {"published", c.target.published}, {"source", c.target.source},
                     {"within", c.within}};
    if (!c.missing) {
      j["generated"] = c.generated;
      j["error"] = c.error;
    }
    arr.push_back(j);
  }
  return arr;
}

}  // namespace nvl::emu
