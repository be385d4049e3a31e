#include "fabric/comm_group.h"

#include <algorithm>
#include <iterator>
#include <map>
#include <memory>
#include <stdexcept>
#include <utility>

namespace nvl::fabric {

namespace {
std::string_view kind_name(hal::CollectiveKind k) {
  switch (k) {
    case hal::CollectiveKind::all_to_all: return "all_to_all";
    case hal::CollectiveKind::all_reduce: return "all_reduce";
    case hal::CollectiveKind::all_gather: return "all_gather";
    case hal::CollectiveKind::reduce_scatter: return "reduce_scatter";
    case hal::CollectiveKind::broadcast: return "broadcast";
    case hal::CollectiveKind::send_recv: return "send_recv";
  }
  return "collective";
}
}  // namespace

FabricCommGroup::FabricCommGroup(Fabric& fabric, CollectivePricer& pricer, std::string name,
                                 std::vector<hal::DeviceId> members, bool fast_path)
    : fabric_(fabric),
      pricer_(pricer),
      name_(std::move(name)),
      members_(std::move(members)),
      fast_path_(fast_path),
      next_call_(members_.size(), 0),
      down_(members_.size(), hal::Xid::none) {
  if (members_.empty()) throw std::invalid_argument("comm group '" + name_ + "' has no members");
  for (hal::DeviceId d : members_) {
    if (d < 0 || d >= fabric_.topology().gpu_count()) {
      throw std::invalid_argument("comm group '" + name_ + "': no GPU " + std::to_string(d));
    }
  }
}

void FabricCommGroup::arrive(int rank, const hal::CollectiveOp& op, hal::CollectiveDone done) {
  const int n = static_cast<int>(members_.size());
  if (rank < 0 || rank >= n) {
    throw std::out_of_range("comm group '" + name_ + "': rank " + std::to_string(rank) + " of " + std::to_string(n));
  }
  if (const int d = first_down(); d >= 0) {
    const auto ud = static_cast<std::size_t>(d);
    const hal::HalError e(members_[ud], "collective " + name_ + "/" + op.name, down_[ud],
                          "member rank " + std::to_string(d) + " (GPU " + std::to_string(members_[ud]) +
                              ") failed: the communicator is aborted");
    ++stats_.failed;
    fabric_.runtime().call_after(rt::Duration(), [done = std::move(done), e] { done(&e); });
    return;
  }
  const std::uint64_t k = next_call_[static_cast<std::size_t>(rank)]++;
  while (calls_.size() <= k - first_call_) {
    calls_.emplace_back();
    calls_.back().ops = std::move(spare_slots_);
    calls_.back().ops.resize(static_cast<std::size_t>(n));
    calls_.back().done.resize(static_cast<std::size_t>(n));
  }
  Call& call = calls_[static_cast<std::size_t>(k - first_call_)];
  call.ops[static_cast<std::size_t>(rank)] = op;
  call.done[static_cast<std::size_t>(rank)] = std::move(done);
  ++call.arrived;
  while (!calls_.empty() && calls_.front().arrived == n) {
    Call c = std::move(calls_.front());
    calls_.pop_front();
    ++first_call_;
    start(c);
    for (auto& o : c.ops) o.reset();
    spare_slots_ = std::move(c.ops);
  }
}

std::optional<std::string> FabricCommGroup::disagreement(const std::vector<hal::CollectiveOp>& ops) const {
  const auto& a = ops.front();
  for (std::size_t r = 0; r < ops.size(); ++r) {
    const auto& b = ops[r];
    const auto desc = [](const hal::CollectiveOp& o) {
      return std::string(kind_name(o.kind)) + " '" + o.name + "' of " + std::to_string(o.bytes) + " bytes";
    };
    const bool per_member_bytes = a.kind == hal::CollectiveKind::send_recv || a.kind == hal::CollectiveKind::all_to_all;
    if (b.kind != a.kind || b.name != a.name || (!per_member_bytes && b.bytes != a.bytes) || b.root != a.root ||
        b.role != a.role) {
      return "rank " + std::to_string(r) + " arrived with " + desc(b) + " but rank 0 with " + desc(a);
    }
    if (a.kind == hal::CollectiveKind::all_to_all && b.send_bytes.size() != ops.size()) {
      return "rank " + std::to_string(r) + " gave " + std::to_string(b.send_bytes.size()) +
             " send sizes for a group of " + std::to_string(ops.size());
    }
    if (a.kind == hal::CollectiveKind::send_recv && b.peer >= static_cast<int>(ops.size())) {
      return "rank " + std::to_string(r) + " sends to rank " + std::to_string(b.peer) + " outside the group";
    }
  }
  if (a.root < 0 || a.root >= static_cast<int>(ops.size())) return "broadcast root " + std::to_string(a.root) + " outside the group";
  return std::nullopt;
}

namespace {

// Calls words(first, count) for each run of words of a call's signature, in order, until it returns
// false; says whether every run was visited. The signature is what the price depends on: the shape,
// and per-rank sizes.
template <typename Words>
bool for_each_signature_run(const std::vector<hal::CollectiveOp>& ops, Words&& words) {
  const auto& a = ops.front();
  const std::uint64_t shape[] = {static_cast<std::uint64_t>(a.kind), static_cast<std::uint64_t>(a.role), a.bytes,
                                 static_cast<std::uint64_t>(a.root)};
  if (!words(shape, std::size(shape))) return false;
  if (a.kind == hal::CollectiveKind::all_to_all) {
    for (const auto& o : ops) {
      if (!words(o.send_bytes.data(), o.send_bytes.size())) return false;
    }
  } else if (a.kind == hal::CollectiveKind::send_recv) {
    for (const auto& o : ops) {
      const std::uint64_t part[] = {o.bytes, static_cast<std::uint64_t>(o.peer + 1)};
      if (!words(part, std::size(part))) return false;
    }
  }
  return true;
}

// FNV-1a over the words, dealt round four lanes so that the multiplies of neighbouring words overlap
// (an all-to-all's key is thousands of words, hashed on every call).
class SignatureHasher {
 public:
  void add(const std::uint64_t* words, std::size_t count) {
    std::size_t i = 0;
    for (; i < count && count_ % kLanes != 0; ++i) add_one(words[i]);
    for (; i + kLanes <= count; i += kLanes) {
      for (std::size_t l = 0; l < kLanes; ++l) lanes_[l] = (lanes_[l] ^ words[i + l]) * kFnvPrime;
      count_ += kLanes;
    }
    for (; i < count; ++i) add_one(words[i]);
  }
  std::size_t value() const {
    std::uint64_t h = kFnvOffset ^ count_;
    for (std::uint64_t lane : lanes_) h = (h ^ lane) * kFnvPrime;
    return static_cast<std::size_t>(h);
  }

 private:
  void add_one(std::uint64_t w) {
    lanes_[count_ % kLanes] = (lanes_[count_ % kLanes] ^ w) * kFnvPrime;
    ++count_;
  }
  static constexpr std::size_t kLanes = 4;
  static constexpr std::uint64_t kFnvOffset = 0xcbf29ce484222325ULL;
  static constexpr std::uint64_t kFnvPrime = 0x100000001b3ULL;
  std::uint64_t lanes_[kLanes] = {kFnvOffset, kFnvOffset + 1, kFnvOffset + 2, kFnvOffset + 3};
  std::uint64_t count_ = 0;
};

}  // namespace

std::vector<std::uint64_t> FabricCommGroup::signature(const std::vector<hal::CollectiveOp>& ops) const {
  std::vector<std::uint64_t> key;
  key.reserve(4 + (ops.front().kind == hal::CollectiveKind::all_to_all ? ops.size() * ops.size() : 2 * ops.size()));
  for_each_signature_run(ops, [&](const std::uint64_t* words, std::size_t count) {
    key.insert(key.end(), words, words + count);
    return true;
  });
  return key;
}

std::size_t FabricCommGroup::signature_hash(const std::vector<hal::CollectiveOp>& ops) {
  SignatureHasher h;
  for_each_signature_run(ops, [&](const std::uint64_t* words, std::size_t count) {
    h.add(words, count);
    return true;
  });
  return h.value();
}

std::size_t FabricCommGroup::SignatureHash::operator()(const std::vector<std::uint64_t>& key) const {
  SignatureHasher h;
  h.add(key.data(), key.size());
  return h.value();
}

bool FabricCommGroup::SignatureEqual::operator()(const SignatureView& view, const std::vector<std::uint64_t>& key) const {
  std::size_t at = 0;
  const bool same = for_each_signature_run(view.ops, [&](const std::uint64_t* words, std::size_t count) {
    if (count > key.size() - at || !std::equal(words, words + count, key.begin() + static_cast<std::ptrdiff_t>(at))) {
      return false;
    }
    at += count;
    return true;
  });
  return same && at == key.size();
}


bool FabricCommGroup::fast_ok(const std::vector<int>& channels) const {
  const rt::Time now = fabric_.runtime().now();
  return std::all_of(channels.begin(), channels.end(), [&](int c) { return fabric_.healthy(c) && fabric_.idle(c, now); });
}

void FabricCommGroup::fail_all(std::vector<hal::CollectiveDone>& done, const hal::HalError& e) {
  ++stats_.failed;
  fabric_.runtime().record("fabric", "collective_failed", {{"group", name_}, {"error", e.what()}},
                           rt::Severity::warning);
  for (auto& d : done) {
    if (d) fabric_.runtime().call_after(rt::Duration(), [d = std::move(d), e] { d(&e); });
  }
}

int FabricCommGroup::first_down() const {
  const auto it = std::find_if(down_.begin(), down_.end(), [](hal::Xid x) { return x != hal::Xid::none; });
  return it == down_.end() ? -1 : static_cast<int>(it - down_.begin());
}

std::uint64_t FabricCommGroup::track(std::function<void(const hal::HalError&)> abort) {
  const std::uint64_t id = next_run_++;
  running_.emplace(id, std::move(abort));
  return id;
}

void FabricCommGroup::member_failed(hal::DeviceId device, hal::Xid cause) {
  const auto it = std::find(members_.begin(), members_.end(), device);
  if (it == members_.end()) return;
  const auto m = static_cast<std::size_t>(it - members_.begin());
  if (down_[m] != hal::Xid::none) return;
  down_[m] = cause;
  const hal::HalError e(device, "collective " + name_, cause,
                        "member rank " + std::to_string(m) + " (GPU " + std::to_string(device) + ") failed");
  fabric_.runtime().record("fabric", "comm_group_aborted",
                           {{"group", name_}, {"rank", m}, {"gpu", device}, {"xid", static_cast<int>(cause)},
                            {"running", running_.size()}, {"queued", calls_.size()}},
                           rt::Severity::warning);
  auto running = std::move(running_);
  running_.clear();
  for (auto& [id, abort] : running) abort(e);
  for (auto& call : calls_) fail_all(call.done, e);
  calls_.clear();
  // Every member starts the next call afresh, whatever it had reached.
  const std::uint64_t next = *std::max_element(next_call_.begin(), next_call_.end());
  std::fill(next_call_.begin(), next_call_.end(), next);
  first_call_ = next;
}

void FabricCommGroup::start(Call& call) {
  ++stats_.calls;
  std::vector<hal::CollectiveOp> ops = std::move(spare_ops_);
  ops.reserve(call.ops.size());
  for (auto& o : call.ops) ops.push_back(std::move(*o));
  run_call(ops, std::move(call.done));
  ops.clear();
  spare_ops_ = std::move(ops);
}

void FabricCommGroup::run_call(const std::vector<hal::CollectiveOp>& ops, std::vector<hal::CollectiveDone>&& done) {
  const std::string op_name = "collective " + name_ + "/" + ops.front().name;
  if (auto why = disagreement(ops)) {
    fail_all(done, hal::HalError(-1, op_name, hal::Xid::none, *why));
    return;
  }
  if (fast_path_) {
    const auto it = cache_.find(SignatureView{ops, signature_hash(ops)});
    if (it != cache_.end() && fast_ok(it->second.channels)) {
      finish_fast(it->second, std::move(done), op_name);
      return;
    }
  }
  CollectivePlan plan;
  try {
    plan = plan_collective(fabric_, members_, ops);
  } catch (const hal::HalError& e) {
    fail_all(done, hal::HalError(e.device(), op_name, e.cause(), e.what()));
    return;
  }
  if (fast_path_) {
    // Each channel once, in order: marked, then collected (an EP all-to-all's flows cross the same
    // few hundred channels thousands of times, which sorting them all would pay for).
    std::vector<int> slot(fabric_.topology().channels().size(), -1);  // a channel's place in `channels`
    for (const auto& f : plan.flows) {
      for (int ch : f.channels) slot[static_cast<std::size_t>(ch)] = 0;
    }
    std::vector<int> channels;
    for (std::size_t ch = 0; ch < slot.size(); ++ch) {
      if (slot[ch] < 0) continue;
      slot[ch] = static_cast<int>(channels.size());
      channels.push_back(static_cast<int>(ch));
    }
    if (fast_ok(channels)) {
      ++stats_.priced;
      std::vector<double> bytes(channels.size(), 0.0);
      for (const auto& f : plan.flows) {
        for (int ch : f.channels) bytes[static_cast<std::size_t>(slot[static_cast<std::size_t>(ch)])] += f.wire_bytes;
      }
      Cached c{pricer_.price(plan, static_cast<int>(members_.size()), fabric_), std::move(channels), std::move(bytes)};
      // Bounded: decode steps keep meeting new token counts, and an EP all-to-all's key alone is 32 KB.
      // A dropped entry is only priced again (same answer), so clearing changes no result.
      if (cache_.size() >= kMaxCachedSignatures) cache_.clear();
      const auto it = cache_.insert_or_assign(signature(ops), std::move(c)).first;
      finish_fast(it->second, std::move(done), op_name);
      return;
    }
  }
  run_exact(plan, std::move(done), op_name);
}

void FabricCommGroup::finish_fast(const Cached& c, std::vector<hal::CollectiveDone> done, const std::string& op_name) {
  ++stats_.fast;
  for (std::size_t i = 0; i < c.channels.size(); ++i) fabric_.add_held_bytes(c.channels[i], c.channel_bytes[i]);
  struct Run {
    std::vector<hal::CollectiveDone> done;
    std::vector<rt::TimerHandle> timers;
    std::uint64_t hold = 0;
    std::size_t pending = 0;
    std::uint64_t id = 0;
  };
  rt::Runtime& rt = fabric_.runtime();
  const rt::Time now = rt.now();
  auto run = std::make_shared<Run>();
  run->done = std::move(done);
  run->id = track([this, run](const hal::HalError& e) {
    for (auto& t : run->timers) t.cancel();
    fabric_.release(run->hold);
    ++stats_.failed;
    for (auto& d : run->done) {
      if (d) fabric_.runtime().call_after(rt::Duration(), [d = std::exchange(d, nullptr), e] { d(&e); });
    }
  });
  // Members finishing at the same time share one event (a symmetric collective has one).
  std::map<std::int64_t, std::vector<std::size_t>> by_time;
  for (std::size_t r = 0; r < run->done.size(); ++r) by_time[c.done[r].ns()].push_back(r);
  run->pending = by_time.size();
  for (auto& [t, members] : by_time) {
    run->timers.push_back(rt.call_at(now + rt::ns(t), [this, run, members = std::move(members)] {
      if (--run->pending == 0) {
        fabric_.release(run->hold);
        untrack(run->id);
      }
      for (std::size_t m : members) {
        if (run->done[m]) std::exchange(run->done[m], nullptr)(nullptr);
      }
    }));
  }
  // A link lost under the collective fails the members not yet done, naming it.
  const hal::DeviceId first = members_.front();
  run->hold = fabric_.hold(c.channels, now + rt::ns(by_time.rbegin()->first), [this, run, op_name, first](int channel) {
    for (auto& t : run->timers) t.cancel();
    untrack(run->id);
    const hal::HalError e = fabric_.error_for_channel(channel, op_name, first);
    ++stats_.failed;
    for (auto& d : run->done) {
      if (d) std::exchange(d, nullptr)(&e);
    }
  });
}

void FabricCommGroup::run_exact(const CollectivePlan& plan, std::vector<hal::CollectiveDone> done,
                                const std::string& op_name) {
  ++stats_.exact;
  struct Run {
    std::vector<hal::CollectiveDone> done;
    std::vector<int> outstanding;
    std::vector<char> finished;
    rt::Time sync_at;
    bool failed = false;
    std::size_t finished_count = 0;
    std::uint64_t id = 0;
  };
  rt::Runtime& rt = fabric_.runtime();
  auto run = std::make_shared<Run>();
  run->done = std::move(done);
  run->outstanding.assign(members_.size(), 0);
  run->finished.assign(members_.size(), 0);
  run->id = track([this, run](const hal::HalError& e) {
    if (run->failed) return;
    run->failed = true;
    ++stats_.failed;
    for (std::size_t m = 0; m < run->done.size(); ++m) {
      if (run->finished[m] || !run->done[m]) continue;
      run->finished[m] = 1;
      fabric_.runtime().call_after(rt::Duration(), [d = std::exchange(run->done[m], nullptr), e] { d(&e); });
    }
  });
  const rt::Time data_at = rt.now() + plan.overhead;
  run->sync_at = data_at + plan.sync_latency;
  for (const auto& f : plan.flows) {
    ++run->outstanding[static_cast<std::size_t>(f.src_rank)];
    if (f.dst_rank != f.src_rank) ++run->outstanding[static_cast<std::size_t>(f.dst_rank)];
  }
  auto complete = [this, &rt](const std::shared_ptr<Run>& r, int m) {
    auto um = static_cast<std::size_t>(m);
    if (r->failed || r->finished[um] || r->outstanding[um] > 0) return;
    r->finished[um] = 1;
    if (++r->finished_count == r->finished.size()) untrack(r->id);
    rt.call_at(std::max(rt.now(), r->sync_at), [r, um] {
      if (r->done[um]) r->done[um](nullptr);
    });
  };
  for (std::size_t m = 0; m < members_.size(); ++m) complete(run, static_cast<int>(m));
  const std::vector<hal::DeviceId> members = members_;
  rt.call_at(data_at, [this, run, flows = plan.flows, complete, op_name, members]() mutable {
    for (auto& f : flows) {
      const int src = f.src_rank;
      const int dst = f.dst_rank;
      fabric_.flows().start(std::move(f.channels), f.wire_bytes, f.latency,
                            [this, run, src, dst, complete, op_name, members](int failed) {
                              if (failed != FlowModel::kNoFailure) {
                                if (run->failed) return;
                                run->failed = true;
                                untrack(run->id);
                                const hal::HalError e = fabric_.error_for_channel(
                                    failed, op_name, members[static_cast<std::size_t>(src)]);
                                for (std::size_t m = 0; m < run->done.size(); ++m) {
                                  if (run->finished[m]) continue;
                                  run->finished[m] = 1;
                                  if (run->done[m]) run->done[m](&e);
                                }
                                ++stats_.failed;
                                return;
                              }
                              --run->outstanding[static_cast<std::size_t>(src)];
                              if (dst != src) --run->outstanding[static_cast<std::size_t>(dst)];
                              complete(run, src);
                              if (dst != src) complete(run, dst);
                            });
    }
  });
}

}  // namespace nvl::fabric
