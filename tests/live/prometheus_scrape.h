#pragma once
// Reads a /metrics scrape as a Prometheus client would: every sample line parsed into its name,
// labels and value, failing the test on a line that is not the text format.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace nvl::live_test {

struct PromSample {
  std::string name;
  std::map<std::string, std::string> labels;
  std::string value;  // as written
  double number() const { return value == "+Inf" ? 1e300 : std::stod(value); }
};

inline std::vector<PromSample> parse_prometheus(const std::string& text) {
  std::vector<PromSample> out;
  std::size_t at = 0;
  while (at < text.size()) {
    const std::size_t end = text.find('\n', at);
    const std::string line = text.substr(at, end - at);
    at = end == std::string::npos ? text.size() : end + 1;
    if (line.empty() || line[0] == '#') continue;
    PromSample s;
    std::size_t i = line.find_first_of("{ ");
    s.name = line.substr(0, i);
    if (i != std::string::npos && line[i] == '{') {
      ++i;
      while (line[i] != '}') {
        const std::size_t eq = line.find("=\"", i);
        std::string key = line.substr(i, eq - i);
        std::string value;
        std::size_t j = eq + 2;
        for (; line[j] != '"'; ++j) {
          if (line[j] == '\\') ++j;
          value += line[j];
        }
        s.labels[key] = value;
        i = line[j + 1] == ',' ? j + 2 : j + 1;
      }
      ++i;
    }
    if (i == std::string::npos || line[i] != ' ') {
      ADD_FAILURE() << "not a sample line: " << line;
      continue;
    }
    s.value = line.substr(i + 1);
    out.push_back(std::move(s));
  }
  return out;
}

// The sum of a metric's samples whose labels include `match` (every engine's, by default).
inline double metric_total(const std::vector<PromSample>& samples, const std::string& name,
                           const std::map<std::string, std::string>& match = {}) {
  double total = 0;
  bool found = false;
  for (const PromSample& s : samples) {
    if (s.name != name) continue;
    bool matches = true;
    for (const auto& [k, v] : match) matches = matches && s.labels.contains(k) && s.labels.at(k) == v;
    if (!matches) continue;
    found = true;
    total += s.number();
  }
  if (!found) ADD_FAILURE() << name << " is not in the scrape";
  return total;
}

inline double metric_total(const std::string& text, const std::string& name,
                           const std::map<std::string, std::string>& match = {}) {
  return metric_total(parse_prometheus(text), name, match);
}

}  // namespace nvl::live_test
