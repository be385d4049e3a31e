#include "emu/rt/json_reader.h"

#include <cmath>
#include <fstream>
#include <set>
#include <sstream>
#include <vector>

#include "emu/rt/errors.h"

namespace nvl::rt {

namespace {

std::string expectation(NumberRule rule) {
  switch (rule) {
    case NumberRule::any: return "expected a number";
    case NumberRule::non_negative: return "expected a number >= 0";
    case NumberRule::positive: return "expected a number > 0";
    case NumberRule::fraction: return "expected a fraction in (0, 1]";
    case NumberRule::positive_whole: return "expected a whole number >= 1";
  }
  return "expected a number";
}

bool obeys(double x, NumberRule rule) {
  switch (rule) {
    case NumberRule::any: return true;
    case NumberRule::non_negative: return x >= 0;
    case NumberRule::positive: return x > 0;
    case NumberRule::fraction: return x > 0 && x <= 1;
    case NumberRule::positive_whole: return x >= 1 && x == std::floor(x);
  }
  return false;
}

std::string found(const nlohmann::json& v) {
  if (v.is_number()) return ", found " + v.dump();
  return std::string(", found ") + v.type_name() + " " + v.dump();
}

// Refuses a key given twice in one object: JSON parsers keep only one of them (nlohmann the last), so
// the first would be dropped without a word. Tracks where the parser is, to name the key's path.
class DuplicateKeyGuard {
 public:
  explicit DuplicateKeyGuard(std::string file) : file_(std::move(file)) {}

  bool operator()(int /*depth*/, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
    using Event = nlohmann::json::parse_event_t;
    switch (event) {
      case Event::object_start: frames_.emplace_back(true); break;
      case Event::array_start: frames_.emplace_back(false); break;
      case Event::key: {
        Frame& f = frames_.back();
        f.key = parsed.get<std::string>();
        if (!f.keys.insert(f.key).second) {
          throw InputError(file_, path(), "duplicate key (only one of them would be read)");
        }
        break;
      }
      case Event::object_end:
      case Event::array_end:
        frames_.pop_back();
        element_done();
        break;
      case Event::value: element_done(); break;
    }
    return true;
  }

 private:
  struct Frame {
    explicit Frame(bool is_object) : object(is_object) {}
    bool object;
    std::set<std::string> keys;
    std::string key;         // the object's current key
    std::size_t element = 0;  // the array's current element
  };

  void element_done() {
    if (!frames_.empty() && !frames_.back().object) ++frames_.back().element;
  }

  std::string path() const {
    std::string p;
    for (const Frame& f : frames_) {
      if (f.object) {
        p += (p.empty() ? "" : ".") + f.key;
      } else {
        p += "[" + std::to_string(f.element) + "]";
      }
    }
    return p;
  }

  std::string file_;
  std::vector<Frame> frames_;
};

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
    j = nlohmann::json::parse(text.str(), DuplicateKeyGuard(file.string()));
  } catch (const nlohmann::json::exception& e) {  // a syntax error, or a number too large for a double (406)
    throw InputError(file.string(), "", std::string("not valid JSON: ") + e.what());
  }
  if (!j.is_object()) throw InputError(file.string(), "(top)", "expected an object");
  return j;
}

std::string JsonReader::where(std::string_view key) const {
  if (path_.empty()) return std::string(key);
  const char* join = path_.rfind("line ", 0) == 0 ? ": " : ".";
  return path_ + join + std::string(key);
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
  if (!v.is_string()) fail(key, "expected a string" + found(v));
  return v.get<std::string>();
}

bool JsonReader::boolean(std::string_view key) {
  const auto& v = get(key);
  if (!v.is_boolean()) fail(key, "expected true or false" + found(v));
  return v.get<bool>();
}

std::int64_t JsonReader::integer(std::string_view key, std::int64_t min, std::int64_t max) {
  const auto& v = get(key);
  std::string expected = "expected an integer in [" + std::to_string(min) + ", ";
  expected += max == INT64_MAX ? "inf)" : std::to_string(max) + "]";
  if (!v.is_number_integer()) fail(key, expected + found(v));
  const auto n = v.get<std::int64_t>();
  if (n < min || n > max) fail(key, expected + found(v));
  return n;
}

double JsonReader::number(std::string_view key, NumberRule rule) {
  const auto& v = get(key);
  if (!v.is_number()) fail(key, expectation(rule) + found(v));
  const double x = v.get<double>();
  if (!std::isfinite(x) || !obeys(x, rule)) fail(key, expectation(rule) + found(v));
  return x;
}

double JsonReader::seconds(std::string_view key, NumberRule rule) {
  const double x = number(key, rule);
  if (x > kMaxSeconds) fail(key, "at most a year (31536000 s), found " + get(key).dump());
  return x;
}

double JsonReader::sourced(std::string_view key, NumberRule rule) {
  JsonReader o = object(key);
  const double x = o.number("value", rule);
  if (o.string("source").empty()) o.fail("source", "expected a non-empty string naming where the number comes from");
  o.finish();
  return x;
}

Duration JsonReader::sourced_ns(std::string_view key) {
  const double ns = sourced(key);
  if (ns > 9e18) fail(std::string(key) + ".value", "expected a duration in nanoseconds below 9e18");
  return from_seconds(ns * 1e-9);
}

JsonReader JsonReader::object(std::string_view key) {
  const auto& v = get(key);
  if (!v.is_object()) fail(key, "expected an object" + found(v));
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

const nlohmann::json& JsonReader::array(std::string_view key) {
  const auto& v = get(key);
  if (!v.is_array()) fail(key, "expected an array" + found(v));
  return v;
}

std::vector<std::uint64_t> JsonReader::unsigned_list(std::string_view key) {
  const auto& v = array(key);
  std::vector<std::uint64_t> out;
  out.reserve(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) {
    const auto& x = v[i];
    if (!x.is_number_integer() || (!x.is_number_unsigned() && x.get<std::int64_t>() < 0)) {
      fail(std::string(key) + "[" + std::to_string(i) + "]", "expected a non-negative integer" + found(x));
    }
    out.push_back(x.get<std::uint64_t>());
  }
  return out;
}

std::vector<std::string> JsonReader::keys() const {
  std::vector<std::string> out;
  for (const auto& [key, value] : object_->items()) out.push_back(key);
  return out;
}

void JsonReader::finish() const {
  for (const auto& [key, value] : object_->items()) {
    if (!read_.contains(key)) fail(key, "unknown key");
  }
}

}  // namespace nvl::rt
