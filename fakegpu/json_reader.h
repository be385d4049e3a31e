#pragma once
// Strict reading of profile files: every object has exactly the keys the schema names, every number
// is {"value": x, "source": "..."}, and any problem is an rt::InputError naming the file, the key
// path and what was expected.
#include <filesystem>
#include <initializer_list>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace nvl::fakegpu {

// What a sourced number must be.
enum class NumberRule { non_negative, positive, fraction, positive_integer };

class JsonReader {
 public:
  // Reads and parses the file (InputError when it cannot be opened or is not JSON).
  explicit JsonReader(const std::filesystem::path& file);

  const nlohmann::json& root() const { return root_; }
  const std::string& file() const { return file_; }

  // `j` (at `path`) must be an object with every key of `required` and no key outside `required`
  // and `optional`.
  void expect_keys(const nlohmann::json& j, const std::string& path, std::initializer_list<std::string_view> required,
                   std::initializer_list<std::string_view> optional = {}) const;
  std::string string(const nlohmann::json& obj, const std::string& path, const std::string& key) const;
  // obj[key] must be {"value": number, "source": non-empty string} and the number must obey `rule`.
  double sourced(const nlohmann::json& obj, const std::string& path, const std::string& key, NumberRule rule) const;

  [[noreturn]] void fail(const std::string& path, const std::string& problem) const;

 private:
  std::string file_;
  nlohmann::json root_;
};

// "a.b" from "a" and "b"; "b" at the root.
std::string key_path(const std::string& path, std::string_view key);

}  // namespace nvl::fakegpu
