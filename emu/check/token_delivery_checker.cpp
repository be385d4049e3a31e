#include "emu/check/token_delivery_checker.h"

namespace nvl::emu {

namespace {
std::string req(engine::RequestId id) { return "request " + std::to_string(id); }
}  // namespace

void TokenDeliveryChecker::on_submit(const engine::RequestState& r) {
  streams_[r.id] = Stream{r.max_output_tokens, 0, false, false};
}

void TokenDeliveryChecker::on_tokens(engine::RequestId id, std::int64_t count, bool first, bool finished) {
  const auto it = streams_.find(id);
  if (it == streams_.end()) {
    violations_.add(req(id) + ": " + std::to_string(count) + " tokens delivered while it is not in flight");
    return;
  }
  Stream& s = it->second;
  tokens_ += static_cast<std::uint64_t>(std::max<std::int64_t>(count, 0));
  if (count < 1) violations_.add(req(id) + ": a delivery of " + std::to_string(count) + " tokens");
  if (s.finished) violations_.add(req(id) + ": tokens delivered after its finishing delivery");
  if (first && s.first_seen) violations_.add(req(id) + ": the first token delivered twice");
  if (!first && !s.first_seen) violations_.add(req(id) + ": tokens delivered before its first token");
  s.first_seen = s.first_seen || first;
  s.finished = s.finished || finished;
  s.delivered += count;
  if (s.delivered > s.max_output_tokens) {
    violations_.add(req(id) + ": " + std::to_string(s.delivered) + " tokens delivered, more than its max_output_tokens " +
                    std::to_string(s.max_output_tokens));
  }
}

void TokenDeliveryChecker::on_done(const engine::RequestTiming& t) {
  const auto it = streams_.find(t.id);
  if (it == streams_.end()) return;  // unknown requests are the accounting checker's
  const Stream s = it->second;
  streams_.erase(it);
  if (!t.failure.empty()) return;  // a failed request may stop anywhere
  ++checked_;
  if (!s.finished) violations_.add(req(t.id) + ": completed without a finishing delivery");
  if (s.delivered != t.output_tokens) {
    violations_.add(req(t.id) + ": " + std::to_string(s.delivered) + " tokens delivered, its timing reports " +
                    std::to_string(t.output_tokens));
  }
}

CheckResult TokenDeliveryChecker::finish(const RunEnd&) {
  return violations_.result(std::to_string(tokens_) + " tokens delivered once and in order; " +
                            std::to_string(checked_) + " completed streams match their timings");
}

}  // namespace nvl::emu
