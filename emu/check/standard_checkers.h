#pragma once
// The checkers every run gets (DESIGN.md "Harness and outputs").
#include <memory>
#include <vector>

#include "emu/check/run_checker.h"

namespace nvl::emu {

std::vector<std::unique_ptr<RunChecker>> make_standard_checkers();

}  // namespace nvl::emu
