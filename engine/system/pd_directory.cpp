#include "engine/system/pd_directory.h"

#include "engine/system/decode_instance_process.h"
#include "engine/system/prefill_instance_process.h"

namespace nvl::engine {

std::int32_t PdDirectory::live_ranks() const {
  std::int32_t live = 0;
  for (const DecodeInstanceProcess* d : decode) live += d->group().live_ranks();
  return live;
}

PrefillInstanceProcess* PdDirectory::moving(RequestId id) const {
  for (PrefillInstanceProcess* p : prefill) {
    if (p->moving(id)) return p;
  }
  return nullptr;
}

void end_request(ControlPlane& control, const PdDirectory& dir, hal::Address from, RequestId id, const std::string& why) {
  proto::ControlMessage m;
  proto::TokenChunk& c = *m.mutable_tokens();
  c.set_request_id(id);
  c.set_finished(true);
  c.set_finish_reason(why);
  control.send(from, dir.frontend, std::move(m));
}

}  // namespace nvl::engine
