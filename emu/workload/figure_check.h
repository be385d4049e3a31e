#pragma once
// Published figure vs generated figure, with the relative error and whether it is within tolerance.
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "emu/workload/coding_agent_profile.h"
#include "emu/workload/trace_stats.h"

namespace nvl::emu {

struct FigureCheck {
  PublishedFigure target;
  double generated = 0;
  double error = 0;  // (generated - published) / published
  bool within = false;
  bool missing = false;  // the workload has no such figure

  static std::vector<FigureCheck> run(const TraceStats& stats, const std::vector<PublishedFigure>& targets,
                                      double tolerance);
};

void print_checks(std::ostream& os, const std::vector<FigureCheck>& checks, double tolerance);
nlohmann::json to_json(const std::vector<FigureCheck>& checks);

}  // namespace nvl::emu
