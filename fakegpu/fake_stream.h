#pragma once
// An emulated stream: an in-order queue of device work driven by runtime callbacks (no fiber).
// Kernels and graph segments run on the device's ComputeEngine; copies go to the device's transfer
// path; collectives to their CommGroup. When a fault drains the stream, every queued operation
// fails (each one logged) and late completions of the old work are ignored (by epoch).
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "emu/rt/condition.h"
#include "engine/hal/stream.h"
#include "fakegpu/compute_engine.h"
#include "fakegpu/fake_event.h"
#include "fakegpu/fake_graph_exec.h"
#include "fakegpu/transfer_path.h"

namespace nvl::fakegpu {

class FakeDevice;

class FakeStream final : public hal::Stream, private ComputeClient {
 public:
  FakeStream(FakeDevice& device, std::string name, double sm_fraction);
  // Takes a running kernel off the device; completions still in flight elsewhere (a collective, a
  // copy) must not arrive after the device is gone.
  ~FakeStream() override;

  const std::string& name() const override { return name_; }
  hal::DeviceId device() const override;
  double sm_fraction() const override { return sm_fraction_; }

  void launch(const hal::KernelDesc& kernel) override;
  void launch(std::shared_ptr<const hal::GraphExec> graph) override;
  void copy(const hal::Buffer& dst, std::uint64_t dst_offset_bytes, const hal::Buffer& src,
            std::uint64_t src_offset_bytes, std::uint64_t bytes) override;
  void record(hal::GpuEvent& event) override;
  void wait(hal::GpuEvent& event) override;
  void add_callback(hal::HostCallback fn) override;
  void synchronize() override;
  bool idle() const override { return queue_.empty(); }

  // From now on this stream's kernels take turns with `other`'s (hal::Device::create_stream_taking_turns).
  void take_turns_with(FakeStream& other) { job_.take_turns_with(other.job_); }
  // The device's fault: the running operation and everything queued fail with `xid`.
  void drain(hal::Xid xid, const std::string& reason);
  // From FakeEvent: a waited-for generation completed.
  void on_event_reached(std::uint64_t epoch, const hal::HalError* error);

 private:
  enum class OpKind : std::uint8_t { kernel, graph, copy, record, wait, callback };
  struct Op {
    OpKind kind = OpKind::kernel;
    std::string name;  // for errors and the event log (a graph's is its layout's: name_of)
    KernelCost cost;
    std::shared_ptr<const GraphLayout> graph;  // the launched exec's layout at launch
    TransferRequest transfer;
    std::shared_ptr<FakeEvent> event;
    std::uint64_t generation = 0;
    hal::HostCallback callback;
  };

  static const std::string& name_of(const Op& op);
  // A record or wait on `event`, checked (an event of another kind of device is std::invalid_argument).
  Op event_op(OpKind kind, hal::GpuEvent& event);
  void enqueue(Op op);
  void pump();
  void start_front();
  void run_segment();
  void on_compute_done(ComputeJob& job) override;
  void on_async_done(std::uint64_t epoch, const hal::HalError* error);
  // The running graph's segment is done, its collective and the kernels beside it: the next one starts.
  void segment_done();
  // Tells the device's detail observer of the running graph's kernels [first, end), which ran from
  // `from` to now, each its share of that time by its priced time alone; and of one part that did.
  void observe_kernels(std::size_t first, std::size_t end, rt::Time from) const;
  void observe_part(std::string_view name, rt::Time from, std::uint64_t bytes, bool ok) const;
  // One group let the running graph's fast-forwarded tail go on (or failed it).
  void on_tail_done(std::uint64_t epoch, const hal::HalError* error);
  // The front operation is done (error: it failed); the next one starts.
  void finish_front(const hal::HalError* error);
  void note_failure(const Op& op, const hal::HalError& error);
  void fail(Op& op, const hal::HalError& error);

  FakeDevice& device_;
  std::string name_;
  double sm_fraction_;
  std::deque<Op> queue_;  // the front is the running operation while busy_
  bool busy_ = false;
  bool pumping_ = false;
  std::uint64_t epoch_ = 0;  // bumped by drain(): completions of older work are stale
  std::size_t segment_ = 0;  // the running graph's segment
  rt::Time period_start_;    // when the running graph's repeated body finished its first iteration
  rt::Duration period_busy_start_;  // the device's compute busy time then
  std::vector<rt::Time> arrived_;   // per segment of the running graph: when it arrived at its collective
  std::size_t tail_waits_ = 0;      // groups still holding the tail back
  std::optional<hal::HalError> tail_error_;  // the first group that failed it
  rt::Time op_start_;        // when the running operation started (for the device's span observer)
  rt::Time segment_start_;   // when the running segment's kernels started (for the detail observer)
  rt::Time tail_start_;      // when the running fast-forwarded tail started (for the detail observer)
  ComputeJob job_;
  ComputeJob beside_job_;              // the kernels beside the running segment's collective
  bool beside_running_ = false;
  bool collective_running_ = false;
  std::optional<hal::HalError> error_;  // first failure since the last synchronize()
  rt::Condition idle_cond_;
};

}  // namespace nvl::fakegpu
