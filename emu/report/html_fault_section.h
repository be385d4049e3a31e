#pragma once
// report.html's fault section: the run's fault timeline (report.json `faults`, written by
// emu/faults/fault_timeline.cpp) as a table with one numbered row per fault, and the faults' hits as
// markers, numbered the same, for the charts over simulated time. Fields a fault lacks (or has as
// null: not detected, not recovered) are shown as such.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "emu/report/svg_chart.h"

namespace nvl::emu {

// The table, or one line saying the run had no faults.
std::string fault_section_html(const nlohmann::json& faults);
std::vector<ChartMarker> fault_markers(const nlohmann::json& faults);

}  // namespace nvl::emu
