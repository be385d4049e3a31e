#pragma once
// Another run's report.json, read back so that this run's report.html can be set beside it
// (nvl72emu run --compare OTHER/report.json): a table of the headline figures with the change of each,
// and the other run's line on every plot over time.
#include <string>

#include <nlohmann/json.hpp>

#include "emu/report/timeline.h"

namespace nvl::emu {

struct OtherRun {
  std::string label;  // how the page names it: the file's folder ("baseline" for baseline/report.json)
  nlohmann::json report;
  Timeline timeline;
};

// Throws rt::InputError naming the file and the key for a file that is not a report.json of schema
// version 3 or later (the first with timeline.series).
OtherRun read_other_run(const std::string& file);

// The headline figures of both reports (report.json's keys) side by side with the change of each.
std::string comparison_html(const nlohmann::json& mine, const OtherRun& other);

}  // namespace nvl::emu
