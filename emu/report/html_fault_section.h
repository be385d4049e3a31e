#pragma once
// report.html's fault section: the run's fault timeline (report.json `faults`, written by
// emu/faults/fault_timeline.cpp) as a table with one numbered row per fault, and the faults' hits as
// markers, numbered the same, for the charts over simulated time. Fields a fault lacks (or has as
// null: not detected, not recovered) are shown as such.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "emu/report/svg_chart.h"
#include "emu/report/timeline.h"

namespace nvl::emu {

// The table, or one line saying the run had no faults.
std::string fault_section_html(const nlohmann::json& faults);
std::vector<ChartMarker> fault_markers(const nlohmann::json& faults);
// Each fault's impact: output tokens/s, queued and running requests over the `window_s` of simulated
// time before its hit and after it (timeline samples whose interval ends in (hit - window, hit] and in
// (hit, hit + window]), and the change. Empty without faults.
std::string fault_impact_html(const nlohmann::json& faults, const Timeline& timeline, double window_s = 60);

}  // namespace nvl::emu
