#pragma once
// A study's two pages: study.md (the question, the answer in sentences with their numbers, a table of
// every figure over the seeds, the assumptions and how to rerun it) and study.html (the same, with an SVG
// plot per figure: the figure against the swept axis, a line per variant, the spread over seeds as a band).
#include <iosfwd>

#include "emu/study/study_results.h"

namespace nvl::emu {

void write_study_markdown(std::ostream& out, const StudyResults& results, const std::string& command);
void write_study_html(std::ostream& out, const StudyResults& results, const std::string& command);

}  // namespace nvl::emu
