// Measured MoE tables (the fused op routed on the GPU, and SGLang's experts behind DeepEP's two dispatch
// modes): held-out token counts predicted within the #18 targets (median |error| <= 5%, p90 <= 15% per
// table, one known miss named), the op's whole key asked for exactly, utilisation held beyond the last token
// count, and bad table files named by line. How the engine's routed experts are priced from them is
// tested with the engine's own kernels (tests/engine/fused_moe_pricing_test.cpp).
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "emu/rt/errors.h"
#include "fakegpu/measured_moe_table.h"
#include "fakegpu/profile_library.h"
#include "measured_table_rows.h"

namespace nvl::fakegpu {
namespace measured_moe_table_test {

struct Point {
  std::string dtype;
  std::int64_t hidden, inter, topk, experts, tp, ep, tokens;
  double us;
  std::string line;
  // The op's key but its EP size and tokens: the shape whose EP sizes a table measures.
  std::string shape() const {
    std::ostringstream key;
    key << dtype << ',' << hidden << ',' << inter << ',' << topk << ',' << experts << ',' << tp;
    return key.str();
  }
  // The curve along tokens the point lies on.
  std::string curve() const { return shape() + ',' + std::to_string(ep); }
  hal::FusedMoeShape op() const { return {tokens, topk, experts, inter, tp, ep}; }
};

// `table`: the file's name without "moe_" and ".csv" ("sglang", "deepep_ll_sglang", ...).
std::filesystem::path table_file(const std::string& gpu, const std::string& table) {
  return default_profile_dir() / "measured" / gpu / ("moe_" + table + ".csv");
}

std::vector<Point> read_points(const std::filesystem::path& file) {
  return testing::points_of<Point>(file, [](std::istream& in, Point& p) {
    in >> p.dtype >> p.hidden >> p.inter >> p.topk >> p.experts >> p.tp >> p.ep >> p.tokens >> p.us;
  });
}

const std::string kHeader = "dtype,hidden,inter,topk,experts,moe_tp,moe_ep,tokens,latency_us";

std::filesystem::path write_table(const std::vector<Point>& points, const std::string& name) {
  std::vector<std::string> rows;
  for (const Point& p : points) rows.push_back(p.line);
  return testing::write_rows("moe_" + name, kHeader, rows);
}

// Held-out points lie inside their curves, where the roofline is never asked.
double unused_roofline(double tokens, std::int64_t) { return tokens; }

// Every third interior token count of every curve held out, read from its neighbours. The one miss:
// GB300's DeepEP normal-mode table, whose floor (about 500-650 us up to 16K tokens) scatters by up to 45%
// between neighbouring sizes (EP16: 565 us at 256 tokens, 829 at 512, 615 at 1024), measurement noise
// no reading between neighbours can predict; bounded at its measured 11.7% median and 22.8% p90.
TEST(MeasuredMoeTable, HeldOutTokenCountsArePredictedWithinTheTargets) {
  struct Table {
    std::string name;
    std::size_t min_rows;
  };
  for (const std::string gpu : {"gb300", "gb200", "b200", "h200", "h100"}) {
    for (const Table& table : {Table{"sglang", 1000}, Table{"trtllm", 1000}, Table{"deepep_ll_sglang", 50},
                               Table{"deepep_normal_sglang", 50}}) {
      const std::string& library = table.name;
      const std::vector<Point> all = read_points(table_file(gpu, library));
      ASSERT_GT(all.size(), table.min_rows) << gpu << " " << library;
      std::vector<std::vector<const Point*>> curves;  // in the file's order
      for (const Point& p : all) {
        if (curves.empty() || curves.back().front()->curve() != p.curve()) curves.emplace_back();
        curves.back().push_back(&p);
      }
      std::vector<Point> kept;
      std::vector<const Point*> held;
      for (const auto& points : curves) {
        for (std::size_t i = 0; i < points.size(); ++i) {
          const bool hold = i > 0 && i + 1 < points.size() && i % 3 == 1;
          if (hold) {
            held.push_back(points[i]);
          } else {
            kept.push_back(*points[i]);
          }
        }
      }
      const MeasuredMoeTable t = MeasuredMoeTable::load(write_table(kept, gpu + library));
      std::vector<double> e;
      for (const Point* p : held) {
        const auto got = t.time_ns(hal::dtype_from_string(p->dtype), p->hidden, p->op(), unused_roofline);
        ASSERT_TRUE(got.has_value()) << p->line;
        e.push_back(std::abs(*got / (p->us * 1e3) - 1));
      }
      ASSERT_FALSE(e.empty());
      std::sort(e.begin(), e.end());
      const double median = e[e.size() / 2];
      const double p90 = e[static_cast<std::size_t>(0.9 * static_cast<double>(e.size() - 1))];
      std::printf("%s %s moe, tokens held out: %zu points, median %.1f%%, p90 %.1f%%\n", gpu.c_str(), library.c_str(),
                  e.size(), 100 * median, 100 * p90);
      const bool known_miss = gpu == "gb300" && library == "deepep_normal_sglang";
      EXPECT_LE(median, known_miss ? 0.12 : 0.05) << gpu << " " << library;
      EXPECT_LE(p90, known_miss ? 0.23 : 0.15) << gpu << " " << library;
    }
  }
}

// Every other interior EP size of every shape held out whole, read log-linearly in EP from the sizes either
// side. Not within the per-op targets, and not claimed to be: an EP size between measured ones is a gap
// the tables leave (SGLang's wide-EP tables skip EP8), and this says how well reading across it does:
// median 2-11%, p90 3-25% per table (GB300 normal mode worst, its floor scattering as above). Bounded at
// what it measures so that a change in the rule shows.
TEST(MeasuredMoeTable, HeldOutEpSizesAreReadFromTheirNeighbours) {
  for (const std::string gpu : {"gb300", "gb200", "b200", "h200", "h100"}) {
    for (const std::string library : {"sglang", "trtllm", "deepep_ll_sglang", "deepep_normal_sglang"}) {
      const std::vector<Point> all = read_points(table_file(gpu, library));
      // The EP sizes of each shape, ascending.
      std::map<std::string, std::set<std::int64_t>> sizes;
      for (const Point& p : all) sizes[p.shape()].insert(p.ep);
      const auto held_out = [&](const Point& p) {
        const auto& eps = sizes[p.shape()];
        const auto at = static_cast<std::size_t>(std::distance(eps.begin(), eps.find(p.ep)));
        return at % 2 == 1 && at + 1 < eps.size();
      };
      std::vector<Point> kept;
      for (const Point& p : all) {
        if (!held_out(p)) kept.push_back(p);
      }
      const MeasuredMoeTable t = MeasuredMoeTable::load(write_table(kept, gpu + library + "_ep"));
      std::vector<double> e;
      for (const Point& p : all) {
        if (!held_out(p)) continue;
        // Token counts beyond a neighbour's curve would need the roofline; those are left out.
        const auto got = t.time_ns(hal::dtype_from_string(p.dtype), p.hidden, p.op(), [](double, std::int64_t) {
          return std::numeric_limits<double>::quiet_NaN();
        });
        if (got && std::isfinite(*got)) e.push_back(std::abs(*got / (p.us * 1e3) - 1));
      }
      ASSERT_GT(e.size(), 10u) << gpu << " " << library;
      std::sort(e.begin(), e.end());
      const double median = e[e.size() / 2];
      const double p90 = e[static_cast<std::size_t>(0.9 * static_cast<double>(e.size() - 1))];
      std::printf("%s %s moe, EP sizes held out: %zu points, median %.1f%%, p90 %.1f%%\n", gpu.c_str(),
                  library.c_str(), e.size(), 100 * median, 100 * p90);
      EXPECT_LE(median, 0.12) << gpu << " " << library;
      EXPECT_LE(p90, 0.26) << gpu << " " << library;
    }
  }
}

TEST(MeasuredMoeTable, AnEpSizeBetweenMeasuredOnesIsReadLogLinearlyInEp) {
  // EP4 at 100 us and EP16 at 25 us, the same tokens: a time going as 1 / EP, which EP8 reads exactly as
  // 50 us; EP2 and EP32 lie outside the measured sizes.
  const MeasuredMoeTable t = MeasuredMoeTable::load(testing::write_rows(
      "moe_ep", kHeader,
      {"fp8,7168,2048,8,256,1,4,1024,100", "fp8,7168,2048,8,256,1,4,4096,400", "fp8,7168,2048,8,256,1,16,1024,25",
       "fp8,7168,2048,8,256,1,16,4096,100"}));
  const auto at = [&](std::int64_t ep, std::int64_t tokens) {
    return t.time_ns(hal::DType::fp8, 7168, hal::FusedMoeShape{tokens, 8, 256, 2048, 1, ep}, unused_roofline);
  };
  EXPECT_NEAR(*at(8, 1024), 50e3, 1e-6);
  EXPECT_NEAR(*at(8, 2048), std::sqrt(200.0 * 50.0) * 1e3, 1e-6);
  EXPECT_NEAR(*at(16, 4096), 100e3, 1e-6);
  EXPECT_FALSE(at(2, 1024).has_value());
  EXPECT_FALSE(at(32, 1024).has_value());
}

TEST(MeasuredMoeTable, TheWholeKeyIsAskedForExactly) {
  const std::vector<Point> all = read_points(table_file("b200", "sglang"));
  const MeasuredMoeTable t = MeasuredMoeTable::load(table_file("b200", "sglang"));
  // GLM-5 FP8 at MoE TP8, 16 tokens: the validate rows' decode.
  const auto& p = *std::find_if(all.begin(), all.end(), [](const Point& q) {
    return q.dtype == "fp8" && q.hidden == 6144 && q.tp == 8 && q.ep == 1 && q.tokens == 16;
  });
  const auto got = t.time_ns(hal::DType::fp8, 6144, p.op(), unused_roofline);
  ASSERT_TRUE(got.has_value());
  EXPECT_DOUBLE_EQ(*got, p.us * 1e3);
  EXPECT_TRUE(t.has(hal::DType::fp4));
  EXPECT_FALSE(t.has(hal::DType::fp16));
  const auto off = [&](auto change) {
    hal::FusedMoeShape op = p.op();
    change(op);
    return t.time_ns(hal::DType::fp8, 6144, op, unused_roofline).has_value();
  };
  EXPECT_FALSE(off([](auto& op) { op.tp = 3; }));
  EXPECT_FALSE(off([](auto& op) { op.ep = 512; })) << "beyond the measured EP sizes";
  EXPECT_FALSE(off([](auto& op) { op.topk = 6; }));
  EXPECT_FALSE(off([](auto& op) { op.experts = 160; }));
  EXPECT_FALSE(off([](auto& op) { op.expert_inter = 1536; }));
  EXPECT_FALSE(off([](auto& op) { op.tokens = 0; }));
  EXPECT_FALSE(t.time_ns(hal::DType::fp8, 5120, p.op(), unused_roofline).has_value()) << "no such hidden size";
  EXPECT_TRUE(t.time_ns(hal::DType::fp8, 7168, p.op(), unused_roofline).has_value()) << "DeepSeek's experts";
}

TEST(MeasuredMoeTable, BeyondTheLastTokenCountItsUtilisationIsHeld) {
  const MeasuredMoeTable t = MeasuredMoeTable::load(
      testing::write_rows("moe_beyond", kHeader, {"fp8,6144,2048,8,256,8,1,1,30", "fp8,6144,2048,8,256,8,1,100,200"}));
  const hal::FusedMoeShape op{400, 8, 256, 2048, 8, 1};
  // A roofline linear in tokens from 50 us at 100: four times the tokens, four times the time.
  const auto roofline = [](double tokens, std::int64_t) { return 500.0 * tokens; };
  EXPECT_DOUBLE_EQ(*t.time_ns(hal::DType::fp8, 6144, op, roofline), 800e3);
  // Between measured counts, linear: 50 tokens lie 49/99 of the way from 30 us to 200.
  EXPECT_DOUBLE_EQ(*t.time_ns(hal::DType::fp8, 6144, {50, 8, 256, 2048, 8, 1}, roofline),
                   (30 + 170 * 49.0 / 99) * 1e3);
}

TEST(MeasuredMoeTable, BadFilesAreNamedByLine) {
  const auto error_of = testing::load_error<MeasuredMoeTable>;
  const std::string h = kHeader + '\n';
  EXPECT_NE(error_of("hidden,inter\n").find("line 1: expected the header dtype,hidden,inter,topk,experts,moe_tp,moe_ep"),
            std::string::npos);
  EXPECT_NE(error_of(h + "fp9,6144,2048,8,256,8,1,1,30\n").find("line 2: 'fp9' is not a dtype"), std::string::npos);
  EXPECT_NE(error_of(h + "fp8,6144,2048,8,256,8,1,30\n").find("line 2: expected 9 fields"), std::string::npos);
  EXPECT_NE(error_of(h + "fp8,6144,2048,8,256,0,1,1,30\n").find("line 2: hidden, inter, topk, experts, moe_tp"),
            std::string::npos);
  EXPECT_NE(error_of(h + "fp8,6144,2048,8,256,8,1,1,-3\n").find("latency_us a positive number"), std::string::npos);
  EXPECT_NE(error_of(h + "fp8,6144,2048,8,256,8,1,4,30\nfp8,6144,2048,8,256,8,1,2,20\n")
                .find("line 3: tokens 2 repeats or goes back"),
            std::string::npos);
  EXPECT_NE(error_of(h + "fp8,6144,2048,8,256,8,1,4,30\nfp8,6144,2048,8,256,4,1,4,30\nfp8,6144,2048,8,256,8,1,8,3\n")
                .find("line 4: rows must be sorted by dtype,hidden,inter,topk,experts,moe_tp,moe_ep,tokens"),
            std::string::npos);
  EXPECT_THROW((void)MeasuredMoeTable::load("/no/such/moe.csv"), rt::InputError);
}

}  // namespace measured_moe_table_test
}  // namespace nvl::fakegpu
