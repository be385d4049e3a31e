#include "emu/check/assertion_check.h"

#include <sstream>

#include <nlohmann/json.hpp>

#include "emu/rt/json_path.h"

namespace nvl::emu {

namespace {

std::string number(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

}  // namespace

std::string assertion_check_name(const Assertion& a) { return "assert " + a.metric; }

CheckResult check_assertion(const Assertion& a, const nlohmann::json& report) {
  const nlohmann::json* f = rt::value_at(report, a.metric);
  if (f == nullptr || !f->is_number()) return {false, "report.json has no figure " + a.metric};
  const double v = f->get<double>();
  std::string bounds;
  if (a.min) bounds += ">= " + number(*a.min);
  if (a.max) bounds += std::string(bounds.empty() ? "" : " and ") + "<= " + number(*a.max);
  const bool pass = (!a.min || v >= *a.min) && (!a.max || v <= *a.max);
  return {pass, a.metric + " = " + number(v) + (pass ? ", within " : ", not ") + bounds};
}

}  // namespace nvl::emu
