#include "fakegpu/json_reader.h"

#include <cmath>
#include <fstream>

#include "emu/rt/errors.h"

namespace nvl::fakegpu {

std::string key_path(const std::string& path, std::string_view key) {
  return path.empty() ? std::string(key) : path + "." + std::string(key);
}

namespace {
std::string type_name(const nlohmann::json& j) { return j.type_name(); }

std::string list(std::initializer_list<std::string_view> keys) {
  std::string out;
  for (auto k : keys) out += (out.empty() ? "" : ", ") + std::string(k);
  return out;
}
}  // namespace

JsonReader::JsonReader(const std::filesystem::path& file) : file_(file.string()) {
  std::ifstream in(file);
  if (!in) throw rt::InputError(file_, "", "cannot open the profile file");
  try {
    root_ = nlohmann::json::parse(in);
  } catch (const nlohmann::json::parse_error& e) {
    throw rt::InputError(file_, "", std::string("not valid JSON: ") + e.what());
  }
}

void JsonReader::fail(const std::string& path, const std::string& problem) const {
  throw rt::InputError(file_, path.empty() ? "(top level)" : path, problem);
}

void JsonReader::expect_keys(const nlohmann::json& j, const std::string& path,
                             std::initializer_list<std::string_view> required,
                             std::initializer_list<std::string_view> optional) const {
  if (!j.is_object()) fail(path, "expected an object, found " + type_name(j));
  for (auto k : required) {
    if (!j.contains(k)) fail(key_path(path, k), "missing key (expected keys: " + list(required) + ")");
  }
  for (const auto& [k, v] : j.items()) {
    bool known = false;
    for (auto r : required) known = known || r == k;
    for (auto o : optional) known = known || o == k;
    if (!known) {
      std::string allowed = list(required);
      if (optional.size() > 0) allowed += ", optionally " + list(optional);
      fail(key_path(path, k), "unknown key (allowed: " + allowed + ")");
    }
  }
}

std::string JsonReader::string(const nlohmann::json& obj, const std::string& path, const std::string& key) const {
  const auto& v = obj.at(key);
  if (!v.is_string()) fail(key_path(path, key), "expected a string, found " + type_name(v));
  const auto s = v.get<std::string>();
  if (s.empty()) fail(key_path(path, key), "expected a non-empty string");
  return s;
}

double JsonReader::sourced(const nlohmann::json& obj, const std::string& path, const std::string& key,
                           NumberRule rule) const {
  const std::string at = key_path(path, key);
  const auto& v = obj.at(key);
  expect_keys(v, at, {"value", "source"});
  const auto& n = v.at("value");
  if (!n.is_number()) fail(key_path(at, "value"), "expected a number, found " + type_name(n));
  string(v, at, "source");
  const double x = n.get<double>();
  const std::string where = key_path(at, "value");
  if (!std::isfinite(x)) fail(where, "expected a finite number");
  switch (rule) {
    case NumberRule::non_negative:
      if (x < 0) fail(where, "expected a number >= 0, found " + n.dump());
      break;
    case NumberRule::positive:
      if (x <= 0) fail(where, "expected a number > 0, found " + n.dump());
      break;
    case NumberRule::fraction:
      if (x <= 0 || x > 1) fail(where, "expected a fraction in (0, 1], found " + n.dump());
      break;
    case NumberRule::positive_integer:
      if (x < 1 || x != std::floor(x)) fail(where, "expected a whole number >= 1, found " + n.dump());
      break;
  }
  return x;
}

}  // namespace nvl::fakegpu
