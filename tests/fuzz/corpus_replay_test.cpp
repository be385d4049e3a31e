// Replays the fuzz seed corpus through the fuzzers' own entry points, in the normal build (no libFuzzer):
// every real sample (valid-*) loads, every input a fuzzer once crashed on (bad-*) is now an InputError,
// and nothing escapes as another exception.
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

#include <gtest/gtest.h>

#include "fuzz/parser_inputs.h"

namespace nvl::fuzz {
namespace corpus_replay_test {

struct Parser {
  const char* name;  // its corpus folder: fuzz/corpus/<name>/
  bool (*input)(std::span<const std::uint8_t>);
};
constexpr Parser kParsers[] = {{"scenario", scenario_input},
                               {"mooncake", mooncake_input},
                               {"azure", azure_input},
                               {"claude_code", claude_code_input},
                               {"model_profile", model_profile_input}};

std::vector<std::uint8_t> read_bytes(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

TEST(FuzzCorpus, EveryParserHasSeedsAndEachReplaysAsExpected) {
  for (const Parser& parser : kParsers) {
    const auto dir = std::filesystem::path(NVL_FUZZ_CORPUS_DIR) / parser.name;
    int valid = 0;
    for (const auto& entry : std::filesystem::directory_iterator(dir)) {
      const std::string name = entry.path().filename().string();
      const auto bytes = read_bytes(entry.path());
      bool loaded = false;
      ASSERT_NO_THROW(loaded = parser.input(bytes)) << parser.name << "/" << name;
      if (name.starts_with("valid-")) {
        EXPECT_TRUE(loaded) << parser.name << "/" << name << " is a real file and must load";
        ++valid;
      } else if (name.starts_with("bad-")) {
        EXPECT_FALSE(loaded) << parser.name << "/" << name << " must be an InputError";
      }
    }
    EXPECT_GE(valid, 1) << "no valid seed for " << parser.name;
  }
}

TEST(FuzzCorpus, GarbageIsAnInputErrorForEveryParser) {
  const std::string garbage = "\x01\xff{[,\"";
  const std::vector<std::uint8_t> bytes(garbage.begin(), garbage.end());
  for (const Parser& parser : kParsers) {
    EXPECT_FALSE(parser.input(bytes)) << parser.name;
    EXPECT_FALSE(parser.input({})) << parser.name << " (empty)";
  }
}

}  // namespace corpus_replay_test
}  // namespace nvl::fuzz
