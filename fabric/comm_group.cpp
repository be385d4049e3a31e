#include "fabric/comm_group.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <memory>
#include <numeric>
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

// A started call's slot back from `spares` (its buffers kept), else a new one.
template <typename Slot>
Slot reused(std::vector<Slot>& spares) {
  if (spares.empty()) return Slot{};
  Slot s = std::move(spares.back());
  spares.pop_back();
  return s;
}
}  // namespace

FabricCommGroup::FabricCommGroup(Fabric& fabric, CollectivePricer& pricer, std::string name,
                                 std::vector<hal::DeviceId> members, bool fast_path)
    : fabric_(fabric),
      pricer_(pricer),
      name_(std::move(name)),
      members_(std::move(members)),
      fast_path_(fast_path),
      calls_(members_.size()),
      repeats_(members_.size()),
      down_(members_.size(), hal::Xid::none) {
  if (members_.empty()) throw std::invalid_argument("comm group '" + name_ + "' has no members");
  for (hal::DeviceId d : members_) {
    if (d < 0 || d >= fabric_.topology().gpu_count()) {
      throw std::invalid_argument("comm group '" + name_ + "': no GPU " + std::to_string(d));
    }
  }
}

void FabricCommGroup::arrive(int rank, hal::SharedCollectiveOp op, hal::CollectiveDone done) {
  if (!op) throw std::invalid_argument("comm group '" + name_ + "': rank " + std::to_string(rank) + " arrived without an op");
  const int n = static_cast<int>(members_.size());
  if (rank < 0 || rank >= n) {
    throw std::out_of_range("comm group '" + name_ + "': rank " + std::to_string(rank) + " of " + std::to_string(n));
  }
  if (first_down_ >= 0) {
    const auto ud = static_cast<std::size_t>(first_down_);
    ++stats_.failed;
    const std::string why = "member rank " + std::to_string(first_down_) + " (GPU " + std::to_string(members_[ud]) +
                            ") failed: the communicator is aborted";
    fail_later(std::move(done), hal::HalError(members_[ud], op_name(op->name), down_[ud], why));
    return;
  }
  Call& call = calls_.arrive(static_cast<std::size_t>(rank), [&] {
    Call c = reused(spare_calls_);
    c.ops.resize(static_cast<std::size_t>(n));
    // Emptied by the run that took the last call's callbacks, if any.
    c.done.resize(static_cast<std::size_t>(n));
    return c;
  });
  call.ops[static_cast<std::size_t>(rank)] = std::move(op);
  call.done[static_cast<std::size_t>(rank)] = std::move(done);
  calls_.take_complete([&](Call& c) {
    start(c);
    spare_calls_.push_back(std::move(c));
  });
}

void FabricCommGroup::repeat(int rank, hal::SharedCollectiveOp op, std::size_t times, rt::Duration lead,
                             rt::Duration span, hal::CollectiveDone done) {
  const int n = static_cast<int>(members_.size());
  if (!op || rank < 0 || rank >= n) {
    throw std::out_of_range("comm group '" + name_ + "': repeat by rank " + std::to_string(rank) + " of " +
                            std::to_string(n) + (op ? "" : " without an op"));
  }
  if (first_down_ >= 0) {
    arrive(rank, std::move(op), std::move(done));  // fails it as the communicator is aborted
    return;
  }
  Repeat& r = repeats_.arrive(static_cast<std::size_t>(rank), [&] {
    Repeat fresh = reused(spare_repeats_);
    fresh.moving = rt::Time();
    fresh.ops.resize(static_cast<std::size_t>(n));
    fresh.done.assign(static_cast<std::size_t>(n), nullptr);
    fresh.end.resize(static_cast<std::size_t>(n));
    return fresh;
  });
  const auto ur = static_cast<std::size_t>(rank);
  r.ops[ur] = std::move(op);
  r.done[ur] = std::move(done);
  const rt::Time now = fabric_.runtime().now();
  r.end[ur] = now + span;
  r.moving = std::max(r.moving, now + lead);
  r.times = times;
  repeats_.take_complete([&](Repeat& front) {
    start_repeat(front);
    spare_repeats_.push_back(std::move(front));
  });
}

void FabricCommGroup::start_repeat(Repeat& r) {
  ++stats_.repeats;
  Cache::value_type* entry = entry_for(r.ops, r.done, false);
  if (entry == nullptr) return;
  const rt::Time now = fabric_.runtime().now();
  std::vector<rt::Duration> finish;
  std::vector<int> finish_end, by_finish(r.end.size());
  std::iota(by_finish.begin(), by_finish.end(), 0);
  std::stable_sort(by_finish.begin(), by_finish.end(),
                   [&](int a, int b) { return r.end[static_cast<std::size_t>(a)] < r.end[static_cast<std::size_t>(b)]; });
  for (std::size_t i = 0; i < by_finish.size(); ++i) {
    const rt::Duration t = std::max(rt::Duration(), r.end[static_cast<std::size_t>(by_finish[i])] - now);
    if (finish.empty() || finish.back() != t) {
      finish.push_back(t);
      finish_end.push_back(static_cast<int>(i));
    }
    ++finish_end.back();
  }
  const Cached& c = entry->second;
  const rt::Duration lead = std::max(rt::Duration(), r.moving - now);
  run_held(held_repeated(c, r.times, lead), finish, finish_end, by_finish, r.done, r.ops.front()->name);
}

std::optional<std::string> FabricCommGroup::disagreement(const Ops& ops) const {
  const auto& a = *ops.front();
  for (std::size_t r = 0; r < ops.size(); ++r) {
    const auto& b = *ops[r];
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
// and per-rank sizes (same_signature compares the same words in place).
template <typename Words>
bool for_each_signature_run(const std::vector<hal::SharedCollectiveOp>& ops, Words&& words) {
  const auto& a = *ops.front();
  const std::uint64_t shape[] = {static_cast<std::uint64_t>(a.kind), static_cast<std::uint64_t>(a.role), a.bytes,
                                 static_cast<std::uint64_t>(a.root)};
  if (!words(shape, std::size(shape))) return false;
  if (a.kind == hal::CollectiveKind::all_to_all) {
    for (const auto& o : ops) {
      if (!words(o->send_bytes.data(), o->send_bytes.size())) return false;
    }
  } else if (a.kind == hal::CollectiveKind::send_recv) {
    for (const auto& o : ops) {
      const std::uint64_t part[] = {o->bytes, static_cast<std::uint64_t>(o->peer + 1)};
      if (!words(part, std::size(part))) return false;
    }
  }
  return true;
}

// FNV-1a over the words, dealt round four lanes so that the multiplies of neighbouring words overlap
// (an all-to-all's key is thousands of words, hashed whenever a call is not one of the last two signatures).
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

FabricCommGroup::SignatureKey::SignatureKey(const Ops& ops, std::size_t h) : hash(h) {
  words.reserve(4 + (ops.front()->kind == hal::CollectiveKind::all_to_all ? ops.size() * ops.size() : 2 * ops.size()));
  for_each_signature_run(ops, [&](const std::uint64_t* run, std::size_t count) {
    words.insert(words.end(), run, run + count);
    return true;
  });
}

std::size_t FabricCommGroup::signature_hash(const Ops& ops) {
  SignatureHasher h;
  for_each_signature_run(ops, [&](const std::uint64_t* words, std::size_t count) {
    h.add(words, count);
    return true;
  });
  return h.value();
}

bool FabricCommGroup::SignatureEqual::operator()(const SignatureView& view, const SignatureKey& stored) const {
  const std::vector<std::uint64_t>& key = stored.words;
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

bool FabricCommGroup::same_signature(const Ops& a, const Ops& b) {
  // The words for_each_signature_run visits, compared in place (its runs do not outlive its calls).
  if (a.size() != b.size()) return false;
  const hal::CollectiveOp& x = *a.front();
  const hal::CollectiveOp& y = *b.front();
  if (x.kind != y.kind || x.role != y.role || x.bytes != y.bytes || x.root != y.root) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (x.kind == hal::CollectiveKind::all_to_all && a[i]->send_bytes != b[i]->send_bytes) return false;
    if (x.kind == hal::CollectiveKind::send_recv && (a[i]->bytes != b[i]->bytes || a[i]->peer != b[i]->peer)) return false;
  }
  return true;
}

FabricCommGroup::Cache::value_type* FabricCommGroup::same_objects_entry(const Ops& ops) const {
  for (Cache::value_type* entry : recent_) {
    if (entry != nullptr && entry->second.ops == ops) return entry;
  }
  return nullptr;
}

FabricCommGroup::Cache::value_type* FabricCommGroup::find_entry(const Ops& ops, std::optional<std::size_t>& hash) {
  Cache::value_type* found = nullptr;
  for (Cache::value_type* entry : recent_) {
    if (entry != nullptr && SignatureEqual()(SignatureView{ops, 0}, entry->first)) {
      found = entry;
      break;
    }
  }
  if (found == nullptr) {
    hash = signature_hash(ops);
    const auto it = cache_.find(SignatureView{ops, *hash});
    if (it != cache_.end()) {
      found = &*it;
    } else {
      for (auto& s : scratch_) {
        if (s && s->first.hash == *hash && same_signature(ops, s->second.ops)) found = &*s;
      }
      if (found == nullptr) return nullptr;
    }
  }
  found->second.ops = ops;
  return found;
}

void FabricCommGroup::used(Cache::value_type& entry) {
  if (recent_[0] == &entry) return;
  recent_[1] = recent_[0];
  recent_[0] = &entry;
}

bool FabricCommGroup::fast_ok(const std::vector<int>& channels) const {
  // Channels other calls hold are fine: the holds share them (two streams' calls, pools on the same GPUs),
  // and so are flows that other holds turned into (their caps say what they take).
  return std::all_of(channels.begin(), channels.end(), [&](int c) {
    return fabric_.healthy(c) && !std::isinf(fabric_.flows().demand(c));
  });
}

void FabricCommGroup::fail_later(hal::CollectiveDone done, const hal::HalError& e) {
  fabric_.runtime().call_after(rt::Duration(), [done = std::move(done), e] { done(&e); });
}

void FabricCommGroup::fail_waiting(std::vector<hal::CollectiveDone>& done, const hal::HalError& e, bool at_once) {
  ++stats_.failed;
  for (auto& d : done) {
    if (!d) continue;
    if (at_once) {
      std::exchange(d, nullptr)(&e);
    } else {
      fail_later(std::exchange(d, nullptr), e);
    }
  }
}

void FabricCommGroup::fail_call(std::vector<hal::CollectiveDone>& done, const hal::HalError& e) {
  fabric_.runtime().record("fabric", "collective_failed", {{"group", name_}, {"error", e.what()}},
                           rt::Severity::warning);
  fail_waiting(done, e, false);
}

std::uint64_t FabricCommGroup::track(std::function<void(const hal::HalError&)> abort) {
  const std::uint64_t id = next_run_++;
  running_.emplace_back(id, std::move(abort));
  return id;
}

void FabricCommGroup::untrack(std::uint64_t id) {
  const auto it = std::find_if(running_.begin(), running_.end(), [id](const auto& r) { return r.first == id; });
  if (it != running_.end()) running_.erase(it);
}

void FabricCommGroup::member_failed(hal::DeviceId device, hal::Xid cause) {
  const auto it = std::find(members_.begin(), members_.end(), device);
  if (it == members_.end()) return;
  const auto m = static_cast<std::size_t>(it - members_.begin());
  if (down_[m] != hal::Xid::none) return;
  down_[m] = cause;
  if (first_down_ < 0 || static_cast<int>(m) < first_down_) first_down_ = static_cast<int>(m);
  const hal::HalError e(device, "collective " + name_, cause,
                        "member rank " + std::to_string(m) + " (GPU " + std::to_string(device) + ") failed");
  fabric_.runtime().record("fabric", "comm_group_aborted",
                           {{"group", name_}, {"rank", m}, {"gpu", device}, {"xid", static_cast<int>(cause)},
                            {"running", running_.size()}, {"queued", calls_.queued()}},
                           rt::Severity::warning);
  auto running = std::move(running_);
  running_.clear();
  for (auto& [id, abort] : running) abort(e);
  // Every member starts the next call afresh, whatever it had reached.
  calls_.reset([&](Call& call) { fail_call(call.done, e); });
  repeats_.reset([&](Repeat& r) { fail_call(r.done, e); });
}

void FabricCommGroup::start(Call& call) {
  ++stats_.calls;
  run_call(call.ops, call.done);
}

FabricCommGroup::Cache::value_type* FabricCommGroup::entry_for(const Ops& ops, std::vector<hal::CollectiveDone>& done,
                                                              bool fast_only) {
  const std::string& name = ops.front()->name;
  std::optional<std::size_t> hash;  // the signature's, once computed
  Cache::value_type* entry = same_objects_entry(ops);
  if (entry == nullptr) {
    if (auto why = disagreement(ops)) {
      fail_call(done, hal::HalError(-1, op_name(name), hal::Xid::none, *why));
      return nullptr;
    }
    entry = find_entry(ops, hash);
  }
  if (entry != nullptr && (!fast_only || fast_ok(*entry->second.channels))) {
    used(*entry);
    return entry;
  }
  std::optional<Cached> c;
  CrossbarAllToAll::Priced& x = crossbar_priced_;
  if (ops.front()->kind == hal::CollectiveKind::all_to_all && crossbar_.price(fabric_, members_, ops, x) &&
      (!fast_only || fast_ok(x.channels))) {
    c = cached(std::move(x.channels), std::move(x.channel_bytes), std::move(x.channel_flows),
               std::move(x.channel_seconds), x.wire_from, x.done);
  } else {
    try {
      plan_collective(fabric_, members_, ops, plan_);
    } catch (const hal::HalError& e) {
      fail_call(done, hal::HalError(e.device(), op_name(name), e.cause(), e.what()));
      return nullptr;
    }
    c = price_plan(plan_, fast_only);
    if (!c) return nullptr;
  }
  ++stats_.priced;
  c->ops = ops;
  if (!hash) hash = signature_hash(ops);
  // A signature is stored once it is met a second time: an all-to-all of sampled expert routing is new
  // at every step, and its 32 KB key would only be built to be dropped. Until then its entry is a
  // scratch one, found by its own objects (a step's repeated layers reuse them) or by hash and signature.
  if (std::find(missed_.begin(), missed_.end(), *hash) == missed_.end()) {
    missed_[next_missed_++ % missed_.size()] = *hash;
    std::optional<Cache::value_type>* slot = nullptr;
    for (auto& s : scratch_) {
      if (!s || (&*s != recent_[0] && &*s != recent_[1])) slot = &s;
    }
    Cache::value_type& fresh = slot->emplace(SignatureKey(*hash), std::move(*c));
    used(fresh);
    return &fresh;
  }
  // Bounded: decode steps keep meeting new token counts, and an EP all-to-all's key alone is 32 KB.
  // A dropped entry is only priced again (same answer), so clearing changes no result.
  if (cache_.size() >= kMaxCachedSignatures) {
    cache_.clear();
    recent_ = {};
  }
  const auto it = cache_.insert_or_assign(SignatureKey(ops, *hash), std::move(*c)).first;
  used(*it);
  return &*it;
}

void FabricCommGroup::run_call(const Ops& ops, std::vector<hal::CollectiveDone>& done) {
  const std::string& name = ops.front()->name;
  if (fast_path_) {
    const std::size_t failed = stats_.failed;
    if (Cache::value_type* entry = entry_for(ops, done, true)) {
      const Cached& c = entry->second;
      ++stats_.fast;
      run_held(held(c), c.finish, c.finish_end, c.by_finish, done, name);
      return;
    }
    if (stats_.failed != failed) return;
    // plan_ holds the call's plan: its links carry flows or are degraded.
  } else {
    if (auto why = disagreement(ops)) {
      fail_call(done, hal::HalError(-1, op_name(name), hal::Xid::none, *why));
      return;
    }
    try {
      plan_collective(fabric_, members_, ops, plan_);
    } catch (const hal::HalError& e) {
      fail_call(done, hal::HalError(e.device(), op_name(name), e.cause(), e.what()));
      return;
    }
  }
  run_exact(std::move(plan_), std::move(done), op_name(name));
}

std::optional<FabricCommGroup::Cached> FabricCommGroup::price_plan(const CollectivePlan& plan, bool fast_only) {
  const std::vector<int>& channels = pricer_.load(plan, fabric_);
  if (fast_only && !fast_ok(channels)) return std::nullopt;
  std::vector<int> held = channels;
  std::vector<int> flows = pricer_.channel_flows();
  std::vector<rt::Duration> done;
  std::vector<double> bytes, seconds;
  pricer_.price(static_cast<int>(members_.size()), done, bytes, seconds);
  return cached(std::move(held), std::move(bytes), std::move(flows), std::move(seconds), plan.overhead, done);
}

FabricCommGroup::Cached FabricCommGroup::cached(std::vector<int> channels, std::vector<double> channel_bytes,
                                                std::vector<int> channel_flows, std::vector<double> channel_seconds,
                                                rt::Duration wire_from, const std::vector<rt::Duration>& done) {
  Cached c;
  c.channels = std::make_shared<const std::vector<int>>(std::move(channels));
  c.channel_bytes = std::make_shared<const std::vector<double>>(std::move(channel_bytes));
  c.channel_flows = std::make_shared<const std::vector<int>>(std::move(channel_flows));
  c.channel_seconds = std::make_shared<const std::vector<double>>(std::move(channel_seconds));
  c.wire_from = wire_from;
  c.by_finish.resize(done.size());
  std::iota(c.by_finish.begin(), c.by_finish.end(), 0);
  std::stable_sort(c.by_finish.begin(), c.by_finish.end(),
                   [&](int a, int b) { return done[static_cast<std::size_t>(a)] < done[static_cast<std::size_t>(b)]; });
  for (std::size_t i = 0; i < c.by_finish.size(); ++i) {
    const rt::Duration t = done[static_cast<std::size_t>(c.by_finish[i])];
    if (c.finish.empty() || c.finish.back() != t) {
      c.finish.push_back(t);
      c.finish_end.push_back(static_cast<int>(i));
    }
    ++c.finish_end.back();
  }
  return c;
}

Fabric::HeldTraffic FabricCommGroup::held(const Cached& c) {
  return Fabric::HeldTraffic{c.channels, c.channel_bytes, c.channel_flows, c.channel_seconds, c.wire_from, 1, false};
}

Fabric::HeldTraffic FabricCommGroup::held_repeated(const Cached& c, std::size_t times, rt::Duration lead) {
  return Fabric::HeldTraffic{c.channels, c.channel_bytes, c.channel_flows, c.channel_seconds, lead,
                             static_cast<double>(times), true};
}

void FabricCommGroup::run_held(const Fabric::HeldTraffic& traffic, const std::vector<rt::Duration>& finish,
                               const std::vector<int>& finish_end, const std::vector<int>& by_finish,
                               std::vector<hal::CollectiveDone>& done, const std::string& op) {
  rt::Runtime& rt = fabric_.runtime();
  const rt::Time now = rt.now();
  std::uint32_t slot = 0;
  if (free_fast_runs_.empty()) {
    slot = static_cast<std::uint32_t>(fast_runs_.size());
    fast_runs_.emplace_back();
  } else {
    slot = free_fast_runs_.back();
    free_fast_runs_.pop_back();
  }
  FastRun& run = fast_runs_[slot];
  run.done.swap(done);
  run.timers.clear();
  run.finish_end = finish_end;
  run.by_finish = by_finish;
  run.op = op;
  run.groups = finish.size();
  run.pending = finish.size();
  run.id = track([this, slot](const hal::HalError& e) { fast_aborted(slot, e); });
  for (std::uint32_t g = 0; g < finish.size(); ++g) {
    run.timers.push_back(rt.call_at(now + finish[g], [this, slot, g] { fast_members_done(slot, g); }));
  }
  // A link lost under the traffic fails the members not yet done, naming it. The hold may be slowed at
  // once (a flow is on its links), so the run must be complete before it is taken.
  run.hold = 0;
  const std::uint64_t hold = fabric_.hold(traffic, now + finish.back(),
                                          Fabric::HoldEvents{[this, slot](int channel) { fast_link_lost(slot, channel); },
                                                             [this, slot] { fast_slowed(slot); },
                                                             [this, slot] {
                                                               FastRun& r = fast_runs_[slot];
                                                               while (r.pending > 0) {
                                                                 fast_members_done(slot, static_cast<std::uint32_t>(r.groups - r.pending));
                                                               }
                                                             }});
  fast_runs_[slot].hold = hold;
}

void FabricCommGroup::fast_slowed(std::uint32_t slot) {
  ++stats_.slowed;
  for (auto& t : fast_runs_[slot].timers) t.cancel();
}

void FabricCommGroup::fast_members_done(std::uint32_t slot, std::uint32_t group) {
  FastRun& run = fast_runs_[slot];
  const bool last = --run.pending == 0;
  if (last) {
    fabric_.release(run.hold);
    untrack(run.id);
  }
  for (int i = group == 0 ? 0 : run.finish_end[group - 1]; i < run.finish_end[group]; ++i) {
    auto& d = run.done[static_cast<std::size_t>(run.by_finish[static_cast<std::size_t>(i)])];
    if (d) std::exchange(d, nullptr)(nullptr);
  }
  if (last) free_fast_runs_.push_back(slot);
}

void FabricCommGroup::fast_link_lost(std::uint32_t slot, int channel) {
  FastRun& run = fast_runs_[slot];
  for (auto& t : run.timers) t.cancel();
  untrack(run.id);
  fail_waiting(run.done, fabric_.error_for_channel(channel, op_name(run.op), members_.front()), true);
  free_fast_runs_.push_back(slot);
}

void FabricCommGroup::fast_aborted(std::uint32_t slot, const hal::HalError& e) {
  FastRun& run = fast_runs_[slot];
  for (auto& t : run.timers) t.cancel();
  fabric_.release(run.hold);
  fail_waiting(run.done, e, false);
  free_fast_runs_.push_back(slot);
}

void FabricCommGroup::run_exact(CollectivePlan plan, std::vector<hal::CollectiveDone> done, const std::string& op_name) {
  ++stats_.exact;
  struct Run {
    std::vector<hal::CollectiveDone> done;  // a member's callback moves to its completion event
    std::vector<int> outstanding;
    std::vector<char> finished;
    rt::Time sync_at;
    bool failed = false;
    std::size_t finished_count = 0;
    std::uint64_t id = 0;
    std::string op_name;
  };
  rt::Runtime& rt = fabric_.runtime();
  auto run = std::make_shared<Run>();
  run->done = std::move(done);
  run->outstanding.assign(members_.size(), 0);
  run->finished.assign(members_.size(), 0);
  run->op_name = op_name;
  run->id = track([this, run](const hal::HalError& e) {
    if (run->failed) return;
    run->failed = true;
    fail_waiting(run->done, e, false);
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
    rt.call_at(std::max(rt.now(), r->sync_at), [d = std::exchange(r->done[um], nullptr)] {
      if (d) d(nullptr);
    });
  };
  for (std::size_t m = 0; m < members_.size(); ++m) complete(run, static_cast<int>(m));
  rt.call_at(data_at, [this, run, plan = std::move(plan), complete] {
    for (const auto& f : plan.flows) {
      const int src = f.src_rank;
      const int dst = f.dst_rank;
      const auto route = plan.route(f);
      fabric_.start_flow(std::vector<int>(route.begin(), route.end()), f.wire_bytes, f.latency,
                            [this, run, src, dst, complete](int failed) {
                              if (failed != FlowModel::kNoFailure) {
                                if (run->failed) return;
                                run->failed = true;
                                untrack(run->id);
                                fail_waiting(run->done,
                                             fabric_.error_for_channel(failed, run->op_name,
                                                                       members_[static_cast<std::size_t>(src)]),
                                             true);
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
