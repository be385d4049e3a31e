#include "emu/validate/fabric_rows.h"

#include <optional>
#include <string>

#include "emu/rt/virtual_runtime.h"
#include "fabric/fabric_rdma.h"
#include "fabric/measured_nccl_table.h"
#include "fabric/probe.h"
#include "fabric/profile_loader.h"

namespace nvl::emu {

namespace {

using fabric::ClusterSpec;

constexpr std::uint64_t kTopK = 8;
constexpr std::uint64_t kBf16TokenBytes = 7168 * 2;  // DeepSeek-V3 hidden 7168 in BF16 (REFERENCE.md §1.3)
// DeepEP low-latency dispatch sends FP8 with one FP32 scale per 128 channels ([2nd] deepseek-ai/DeepEP README).
constexpr std::uint64_t kFp8TokenBytes = 7168 + 7168 / 128 * 4;

std::vector<hal::DeviceId> first_gpus(int n) {
  std::vector<hal::DeviceId> m(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) m[static_cast<std::size_t>(i)] = i;
  return m;
}

// Uniform top-k routing: each of a rank's tokens sends top_k copies spread evenly over the EP ranks (the
// message size the TensorRT-LLM blog and DeepEP use: top_k x tokens x hidden); copies to itself stay local.
double a2a_us(const ClusterSpec& spec, int ep, std::uint64_t tokens, std::uint64_t token_bytes, hal::AllToAllRole role) {
  const std::uint64_t per_pair = tokens * kTopK * token_bytes / static_cast<std::uint64_t>(ep);
  return fabric::time_collective(spec, first_gpus(ep), fabric::uniform_all_to_all(ep, per_pair, role)).microseconds();
}

void trtllm_rows(std::vector<CalibrationRow>& rows) {
  const ClusterSpec spec = fabric::make_cluster("gb200-nvl72", 1);
  struct Cell {
    int ep;
    int tokens;
    double dispatch_us, combine_us;
  };
  // REFERENCE.md §1.3, TensorRT-LLM tech blog 18: the 8 rows of the table.
  const Cell cells[] = {{8, 1, 18.9, 31.0},     {8, 128, 31.7, 38.1},   {8, 2048, 311.8, 322.6},
                        {16, 2048, 343.3, 348.4}, {32, 2048, 373.7, 369.5}, {64, 1, 27.8, 32.6},
                        {64, 128, 41.6, 44.5},  {64, 2048, 399.2, 372.1}};
  for (const Cell& c : cells) {
    for (const bool combine : {false, true}) {
      const std::string phase = combine ? "combine" : "dispatch";
      const auto role = combine ? hal::AllToAllRole::moe_combine : hal::AllToAllRole::moe_dispatch;
      rows.push_back(row("a2a_gb200_ep" + std::to_string(c.ep) + "_bs" + std::to_string(c.tokens) + "_" + phase,
                         RowBasis::calibrated,
                         "TensorRT-LLM NVLink one-sided " + phase + ", GB200 NVL72, EP" + std::to_string(c.ep) + ", " +
                             std::to_string(c.tokens) + " tokens/rank, BF16 hidden 7168, top-8",
                         "us", "REFERENCE.md §1.3 (TensorRT-LLM tech blog 18)",
                         combine ? c.combine_us : c.dispatch_us,
                         a2a_us(spec, c.ep, static_cast<std::uint64_t>(c.tokens), kBf16TokenBytes, role), 15));
    }
  }
}

void deepep_rows(std::vector<CalibrationRow>& rows) {
  struct Cell {
    int ep;
    double dispatch_us, combine_us;
  };
  // REFERENCE.md §1.3, deepseek-ai/DeepEP: low-latency kernels, 128 tokens, hidden 7168, top-8, H800 + CX7.
  const Cell cells[] = {{8, 77, 114}, {16, 118, 195}, {32, 155, 273}, {64, 173, 314}};
  for (const Cell& c : cells) {
    const ClusterSpec spec = fabric::make_cluster("hgx-h800", c.ep / 8);
    for (const bool combine : {false, true}) {
      const std::string phase = combine ? "combine" : "dispatch";
      rows.push_back(row("deepep_ll_h800_ep" + std::to_string(c.ep) + "_" + phase, RowBasis::calibrated,
                         "DeepEP low-latency " + phase + ", " + std::to_string(c.ep / 8) +
                             " x HGX H800 + CX7, EP" + std::to_string(c.ep) + ", 128 tokens/rank, top-8",
                         "us", "REFERENCE.md §1.3 (deepseek-ai/DeepEP)", combine ? c.combine_us : c.dispatch_us,
                         a2a_us(spec, c.ep, 128, combine ? kBf16TokenBytes : kFp8TokenBytes,
                                combine ? hal::AllToAllRole::moe_combine : hal::AllToAllRole::moe_dispatch),
                         20));
    }
  }
}

void nccl_row(std::vector<CalibrationRow>& rows) {
  const ClusterSpec spec = fabric::make_cluster("hgx-h100", 1);
  constexpr int n = 8;
  constexpr std::uint64_t bytes = 8ULL << 30;  // nccl-tests' large-message end
  std::vector<hal::CollectiveOp> ops(n);
  for (auto& op : ops) {
    op.kind = hal::CollectiveKind::all_reduce;
    op.name = "allreduce";
    op.bytes = bytes;
  }
  const double t = fabric::time_collective(spec, first_gpus(n), ops).seconds();
  const double busbw = static_cast<double>(bytes) / t * fabric::nccl_bus_factor(hal::CollectiveKind::all_reduce, n) / 1e9;
  // Independent: hgx-h100 times all-reduce from the measured nccl-tests table (2.29.2, up to 512 MiB);
  // this 8 GiB figure of another NCCL version and machine set nothing.
  rows.push_back(row("nccl_allreduce_h100x8", RowBasis::independent, "NCCL all-reduce bus bandwidth, 8 x H100, 8 GiB",
                     "GB/s", "REFERENCE.md §1.3 (NVIDIA/nccl-tests issue 212)", 480, busbw, 15));
}

void mooncake_row(std::vector<CalibrationRow>& rows) {
  // Two HGX H800 nodes, 8 x 400 Gb RoCE each; 40 GB from host memory to host memory, striped over the
  // 8 NIC pairs as the transfer engine does.
  rt::VirtualRuntime rt;
  fabric::Fabric fab(rt, fabric::make_cluster("hgx-h800", 2), fabric::FabricOptions{rt::Duration()});
  fabric::FabricRdma rdma(fab);
  constexpr std::uint64_t total = 40'000'000'000ULL;
  constexpr int nics = 8;
  rt::Time last;
  std::optional<std::string> failure;
  for (int n = 0; n < nics; ++n) {
    const auto src = rdma.register_host_memory(0, total / nics, n);
    const auto dst = rdma.register_host_memory(1, total / nics, n);
    hal::RdmaOp op;
    op.local = src;
    op.remote = dst;
    op.bytes = total / nics;
    op.path = hal::RdmaPath::scale_out;
    op.name = "mooncake.stripe" + std::to_string(n);
    rdma.write(op, [&](const hal::HalError* e) {
      if (e != nullptr) failure = e->what();
      last = std::max(last, rt.now());
    });
  }
  rt.run();
  const double gbps = failure ? 0.0 : static_cast<double>(total) / (last - rt::Time::zero()).seconds() / 1e9;
  // Independent: the RDMA efficiency comes from PegaFlow's per-NIC figure, not this one.
  rows.push_back(row("mooncake_te_8x400g", RowBasis::independent, "Mooncake transfer engine, 40 GB host to host over 8 x 400 Gb RoCE (HGX H800)",
                     "GB/s", "REFERENCE.md §1.3 (kvcache-ai/Mooncake README)", 190, gbps, 15));
}

}  // namespace

std::vector<CalibrationRow> fabric_calibration_rows() {
  std::vector<CalibrationRow> rows;
  trtllm_rows(rows);
  deepep_rows(rows);
  nccl_row(rows);
  mooncake_row(rows);
  return rows;
}

}  // namespace nvl::emu
