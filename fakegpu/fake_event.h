#pragma once
// An emulated GPU event. Each record() enqueued takes the next generation number; a wait() waits
// for the generation recorded last before it. Completions release waiting streams (through
// callbacks, no fiber) and waiting fibers (through a Condition).
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "emu/rt/condition.h"
#include "engine/hal/gpu_event.h"
#include "engine/hal/hal_error.h"

namespace nvl::fakegpu {

class FakeStream;

class FakeEvent final : public hal::GpuEvent, public std::enable_shared_from_this<FakeEvent> {
 public:
  FakeEvent(rt::Runtime& rt, std::string name) : rt_(rt), name_(std::move(name)), cond_(rt, "event '" + name_ + "'") {}

  const std::string& name() const override { return name_; }
  bool query() const override { return completed_ >= recorded_; }
  void synchronize() override;
  std::optional<rt::Time> completed_at() const override { return completed_at_; }

  // A stream enqueues a record: the generation it will complete.
  std::uint64_t next_generation() { return ++recorded_; }
  std::uint64_t recorded_generation() const { return recorded_; }
  bool reached(std::uint64_t generation) const { return completed_ >= generation; }
  // The stream reached (or failed) the record of `generation`.
  void complete(std::uint64_t generation, const hal::HalError* error);
  // `stream` resumes (stream->on_event_reached) once `generation` completes.
  void add_waiter(std::uint64_t generation, FakeStream& stream, std::uint64_t stream_epoch);
  // The error of the latest completion, if it failed.
  const hal::HalError* error() const { return error_ ? &*error_ : nullptr; }

 private:
  struct Waiter {
    std::uint64_t generation;
    FakeStream* stream;
    std::uint64_t epoch;
  };

  rt::Runtime& rt_;
  std::string name_;
  rt::Condition cond_;
  std::uint64_t recorded_ = 0;
  std::uint64_t completed_ = 0;
  std::optional<rt::Time> completed_at_;
  std::optional<hal::HalError> error_;
  std::vector<Waiter> waiters_;
};

}  // namespace nvl::fakegpu
