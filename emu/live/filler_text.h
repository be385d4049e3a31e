#pragma once
// The text live mode answers with: deterministic filler words, one word per output token, drawn from a
// stream seeded by the server's seed and the prompt's text, so the same prompt on the same seed always
// gets the same answer (and different prompts get different ones).
#include <cstdint>
#include <string>
#include <string_view>

namespace nvl::emu::live {

class FillerText {
 public:
  FillerText(std::uint64_t seed, std::string_view prompt);
  // Tokens [first, first + count) of the answer, each a word followed by a space.
  std::string tokens(std::int64_t first, std::int64_t count) const;

 private:
  std::uint64_t key_;
};

}  // namespace nvl::emu::live
