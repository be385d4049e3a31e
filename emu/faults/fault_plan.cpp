#include "emu/faults/fault_plan.h"

#include <algorithm>
#include <array>
#include <utility>

#include <nlohmann/json.hpp>

#include "emu/rt/errors.h"
#include "emu/rt/json_reader.h"
#include "fabric/profile_loader.h"
#include "fabric/topology.h"

namespace nvl::emu {

namespace {

constexpr std::array<std::pair<FaultKind, std::string_view>, 11> kKinds = {{
    {FaultKind::gpu_lost, "gpu_lost"},
    {FaultKind::gpu_ecc, "gpu_ecc"},
    {FaultKind::nvlink_error, "nvlink_error"},
    {FaultKind::link_degrade, "link_degrade"},
    {FaultKind::link_flap, "link_flap"},
    {FaultKind::nic_down, "nic_down"},
    {FaultKind::partition, "partition"},
    {FaultKind::straggler, "straggler"},
    {FaultKind::grace_memory_error, "grace_memory_error"},
    {FaultKind::worker_crash, "worker_crash"},
    {FaultKind::router_restart, "router_restart"},
}};

bool gpu_target(FaultKind k) {
  return k == FaultKind::gpu_lost || k == FaultKind::gpu_ecc || k == FaultKind::nvlink_error ||
         k == FaultKind::straggler || k == FaultKind::grace_memory_error || k == FaultKind::worker_crash;
}
// Only the normal ranks have a Grace KV tier.
bool normal_only(FaultKind k) { return k == FaultKind::grace_memory_error; }

class TargetReader {
 public:
  TargetReader(const std::string& file, const FaultContext& ctx)
      : file_(file), ctx_(ctx), topo_(fabric::make_cluster(ctx.fabric_profile, static_cast<int>(ctx.units))) {}

  FaultTarget read(const nlohmann::json& t, FaultKind kind, const std::string& where) const {
    FaultTarget out;
    out.text = t.is_string() ? t.get<std::string>() : t.dump();
    if (gpu_target(kind)) {
      out.type = FaultTarget::Type::gpu;
      out.gpu = gpu_of(t, where);
      if (normal_only(kind) && !contains(ctx_.rank_gpus, out.gpu)) {
        fail(where, "GPU " + std::to_string(out.gpu) + " is not the first GPU of a decoding DP rank: " +
                        std::string(to_string(kind)) + " hits a DP rank's Grace KV tier, which prefill instances have not");
      }
      out.text = "gpu " + std::to_string(out.gpu);
      return out;
    }
    switch (kind) {
      case FaultKind::link_degrade:
      case FaultKind::link_flap: {
        if (!t.is_array() || t.size() != 2 || !t[0].is_string() || !t[1].is_string()) {
          fail(where, "expected a link as two element names, e.g. [\"rack0/tray0/gpu0\", \"rack0/nvswitch0\"]");
        }
        out.type = FaultTarget::Type::link;
        out.a = t[0].get<std::string>();
        out.b = t[1].get<std::string>();
        const int a = element(out.a, where), b = element(out.b, where);
        if (topo_.links_between(a, b).empty()) fail(where, "no link between '" + out.a + "' and '" + out.b + "'");
        out.text = out.a + "<->" + out.b;
        return out;
      }
      case FaultKind::nic_down: {
        if (!t.is_string()) fail(where, "expected a NIC's element name, e.g. \"rack0/tray0/nic0\"");
        out.type = FaultTarget::Type::element;
        out.a = t.get<std::string>();
        if (topo_.nic_index(element(out.a, where)) < 0) fail(where, "'" + out.a + "' is not a NIC");
        return out;
      }
      case FaultKind::partition: {
        if (!t.is_object() || !t.contains("a") || !t.contains("b") || t.size() != 2) {
          fail(where, "expected {\"a\": hosts, \"b\": hosts}, each \"prefill\", \"normal\" or a list of host ids");
        }
        out.type = FaultTarget::Type::hosts;
        out.hosts_a = hosts(t["a"], where + ".a");
        out.hosts_b = hosts(t["b"], where + ".b");
        for (std::int64_t h : out.hosts_a) {
          if (std::find(out.hosts_b.begin(), out.hosts_b.end(), h) != out.hosts_b.end()) {
            fail(where, "host " + std::to_string(h) + " is on both sides");
          }
        }
        return out;
      }
      default:
        fail(where, "unexpected");
    }
  }

  std::int64_t gpu_count() const { return ctx_.cluster_gpus; }

 private:
  static bool contains(const std::vector<std::int64_t>& gpus, std::int64_t g) {
    return std::find(gpus.begin(), gpus.end(), g) != gpus.end();
  }
  [[noreturn]] void fail(const std::string& where, const std::string& problem) const {
    throw rt::InputError(file_, where, problem);
  }
  int element(const std::string& name, const std::string& where) const {
    const int e = topo_.element(name);
    if (e < 0) fail(where, "no fabric element named '" + name + "' in " + ctx_.fabric_profile);
    return e;
  }
  std::int64_t gpu_of(const nlohmann::json& t, const std::string& where) const {
    const std::string expected = "expected a GPU index (0 to " + std::to_string(gpu_count() - 1) +
                                 "), \"normal rank N\", \"prefill\" or \"prefill gpu N\"";
    std::int64_t g = -1;
    if (t.is_number_integer()) {
      g = t.get<std::int64_t>();
    } else if (t.is_string()) {
      const std::string s = t.get<std::string>();
      const auto number_after = [&](std::string_view prefix) -> std::int64_t {
        const std::string rest = s.substr(prefix.size());
        if (rest.empty() || !std::all_of(rest.begin(), rest.end(), [](char c) { return c >= '0' && c <= '9'; })) {
          fail(where, expected);
        }
        return std::stoll(rest);
      };
      const auto ranks = static_cast<std::int64_t>(ctx_.rank_gpus.size());
      const auto prefill = static_cast<std::int64_t>(ctx_.prefill_gpus.size());
      if (s == "prefill") {
        if (prefill == 0) fail(where, "the deployment has no prefill GPUs");
        g = ctx_.prefill_gpus.front();
      } else if (s.starts_with("normal rank ")) {
        const std::int64_t r = number_after("normal rank ");
        if (r >= ranks) fail(where, "no normal rank " + std::to_string(r) + " (" + std::to_string(ranks) + " ranks)");
        g = ctx_.rank_gpus[static_cast<std::size_t>(r)];
      } else if (s.starts_with("prefill gpu ")) {
        const std::int64_t p = number_after("prefill gpu ");
        if (p >= prefill) fail(where, "no prefill GPU " + std::to_string(p) + " (" + std::to_string(prefill) + ")");
        g = ctx_.prefill_gpus[static_cast<std::size_t>(p)];
      } else {
        fail(where, expected + ", got \"" + s + "\"");
      }
    } else {
      fail(where, expected);
    }
    if (g < 0 || g >= gpu_count()) fail(where, "no GPU " + std::to_string(g) + ": " + expected);
    if (!contains(ctx_.decoding_gpus, g) && !contains(ctx_.prefill_gpus, g)) {
      fail(where, "GPU " + std::to_string(g) + " is in no pool of the deployment: a fault there would change nothing");
    }
    return g;
  }
  std::vector<std::int64_t> hosts_of_gpus(const std::vector<std::int64_t>& gpus) const {
    std::vector<std::int64_t> out;
    for (std::int64_t g : gpus) {
      const std::int64_t h = topo_.gpu(static_cast<int>(g)).host;
      if (std::find(out.begin(), out.end(), h) == out.end()) out.push_back(h);
    }
    return out;
  }
  std::vector<std::int64_t> hosts(const nlohmann::json& side, const std::string& where) const {
    if (side == "normal") return hosts_of_gpus(ctx_.decoding_gpus);
    if (side == "prefill") {
      if (ctx_.prefill_gpus.empty()) fail(where, "the deployment has no prefill GPUs");
      return hosts_of_gpus(ctx_.prefill_gpus);
    }
    if (!side.is_array() || side.empty()) fail(where, "expected \"prefill\", \"normal\" or a non-empty list of host ids");
    std::vector<std::int64_t> out;
    for (const auto& h : side) {
      if (!h.is_number_integer() || h.get<std::int64_t>() < 0 || h.get<std::int64_t>() >= topo_.host_count()) {
        fail(where, "host ids are 0 to " + std::to_string(topo_.host_count() - 1) + ", got " + h.dump());
      }
      out.push_back(h.get<std::int64_t>());
    }
    return out;
  }

  std::string file_;
  FaultContext ctx_;
  fabric::Topology topo_;
};

constexpr std::int64_t kMaxFlapCycles = 1'000'000;

// The kind's own parameters; keys another kind uses are left unread, so finish() names them.
FaultParams read_params(rt::JsonReader& r, FaultKind kind, std::int64_t nvlink_ports) {
  FaultParams p;
  const auto duration = [&](bool required) {
    if (required || r.has("duration_s")) p.duration_s = r.seconds("duration_s", rt::NumberRule::positive);
  };
  const auto share = [&](std::string_view key) {
    p.factor = r.number(key, rt::NumberRule::fraction);
    if (p.factor >= 1) r.fail(key, "a fault's share must be below 1, got " + std::to_string(p.factor));
  };
  switch (kind) {
    case FaultKind::straggler:
      share("factor");
      duration(true);
      break;
    case FaultKind::link_degrade:
      share("factor");
      duration(false);
      break;
    case FaultKind::nvlink_error:
      if (r.has("links")) p.links = r.integer("links", 1, nvlink_ports - 1);
      if (r.has("mode")) {
        const std::string mode = r.string("mode");
        if (mode != "down" && mode != "degrade") r.fail("mode", "expected \"down\" or \"degrade\", got \"" + mode + "\"");
        p.degrade = mode == "degrade";
      }
      if (p.degrade) share("factor");
      duration(false);
      break;
    case FaultKind::link_flap:
      if (r.has("down_s")) p.down_s = r.seconds("down_s", rt::NumberRule::positive);
      if (r.has("up_s")) p.up_s = r.seconds("up_s", rt::NumberRule::non_negative);
      if (r.has("cycles")) p.cycles = r.integer("cycles", 1, kMaxFlapCycles);
      if ((p.down_s + p.up_s) * static_cast<double>(p.cycles) > rt::kMaxSeconds) {
        r.fail("cycles", "the flapping must end within a year: (down_s + up_s) x cycles is too long");
      }
      break;
    case FaultKind::nic_down:
    case FaultKind::partition:
      duration(false);
      break;
    default:
      break;
  }
  return p;
}

}  // namespace

std::string_view to_string(FaultKind k) {
  for (const auto& [kind, name] : kKinds) {
    if (kind == k) return name;
  }
  return "fault";
}

FaultPlan read_fault_plan(const nlohmann::json& faults, const std::string& file, const FaultContext& ctx) {
  if (!faults.is_array()) throw rt::InputError(file, "faults", "expected a list of faults");
  const TargetReader targets(file, ctx);
  const std::int64_t nvlink_ports = fabric::make_cluster(ctx.fabric_profile, static_cast<int>(ctx.units)).node.nvlink_lanes_per_gpu;
  FaultPlan plan;
  for (std::size_t i = 0; i < faults.size(); ++i) {
    const std::string where = "faults[" + std::to_string(i) + "]";
    if (!faults[i].is_object()) throw rt::InputError(file, where, "expected an object with a \"kind\"");
    // The target is read apart (its form depends on the kind); the rest strictly, key by key.
    nlohmann::json body = faults[i];
    std::optional<nlohmann::json> target;
    if (body.contains("target")) {
      target = body["target"];
      body.erase("target");
    }
    rt::JsonReader r(body, file, where);
    const std::string kind_name = r.string("kind");
    const auto it = std::find_if(kKinds.begin(), kKinds.end(), [&](const auto& k) { return k.second == kind_name; });
    if (it == kKinds.end()) {
      std::string list;
      for (const auto& k : kKinds) list += (list.empty() ? "" : ", ") + std::string(k.second);
      r.fail("kind", "'" + kind_name + "' is not a fault kind (" + list + ")");
    }
    const FaultKind kind = it->first;
    const bool needs_target = kind != FaultKind::router_restart;
    if (r.has("rate_per_hour")) {
      RandomFault f;
      f.kind = kind;
      f.rate_per_hour = r.number("rate_per_hour", rt::NumberRule::positive);
      if (r.has("at_s")) r.fail("at_s", "a random fault has a rate_per_hour, not an at_s");
      if (target) throw rt::InputError(file, where + ".target", "a random fault picks from \"targets\" (a list)");
      if (needs_target) {
        const nlohmann::json& list = r.array("targets");
        if (list.empty()) r.fail("targets", "expected at least one target");
        for (std::size_t j = 0; j < list.size(); ++j) {
          f.targets.push_back(targets.read(list[j], kind, where + ".targets[" + std::to_string(j) + "]"));
        }
      }
      if (r.has("start_s")) f.start_s = r.seconds("start_s", rt::NumberRule::non_negative);
      if (r.has("end_s")) {
        f.end_s = r.seconds("end_s", rt::NumberRule::positive);
        if (*f.end_s <= f.start_s) r.fail("end_s", "must be after start_s");
      }
      f.params = read_params(r, kind, nvlink_ports);
      r.finish();
      plan.random.push_back(std::move(f));
      continue;
    }
    ScheduledFault f;
    f.kind = kind;
    if (!r.has("at_s")) r.fail("at_s", "a fault needs a time (at_s) or a rate (rate_per_hour)");
    f.at_s = r.seconds("at_s", rt::NumberRule::non_negative);
    if (needs_target) {
      if (!target) throw rt::InputError(file, where + ".target", "missing: " + kind_name + " needs a target");
      f.target = targets.read(*target, kind, where + ".target");
    } else if (target) {
      throw rt::InputError(file, where + ".target", "router_restart takes no target");
    }
    f.params = read_params(r, kind, nvlink_ports);
    r.finish();
    plan.scheduled.push_back(std::move(f));
  }
  return plan;
}

}  // namespace nvl::emu
