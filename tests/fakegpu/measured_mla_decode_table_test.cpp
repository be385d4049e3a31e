// Measured MLA decode tables: held-out points predicted within the #18 targets (median |error| <= 5%, p90
// <= 15% per table), dense MLA decode attention priced from them in place of the roofline (and nothing
// else), and bad table files named by line.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include "emu/rt/errors.h"
#include "fakegpu/cost_model.h"
#include "fakegpu/measured_mla_decode_table.h"
#include "fakegpu/profile_library.h"
#include "measured_table_rows.h"
#include "rig.h"

namespace nvl::fakegpu {
namespace measured_mla_decode_table_test {

using hal::DType;
using testing::Rig;

struct Point {
  std::string dtype;
  std::int64_t heads, batch, kv_len;
  double us;
  std::string line;
};

std::filesystem::path table_file(const std::string& gpu, const std::string& library) {
  return default_profile_dir() / "measured" / gpu / ("mla_decode_" + library + ".csv");
}

std::vector<Point> read_points(const std::filesystem::path& file) {
  return testing::points_of<Point>(file, [](std::istream& in, Point& p) {
    in >> p.dtype >> p.heads >> p.batch >> p.kv_len >> p.us;
  });
}

std::filesystem::path write_table(const std::vector<Point>& points, const std::string& name) {
  std::vector<std::string> rows;
  for (const Point& p : points) rows.push_back(p.line);
  return testing::write_rows("mla_" + name, "kv_dtype,heads,batch,kv_len,latency_us", rows);
}

// A roofline proportional to the KV read: what the held-out checks need of one (beyond-range points are
// not held out), and what they would use there.
double kv_roofline(double batch, double kv_len) { return batch * kv_len; }

struct Errors {
  double median, p90;
  std::size_t count;
};
Errors errors_of(std::vector<double> e) {
  std::sort(e.begin(), e.end());
  return {e[e.size() / 2], e[static_cast<std::size_t>(0.9 * static_cast<double>(e.size() - 1))], e.size()};
}

// Two held-out checks per table: every third interior kv_len of every (dtype, heads, batch) curve, and every
// other interior batch curve whole (read across batches from its neighbours).
TEST(MeasuredMlaDecodeTable, HeldOutPointsArePredictedWithinTheTargets) {
  for (const std::string gpu : {"gb300", "gb200", "b200", "h200", "h100"}) {
    for (const std::string library : {"sglang", "trtllm"}) {
      const std::vector<Point> all = read_points(table_file(gpu, library));
      ASSERT_GT(all.size(), 1000u) << gpu << " " << library;
      using Curve = std::tuple<std::string, std::int64_t, std::int64_t>;
      std::map<Curve, std::vector<const Point*>> curves;
      std::map<std::pair<std::string, std::int64_t>, std::vector<std::int64_t>> batches;
      for (const Point& p : all) {
        curves[{p.dtype, p.heads, p.batch}].push_back(&p);
        auto& b = batches[{p.dtype, p.heads}];
        if (b.empty() || b.back() != p.batch) b.push_back(p.batch);
      }
      for (const bool across_batches : {false, true}) {
        std::vector<Point> kept;
        std::vector<const Point*> held;
        for (const auto& [key, points] : curves) {
          const auto& b = batches[{std::get<0>(key), std::get<1>(key)}];
          const auto at = std::find(b.begin(), b.end(), std::get<2>(key)) - b.begin();
          const bool held_curve = across_batches && at > 0 && at + 1 < static_cast<long>(b.size()) && at % 2 == 1;
          for (std::size_t i = 0; i < points.size(); ++i) {
            const bool interior = i > 0 && i + 1 < points.size();
            const bool hold = across_batches ? held_curve : interior && i % 3 == 1;
            if (hold) {
              held.push_back(points[i]);
            } else {
              kept.push_back(*points[i]);
            }
          }
        }
        const MeasuredMlaDecodeTable t = MeasuredMlaDecodeTable::load(write_table(kept, gpu + library));
        std::vector<double> e;
        for (const Point* p : held) {
          // Across batches, only where both neighbouring batches reach this kv_len (else it is util-held).
          const auto got = t.time_ns(hal::dtype_from_string(p->dtype), p->heads, static_cast<double>(p->batch),
                                     static_cast<double>(p->kv_len), kv_roofline);
          ASSERT_TRUE(got.has_value());
          e.push_back(std::abs(*got / (p->us * 1e3) - 1));
        }
        const Errors r = errors_of(e);
        std::printf("%s %s mla decode, %s held out: %zu points, median %.1f%%, p90 %.1f%%\n", gpu.c_str(),
                    library.c_str(), across_batches ? "batches" : "kv lengths", r.count, 100 * r.median, 100 * r.p90);
        EXPECT_LE(r.median, 0.05) << gpu << " " << library << " " << across_batches;
        EXPECT_LE(r.p90, 0.15) << gpu << " " << library << " " << across_batches;
      }
    }
  }
}

// DeepSeek-V3 MLA decode on GB300 (128 local heads under DP attention, BF16 KV).
hal::KernelDesc mla_decode(std::int64_t seqs, std::int64_t queries_per_seq, std::int64_t kv_len) {
  const std::int64_t q = seqs * queries_per_seq;
  hal::AttentionShape shape{seqs, q, seqs * kv_len, kv_len, q * kv_len, 128, 1, 576, 512, 0};
  return hal::KernelDesc{hal::KernelKind::attn_decode, DType::bf16,
                         static_cast<std::uint64_t>(2 * q * kv_len * 128 * (576 + 512)),
                         static_cast<std::uint64_t>(seqs * kv_len * 576 * 2 + q * 128 * 576 * 2), "attn.decode", shape};
}

TEST(MeasuredMlaDecodeTable, DenseMlaDecodeCostsWhatTheTableSaysAndTheRestTheRoofline) {
  Rig rig("gb300");
  const DeviceProfile& profile = rig.fleet->profile();
  CostModel plain(profile, 0);
  CostModel measured(profile, 0);
  MeasuredKernels tables;
  tables.mla_decode =
      std::make_shared<const MeasuredMlaDecodeTable>(MeasuredMlaDecodeTable::load(table_file("gb300", "sglang")));
  measured.use_measured_kernels(tables);
  const std::vector<Point> all = read_points(table_file("gb300", "sglang"));
  const auto at = [&](std::int64_t batch, std::int64_t kv_len) {
    const auto p = std::find_if(all.begin(), all.end(), [&](const Point& q) {
      return q.dtype == "bf16" && q.heads == 128 && q.batch == batch && q.kv_len == kv_len;
    });
    EXPECT_NE(p, all.end()) << batch << " " << kv_len;
    return p == all.end() ? 0.0 : p->us * 1e3;
  };
  const double node = static_cast<double>(profile.graph_node.ns());
  // A measured point: its time.
  const KernelCost c = measured.cost(mla_decode(256, 1, 2048), profile.graph_node);
  EXPECT_TRUE(c.measured);
  EXPECT_NEAR(price_ns(c, {}), node + at(256, 2048), 1e-6);
  // Between batches 256 and 512 and kv lengths 2048 and 4096, at the middle of each: the mean of the four.
  const double mid = (at(256, 2048) + at(256, 4096) + at(512, 2048) + at(512, 4096)) / 4;
  EXPECT_NEAR(price_ns(measured.cost(mla_decode(384, 1, 3072), profile.graph_node), {}), node + mid, 1e-3);
  // MTP, two queries a sequence: the one-query time at the measured utilisation, scaled by the roofline.
  // One query: 256 x 2048 x 576 BF16 KV is 604 MB, plus 256 x 128 heads x (576 + 512) x 2 B of queries in and
  // outputs out, 71 MB: 675 MB (84 us at 8 TB/s), against 2 x 256 x 2048 x 128 x 1088 = 146 GFLOP (58 us at
  // 2.5 PFLOP/s): memory-bound. Two: 746 MB (93 us) against 292 GFLOP (117 us): compute-bound, x1.39.
  const double mtp = price_ns(measured.cost(mla_decode(256, 2, 2048), profile.graph_node), {}) - node;
  const double one_query_roofline = std::max(146.0e9 / 2.5e15, 675.0e6 / 8e12);
  const double two_query_roofline = std::max(292.0e9 / 2.5e15, 746.0e6 / 8e12);
  EXPECT_NEAR(mtp / at(256, 2048), two_query_roofline / one_query_roofline, 0.01);
  // The roofline's elsewhere: DSA's sparse decode, a head count the table lacks, GQA, no shape.
  hal::KernelDesc sparse = mla_decode(256, 1, 2048);
  std::get<hal::AttentionShape>(sparse.shape).sparse_topk = 2048;
  EXPECT_FALSE(measured.cost(sparse, profile.graph_node).measured);
  hal::KernelDesc eight_heads = mla_decode(256, 1, 2048);
  std::get<hal::AttentionShape>(eight_heads.shape).heads = 8;
  EXPECT_FALSE(measured.cost(eight_heads, profile.graph_node).measured);
  hal::KernelDesc gqa = mla_decode(256, 1, 2048);
  std::get<hal::AttentionShape>(gqa.shape).kv_heads = 8;
  EXPECT_FALSE(measured.cost(gqa, profile.graph_node).measured);
  hal::KernelDesc shapeless = mla_decode(256, 1, 2048);
  shapeless.shape = {};
  EXPECT_FALSE(measured.cost(shapeless, profile.graph_node).measured);
  // The table is slower than the roofline here (BF16 KV at 256 x 2048: 604 MB at 8 TB/s x 0.896 is 84 us).
  EXPECT_GT(at(256, 2048), price_ns(plain.cost(mla_decode(256, 1, 2048), profile.graph_node), {}) - node);
}

TEST(MeasuredMlaDecodeTable, BadFilesAreNamedByLine) {
  const auto error_of = testing::load_error<MeasuredMlaDecodeTable>;
  const std::string h = "kv_dtype,heads,batch,kv_len,latency_us\n";
  EXPECT_NE(error_of("heads\n").find("line 1: expected the header kv_dtype,heads,batch,kv_len,latency_us"),
            std::string::npos);
  EXPECT_NE(error_of(h + "fp9,128,1,2,3\n").find("line 2: 'fp9' is not a dtype"), std::string::npos);
  EXPECT_NE(error_of(h + "bf16,128,1,2\n").find("line 2: expected 5 fields"), std::string::npos);
  EXPECT_NE(error_of(h + "bf16,0,1,2,3\n").find("line 2: heads, batch, kv_len must be positive"), std::string::npos);
  EXPECT_NE(error_of(h + "bf16,128,1,2,-3\n").find("line 2:"), std::string::npos);
  EXPECT_NE(error_of(h + "bf16,128,1,4,3\nbf16,128,1,2,3\n").find("line 3: kv_len 2 repeats or goes back"),
            std::string::npos);
  EXPECT_NE(error_of(h + "bf16,128,2,4,3\nbf16,128,1,4,3\n").find("line 3: rows must be sorted"), std::string::npos);
  EXPECT_NE(error_of(h + "bf16,128,1,4,3\nbf16,64,1,4,3\nbf16,128,2,4,3\n").find("line 4: rows must be sorted"),
            std::string::npos);
  EXPECT_NE(error_of("").find("no header line"), std::string::npos);
  EXPECT_THROW((void)MeasuredMlaDecodeTable::load("/no/such/mla.csv"), rt::InputError);
}

}  // namespace measured_mla_decode_table_test
}  // namespace nvl::fakegpu
