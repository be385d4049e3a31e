#include "emu/scenario/workload_driver.h"

#include <algorithm>

#include "emu/workload/reblock.h"

namespace nvl::emu {

engine::RequestState WorkloadDriver::make_request(const Session& session, const Request& req) {
  engine::RequestState r;
  r.id = static_cast<engine::RequestId>(next_id_++);
  r.arrival = rt_.now();
  r.prompt_tokens = req.prompt_tokens;
  r.max_output_tokens = std::max<std::int64_t>(1, req.output_tokens);  // every call yields its first token
  const auto hashes = reblock(req.block_hashes.ids(), req.prompt_tokens, session.block_size_tokens,
                              static_cast<std::int32_t>(kv_block_tokens_));
  r.prompt_hashes.assign(hashes.begin(), hashes.end());
  return r;
}

void WorkloadDriver::send(engine::RequestState r) {
  if (on_submit_) on_submit_(r);
  submitter_(std::move(r));
}

}  // namespace nvl::emu
