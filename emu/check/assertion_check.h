#pragma once
// Evaluates scenario assertions against a run's report.json figures; each becomes a check named
// "assert <metric>".
#include <nlohmann/json_fwd.hpp>

#include "emu/check/assertion.h"
#include "emu/check/check_result.h"

namespace nvl::emu {

std::string assertion_check_name(const Assertion& a);
CheckResult check_assertion(const Assertion& a, const nlohmann::json& report);

}  // namespace nvl::emu
