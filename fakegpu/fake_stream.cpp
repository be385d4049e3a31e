#include "fakegpu/fake_stream.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>
#include <string>
#include <utility>

#include "fakegpu/fake_device.h"

namespace nvl::fakegpu {

FakeStream::FakeStream(FakeDevice& device, std::string name, double sm_fraction)
    : device_(device),
      name_(std::move(name)),
      sm_fraction_(sm_fraction),
      job_(*this, sm_fraction),
      beside_job_(*this, sm_fraction),
      idle_cond_(device.runtime(), "stream '" + name_ + "' of " + device.source()) {}

FakeStream::~FakeStream() {
  device_.compute().cancel(job_);
  device_.compute().cancel(beside_job_);
}

hal::DeviceId FakeStream::device() const { return device_.id(); }

void FakeStream::launch(const hal::KernelDesc& kernel) {
  device_.check_usable("launch", kernel.name);
  Op op;
  op.kind = OpKind::kernel;
  op.cost = device_.cost_model().cost(kernel, device_.profile().kernel_launch);
  op.name = kernel.name;
  const double ns = price_ns(op.cost, RunShares{});
  device_.count_priced(op.cost, ns);
  enqueue(std::move(op));
}

void FakeStream::launch(std::shared_ptr<const hal::GraphExec> graph) {
  const auto* exec = dynamic_cast<const FakeGraphExec*>(graph.get());
  if (exec == nullptr || exec->device() != device_.id()) {
    throw std::invalid_argument("stream '" + name_ + "' of " + device_.source() + ": graph '" +
                                (graph ? graph->name() : std::string("(null)")) +
                                "' was not instantiated for this device");
  }
  device_.check_usable("launch graph", exec->name());
  Op op;
  op.kind = OpKind::graph;
  op.graph = exec->layout();
  device_.count_priced(op.graph->priced());
  enqueue(std::move(op));
}

void FakeStream::copy(const hal::Buffer& dst, std::uint64_t dst_offset_bytes, const hal::Buffer& src,
                      std::uint64_t src_offset_bytes, std::uint64_t bytes) {
  const std::string what = "copy on stream '" + name_ + "' of " + device_.source();
  if (!dst || !src) throw std::invalid_argument(what + ": empty buffer");
  if (dst_offset_bytes > dst.bytes() || bytes > dst.bytes() - dst_offset_bytes) {
    throw std::out_of_range(what + ": destination range [" + std::to_string(dst_offset_bytes) + ", +" +
                            std::to_string(bytes) + ") lies outside its " + std::to_string(dst.bytes()) + " bytes");
  }
  if (src_offset_bytes > src.bytes() || bytes > src.bytes() - src_offset_bytes) {
    throw std::out_of_range(what + ": source range [" + std::to_string(src_offset_bytes) + ", +" +
                            std::to_string(bytes) + ") lies outside its " + std::to_string(src.bytes()) + " bytes");
  }
  const hal::MemoryLocation here{hal::MemoryKind::device, device_.id()};
  if (!(src.location() == here) && !(dst.location() == here)) {
    throw std::invalid_argument(what + ": neither side is this stream's device");
  }
  device_.check_usable("copy");
  Op op;
  op.kind = OpKind::copy;
  op.name = "copy of " + std::to_string(bytes) + " bytes";
  op.transfer = TransferRequest{src.location(), dst.location(), bytes, device_.id()};
  enqueue(std::move(op));
}

FakeStream::Op FakeStream::event_op(OpKind kind, hal::GpuEvent& event) {
  auto* fake = dynamic_cast<FakeEvent*>(&event);
  if (fake == nullptr) throw std::invalid_argument("stream '" + name_ + "': event '" + event.name() + "' is not emulated");
  const bool record = kind == OpKind::record;
  Op op;
  op.kind = kind;
  op.name = std::string(record ? "record" : "wait") + " event '" + event.name() + "'";
  device_.check_usable(op.name);
  op.event = fake->shared_from_this();
  // A record makes the next generation; a wait is for the latest one recorded.
  op.generation = record ? fake->next_generation() : fake->recorded_generation();
  return op;
}

void FakeStream::record(hal::GpuEvent& event) { enqueue(event_op(OpKind::record, event)); }

void FakeStream::wait(hal::GpuEvent& event) { enqueue(event_op(OpKind::wait, event)); }

void FakeStream::add_callback(hal::HostCallback fn) {
  device_.check_usable("host callback");
  Op op;
  op.kind = OpKind::callback;
  op.name = "host callback";
  op.callback = std::move(fn);
  enqueue(std::move(op));
}

void FakeStream::synchronize() {
  idle_cond_.wait([this] { return queue_.empty(); });
  if (error_) {
    hal::HalError e = std::move(*error_);
    error_.reset();
    throw e;
  }
}

const std::string& FakeStream::name_of(const Op& op) {
  return op.kind == OpKind::graph ? op.graph->launch_name() : op.name;
}

void FakeStream::enqueue(Op op) {
  queue_.push_back(std::move(op));
  pump();
}

void FakeStream::pump() {
  if (pumping_) return;
  pumping_ = true;
  // A host callback may throw; the stream must still run what is queued later.
  struct Reset {
    bool& flag;
    ~Reset() { flag = false; }
  } reset{pumping_};
  while (!busy_ && !queue_.empty()) start_front();
  if (queue_.empty()) idle_cond_.notify_all();
}

void FakeStream::start_front() {
  Op& op = queue_.front();
  op_start_ = device_.runtime().now();
  switch (op.kind) {
    case OpKind::kernel:
      busy_ = true;
      job_.set_work({&op.cost, 1}, nullptr);
      device_.compute().start(job_);
      return;
    case OpKind::graph:
      busy_ = true;
      segment_ = 0;
      arrived_.resize(op.graph->segments().size());
      run_segment();
      return;
    case OpKind::copy:
      busy_ = true;
      device_.transfer(op.transfer, [this, epoch = epoch_](const hal::HalError* e) { on_async_done(epoch, e); });
      return;
    case OpKind::record: {
      const auto event = std::move(op.event);
      const std::uint64_t generation = op.generation;
      queue_.pop_front();
      event->complete(generation, nullptr);
      return;
    }
    case OpKind::wait:
      if (op.event->reached(op.generation)) {
        finish_front(op.event->error());
      } else {
        busy_ = true;
        op.event->add_waiter(op.generation, *this, epoch_);
      }
      return;
    case OpKind::callback: {
      const auto fn = std::move(op.callback);
      queue_.pop_front();
      fn(error_ ? &*error_ : nullptr);
      return;
    }
  }
}

void FakeStream::observe_part(std::string_view name, rt::Time from, std::uint64_t bytes, bool ok) const {
  OpSpan span{device_.id(), name_, name, from, device_.runtime().now(), ok};
  span.bytes = bytes;
  device_.detail_observer()(span);
}

void FakeStream::observe_kernels(std::size_t first, std::size_t end, rt::Time from) const {
  if (!device_.detail_observer() || first >= end) return;
  const GraphLayout& graph = *queue_.front().graph;
  const auto costs = graph.kernels(first, end);
  const auto alone = [](const KernelCost& k) { return price_ns(k, RunShares{}); };
  double total = 0;
  for (const KernelCost& k : costs) total += alone(k);
  const std::int64_t span_ns = (device_.runtime().now() - from).ns();
  double before = 0;
  for (std::size_t i = 0; i < costs.size(); ++i) {
    // Cut at cumulative shares, so the kernels tile the segment's time without rounding gaps.
    const double share_start = total > 0 ? before / total : static_cast<double>(i) / static_cast<double>(costs.size());
    before += alone(costs[i]);
    const double share_end = total > 0 ? before / total : static_cast<double>(i + 1) / static_cast<double>(costs.size());
    const rt::Time start = from + rt::ns(std::llround(share_start * static_cast<double>(span_ns)));
    const rt::Time stop = from + rt::ns(std::llround(share_end * static_cast<double>(span_ns)));
    device_.detail_observer()(OpSpan{device_.id(), name_, graph.kernel_name(first + i), start, stop, true});
  }
}

void FakeStream::run_segment() {
  segment_start_ = device_.runtime().now();
  const GraphLayout& graph = *queue_.front().graph;
  const auto& segment = graph.segments()[segment_];
  const auto kernels = graph.kernels(segment);
  if (kernels.empty()) {
    on_compute_done(job_);  // back-to-back collectives, or nothing after the last one
    return;
  }
  job_.set_work(kernels, &segment.cache);
  device_.compute().start(job_);
}

void FakeStream::on_compute_done(ComputeJob& job) {
  if (&job == &beside_job_) {
    beside_running_ = false;
    const auto& segment = queue_.front().graph->segments()[segment_];
    observe_kernels(segment.end_kernel, segment.beside_end, arrived_[segment_]);
    if (!collective_running_) segment_done();
    return;
  }
  Op& op = queue_.front();
  if (op.kind == OpKind::kernel) {
    finish_front(nullptr);
    return;
  }
  const auto& segment = op.graph->segments()[segment_];
  observe_kernels(segment.first_kernel, segment.end_kernel, segment_start_);
  if (!segment.collective) {
    finish_front(nullptr);  // the last segment
    return;
  }
  const hal::CollectiveCall& call = *segment.collective;
  arrived_[segment_] = device_.runtime().now();
  const auto beside = op.graph->beside(segment);
  if (!beside.empty()) {
    beside_job_.set_work(beside, &segment.beside_cache);
    beside_job_.set_sm_fraction(sm_fraction_ * call.beside_sm_fraction);
    beside_running_ = true;
    device_.compute().start(beside_job_);
  }
  collective_running_ = true;
  call.group->arrive(call.rank, call.op, [this, epoch = epoch_](const hal::HalError* e) { on_async_done(epoch, e); });
}

void FakeStream::on_async_done(std::uint64_t epoch, const hal::HalError* error) {
  if (epoch != epoch_) return;  // work drained by a fault
  const Op& op = queue_.front();
  if (op.kind == OpKind::graph) {
    collective_running_ = false;
    if (device_.detail_observer()) {
      const hal::CollectiveOp& call = *op.graph->segments()[segment_].collective->op;
      const std::uint64_t bytes = std::accumulate(call.send_bytes.begin(), call.send_bytes.end(), call.bytes);
      observe_part(call.name, arrived_[segment_], bytes, error == nullptr);
    }
    if (error == nullptr) {
      if (!beside_running_) segment_done();  // else the kernels beside it end the segment
      return;
    }
    device_.compute().cancel(beside_job_);
    beside_running_ = false;
  }
  finish_front(error);
}

void FakeStream::segment_done() {
  const Op& op = queue_.front();
  const auto& segment = op.graph->segments()[segment_];
  rt::Runtime& rt = device_.runtime();
  if (segment.period_start) {
    period_start_ = rt.now();
    period_busy_start_ = device_.compute().busy_time();
  }
  if (segment.tail_iterations > 0) {
    // The rest of a repeated body: as many periods as the second iteration took.
    const rt::Duration tail = (rt.now() - period_start_) * static_cast<std::int64_t>(segment.tail_iterations);
    // The compute those periods would have run counts as busy time (device utilisation).
    const rt::Duration body_busy = device_.compute().busy_time() - period_busy_start_;
    device_.compute().credit_busy(std::min(tail, body_busy * static_cast<std::int64_t>(segment.tail_iterations)));
    // Each collective of the body is handed to its group as calls repeated over the tail, so that
    // their traffic holds the links for it (and is slowed by other traffic there), from where it came
    // in the period (after the compute before it: another stream's call then has the links to
    // itself, as it would have); the stream goes on when every group has let it.
    const auto& segments = op.graph->segments();
    tail_start_ = rt.now();
    tail_waits_ = 0;
    tail_error_.reset();
    for (std::size_t i = segment.period_from + 1; i <= segment_; ++i) tail_waits_ += segments[i].collective ? 1 : 0;
    for (std::size_t i = segment.period_from + 1; i <= segment_; ++i) {
      const hal::CollectiveCall* call = segments[i].collective;
      if (call == nullptr) continue;
      call->group->repeat(call->rank, call->op, segment.tail_iterations, arrived_[i] - period_start_, tail,
                          [this, epoch = epoch_](const hal::HalError* e) { on_tail_done(epoch, e); });
    }
    return;
  }
  ++segment_;
  run_segment();
}

void FakeStream::on_tail_done(std::uint64_t epoch, const hal::HalError* error) {
  if (epoch != epoch_) return;  // drained by a fault meanwhile
  if (error != nullptr && !tail_error_) tail_error_ = *error;
  if (--tail_waits_ > 0) return;
  if (device_.detail_observer()) {
    const auto& segment = queue_.front().graph->segments()[segment_];
    const std::size_t n = segment.tail_iterations;
    observe_part(std::to_string(n) + (n == 1 ? " more iteration" : " more iterations") + " (fast-forwarded)", tail_start_, 0,
                 !tail_error_);
  }
  if (tail_error_) {
    const hal::HalError e = std::move(*tail_error_);
    tail_error_.reset();
    finish_front(&e);
    return;
  }
  ++segment_;
  run_segment();
}

void FakeStream::on_event_reached(std::uint64_t epoch, const hal::HalError* error) {
  if (epoch != epoch_) return;
  finish_front(error);
}

void FakeStream::finish_front(const hal::HalError* error) {
  if (error != nullptr) note_failure(queue_.front(), *error);
  if (const auto& observe = device_.span_observer()) {
    const Op& op = queue_.front();
    if (op.kind == OpKind::kernel || op.kind == OpKind::graph || op.kind == OpKind::copy) {
      observe(OpSpan{device_.id(), name_, name_of(op), op_start_, device_.runtime().now(), error == nullptr,
                     op.kind == OpKind::graph ? &op.graph->label() : nullptr,
                     op.kind == OpKind::copy ? op.transfer.bytes : 0});
    }
  }
  queue_.pop_front();
  busy_ = false;
  pump();
}

void FakeStream::note_failure(const Op& op, const hal::HalError& error) {
  if (!error_) error_ = error;
  device_.runtime().record(device_.source(), "op_failed",
                           {{"stream", name_},
                            {"op", name_of(op)},
                            {"xid", static_cast<int>(error.cause())},
                            {"error", error.what()}},
                           rt::Severity::warning);
}

void FakeStream::fail(Op& op, const hal::HalError& error) {
  note_failure(op, error);
  switch (op.kind) {
    case OpKind::record:
      op.event->complete(op.generation, &error);
      return;
    case OpKind::callback:
      op.callback(error_ ? &*error_ : &error);
      return;
    default:
      return;
  }
}

void FakeStream::drain(hal::Xid xid, const std::string& reason) {
  ++epoch_;
  device_.compute().cancel(job_);
  device_.compute().cancel(beside_job_);
  busy_ = false;
  beside_running_ = collective_running_ = false;
  bool first = true;
  while (!queue_.empty()) {
    Op op = std::move(queue_.front());
    queue_.pop_front();
    const std::string detail = first ? reason : reason + " (queued behind it, not run)";
    first = false;
    fail(op, hal::HalError(device_.id(), name_of(op), xid, detail));
  }
  idle_cond_.notify_all();
}

}  // namespace nvl::fakegpu
