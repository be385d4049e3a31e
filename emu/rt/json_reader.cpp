#include "emu/rt/json_reader.h"

#include <cmath>
#include <fstream>
#include <sstream>

#include "emu/rt/errors.h"

namespace nvl::rt {

namespace {
std::string range_text(double min, double max) {
  std::ostringstream os;
  os << "[" << min << ", ";
  if (max >= 1e300) {
    os << "inf)";
  } else {
    os << max << "]";
  }
  return os.str();
}
}  // namespace

JsonReader::JsonReader(const nlohmann::json& object, std::string file, std::string path)
    : object_(&object), file_(std::move(file)), path_(std::move(path)) {
  if (!object_->is_object()) throw InputError(file_, path_.empty() ? "(top)" : path_, "expected an object");
}

nlohmann::json JsonReader::parse_file(const std::filesystem::path& file) {
  std::ifstream in(file);
  if (!in) throw InputError(file.string(), "", "cannot open the file");
  std::stringstream text;
  text << in.rdbuf();
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text.str());
  } catch (const nlohmann::json::parse_error& e) {
    throw InputError(file.string(), "", std::string("not valid JSON: ") + e.what());
  }
  if (!j.is_object()) throw InputError(file.string(), "(top)", "expected an object");
  return j;
}

std::string JsonReader::where(std::string_view key) const {
  return path_.empty() ? std::string(key) : path_ + "." + std::string(key);
}

void JsonReader::fail(std::string_view key, const std::string& problem) const {
  throw InputError(file_, where(key), problem);
}

bool JsonReader::has(std::string_view key) const { return object_->contains(std::string(key)); }

const nlohmann::json& JsonReader::get(std::string_view key) {
  const auto it = object_->find(std::string(key));
  if (it == object_->end()) fail(key, "missing key");
  read_.emplace(key);
  return *it;
}

std::string JsonReader::string(std::string_view key) {
  const auto& v = get(key);
  if (!v.is_string()) fail(key, "expected a string, got " + v.dump());
  return v.get<std::string>();
}

bool JsonReader::boolean(std::string_view key) {
  const auto& v = get(key);
  if (!v.is_boolean()) fail(key, "expected true or false, got " + v.dump());
  return v.get<bool>();
}

std::int64_t JsonReader::integer(std::string_view key, std::int64_t min, std::int64_t max) {
  const auto& v = get(key);
  const std::string expected = "expected an integer in " + range_text(static_cast<double>(min),
                                                                      max == INT64_MAX ? 1e300 : static_cast<double>(max));
  if (!v.is_number_integer()) fail(key, expected + ", got " + v.dump());
  const auto n = v.get<std::int64_t>();
  if (n < min || n > max) fail(key, expected + ", got " + v.dump());
  return n;
}

double JsonReader::number(std::string_view key, double min, double max) {
  const auto& v = get(key);
  const std::string expected = "expected a number in " + range_text(min, max);
  if (!v.is_number()) fail(key, expected + ", got " + v.dump());
  const double x = v.get<double>();
  if (!std::isfinite(x) || x < min || x > max) fail(key, expected + ", got " + v.dump());
  return x;
}

double JsonReader::sourced(std::string_view key, double min, double max) {
  JsonReader o = object(key);
  const double x = o.number("value", min, max);
  if (o.string("source").empty()) o.fail("source", "expected a non-empty string naming where the number comes from");
  o.finish();
  return x;
}

Duration JsonReader::sourced_ns(std::string_view key) { return from_seconds(sourced(key) * 1e-9); }

JsonReader JsonReader::object(std::string_view key) {
  const auto& v = get(key);
  if (!v.is_object()) fail(key, "expected an object, got " + v.dump());
  return JsonReader(v, file_, where(key));
}

std::vector<JsonReader> JsonReader::objects(std::string_view key) {
  const auto& v = get(key);
  if (!v.is_array()) fail(key, "expected an array of objects");
  std::vector<JsonReader> out;
  out.reserve(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) out.emplace_back(v[i], file_, where(key) + "[" + std::to_string(i) + "]");
  return out;
}

void JsonReader::finish() const {
  for (const auto& [key, value] : object_->items()) {
    if (!read_.contains(key)) fail(key, "unknown key");
  }
}

}  // namespace nvl::rt
