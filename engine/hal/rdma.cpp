#include "engine/hal/rdma.h"

#include <optional>

#include "emu/rt/event.h"

namespace nvl::hal {

namespace {
// Waits on an Event the completion sets; keeps the error (HalError is copyable) to rethrow in the fiber.
template <class Start>
void await_completion(rt::Runtime& rt, const std::string& what, Start start) {
  rt::Event done(rt, "rdma " + what);
  std::optional<HalError> failure;
  start([&](const HalError* error) {
    if (error != nullptr) failure.emplace(*error);
    done.set();
  });
  done.wait();
  if (failure) throw *failure;
}
}  // namespace

void Rdma::write_wait(const RdmaOp& op) {
  await_completion(runtime(), "write " + op.name, [&](RdmaDone cb) { write(op, std::move(cb)); });
}

void Rdma::read_wait(const RdmaOp& op) {
  await_completion(runtime(), "read " + op.name, [&](RdmaDone cb) { read(op, std::move(cb)); });
}

}  // namespace nvl::hal
