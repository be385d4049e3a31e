#pragma once
// Cuts an answer at the first of its stop sequences, as OpenAI's API does (the stop sequence itself is
// not part of the answer). Text is handed in as it is generated and what may be sent is handed back,
// holding back a tail that could still be the start of a stop sequence (vLLM holds back the same).
#include <string>
#include <string_view>
#include <vector>

namespace nvl::emu::live {

class StopMatcher {
 public:
  explicit StopMatcher(std::vector<std::string> stops);
  // Appends `text`; returns what can be sent now. Once a stop sequence matched, stopped() is true and
  // nothing more is returned.
  std::string feed(std::string_view text);
  // The held-back tail, when the generation ends without a stop sequence.
  std::string flush();
  bool stopped() const { return stopped_; }

 private:
  std::vector<std::string> stops_;
  std::size_t hold_ = 0;  // the longest stop sequence's length less one
  std::string pending_;   // generated, not yet sent
  bool stopped_ = false;
};

}  // namespace nvl::emu::live
