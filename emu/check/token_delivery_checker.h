#pragma once
// "tokens_once_in_order": per request, the delivery that carries the first token comes once and
// before any other, the one that finishes it comes once and last, every delivery carries at least
// one token, the counts never exceed max_output_tokens, and a completed request received exactly the
// output tokens its timing reports. State is kept only for requests in flight.
#include <cstdint>
#include <unordered_map>

#include "emu/check/run_checker.h"
#include "emu/check/violations.h"

namespace nvl::emu {

class TokenDeliveryChecker final : public RunChecker {
 public:
  std::string name() const override { return "tokens_once_in_order"; }
  void on_submit(const engine::RequestState& r) override;
  void on_tokens(engine::RequestId id, std::int64_t count, bool first, bool finished) override;
  void on_done(const engine::RequestTiming& t) override;
  CheckResult finish(const RunEnd& end) override;

 private:
  struct Stream {
    std::int64_t max_output_tokens = 0;
    std::int64_t delivered = 0;
    bool first_seen = false;
    bool finished = false;
  };
  std::unordered_map<engine::RequestId, Stream> streams_;
  std::uint64_t tokens_ = 0;
  std::uint64_t checked_ = 0;
  Violations violations_;
};

}  // namespace nvl::emu
