#include "emu/check/assertion_check.h"

#include <sstream>

#include <nlohmann/json.hpp>

namespace nvl::emu {

namespace {

std::string number(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

// The figure at a dotted path, nullptr when there is none.
const nlohmann::json* figure(const nlohmann::json& report, const std::string& path) {
  const nlohmann::json* node = &report;
  std::size_t begin = 0;
  for (;;) {
    const auto dot = path.find('.', begin);
    const std::string key = path.substr(begin, dot == std::string::npos ? std::string::npos : dot - begin);
    if (!node->is_object() || !node->contains(key)) return nullptr;
    node = &(*node)[key];
    if (dot == std::string::npos) return node;
    begin = dot + 1;
  }
}

}  // namespace

std::string assertion_check_name(const Assertion& a) { return "assert " + a.metric; }

CheckResult check_assertion(const Assertion& a, const nlohmann::json& report) {
  const nlohmann::json* f = figure(report, a.metric);
  if (f == nullptr || !f->is_number()) return {false, "report.json has no figure " + a.metric};
  const double v = f->get<double>();
  std::string bounds;
  if (a.min) bounds += ">= " + number(*a.min);
  if (a.max) bounds += std::string(bounds.empty() ? "" : " and ") + "<= " + number(*a.max);
  const bool pass = (!a.min || v >= *a.min) && (!a.max || v <= *a.max);
  return {pass, a.metric + " = " + number(v) + (pass ? ", within " : ", not ") + bounds};
}

}  // namespace nvl::emu
