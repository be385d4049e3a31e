#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "emu/rt/errors.h"
#include "emu/rt/json_reader.h"

namespace nvl::rt {
namespace json_reader_test {

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(JsonReader, ReadsEveryKindOfValue) {
  const auto j = nlohmann::json::parse(R"({"name": "B300", "on": true, "n": 18, "x": 0.5,
      "bw": {"value": 9e11, "source": "REFERENCE.md 1.1"}, "lat": {"value": 250, "source": "est"},
      "parts": [{"id": 1}, {"id": 2}]})");
  JsonReader r(j, "gpu.json");
  EXPECT_EQ(r.string("name"), "B300");
  EXPECT_TRUE(r.boolean("on"));
  EXPECT_EQ(r.integer("n", 1, 100), 18);
  EXPECT_DOUBLE_EQ(r.number("x", NumberRule::fraction), 0.5);
  EXPECT_DOUBLE_EQ(r.sourced("bw"), 9e11);
  EXPECT_EQ(r.sourced_ns("lat"), ns(250));
  auto parts = r.objects("parts");
  ASSERT_EQ(parts.size(), 2u);
  EXPECT_EQ(parts[1].integer("id"), 2);
  EXPECT_NO_THROW(r.finish());
  EXPECT_EQ(r.keys().size(), 7u);
}

TEST(JsonReader, WholeNumbersAndFractions) {
  const auto j = nlohmann::json::parse(R"({"sm": 131.5, "eff": 0, "ok": 132})");
  JsonReader r(j, "gpu.json");
  EXPECT_EQ(error_of([&] { r.number("sm", NumberRule::positive_whole); }),
            "gpu.json: sm: expected a whole number >= 1, found 131.5");
  EXPECT_EQ(error_of([&] { r.number("eff", NumberRule::fraction); }), "gpu.json: eff: expected a fraction in (0, 1], found 0");
  EXPECT_EQ(r.number("ok", NumberRule::positive_whole), 132);
}

TEST(JsonReader, EachKindOfBadInputNamesFileKeyAndExpectation) {
  const auto j = nlohmann::json::parse(R"({"a": "text", "neg": -3, "frac": 1.5, "bw": {"value": 1},
      "nosrc": {"value": 1, "source": ""}, "extra": 1, "inner": {"deep": "x"}, "list": [1]})");
  JsonReader r(j, "p.json", "cluster");
  EXPECT_EQ(error_of([&] { r.integer("missing"); }), "p.json: cluster.missing: missing key");
  EXPECT_EQ(error_of([&] { r.integer("a"); }), "p.json: cluster.a: expected an integer in [0, inf), found string \"text\"");
  EXPECT_EQ(error_of([&] { r.integer("neg"); }), "p.json: cluster.neg: expected an integer in [0, inf), found -3");
  EXPECT_EQ(error_of([&] { r.number("frac", NumberRule::fraction); }),
            "p.json: cluster.frac: expected a fraction in (0, 1], found 1.5");
  EXPECT_EQ(error_of([&] { r.number("neg", NumberRule::non_negative); }), "p.json: cluster.neg: expected a number >= 0, found -3");
  EXPECT_EQ(error_of([&] { r.number("a", NumberRule::positive); }), "p.json: cluster.a: expected a number > 0, found string \"text\"");
  EXPECT_EQ(error_of([&] { r.sourced("bw"); }), "p.json: cluster.bw.source: missing key");
  EXPECT_NE(error_of([&] { r.sourced("nosrc"); }).find("cluster.nosrc.source: expected a non-empty string"),
            std::string::npos);
  EXPECT_EQ(error_of([&] { r.object("inner").integer("deep"); }),
            "p.json: cluster.inner.deep: expected an integer in [0, inf), found string \"x\"");
  EXPECT_EQ(error_of([&] { r.objects("list"); }), "p.json: cluster.list[0]: expected an object");
  EXPECT_EQ(error_of([&] { r.boolean("a"); }), "p.json: cluster.a: expected true or false, found string \"text\"");
  EXPECT_EQ(error_of([&] { r.finish(); }), "p.json: cluster.extra: unknown key");
}

TEST(JsonReader, FilesThatAreMissingNotJsonOrNotAnObject) {
  const auto dir = std::filesystem::temp_directory_path() / ("nvl_json_reader_" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "bad.json") << "{\"a\": 1,,}";
  std::ofstream(dir / "array.json") << "[1, 2]";
  std::ofstream(dir / "twice.json") << R"({"run": {"a": 1}, "pools": [{"b": 1}, {"c": 2, "d": {"e": 1, "e": 2}}]})";
  std::ofstream(dir / "top_twice.json") << R"({"seed": 1, "run": {}, "seed": 2})";
  std::ofstream(dir / "apart.json") << R"({"a": {"x": 1}, "b": {"x": 2}, "c": [{"x": 1}, {"x": 2}]})";
  EXPECT_EQ(error_of([&] { JsonReader::parse_file(dir / "none.json"); }),
            (dir / "none.json").string() + ": cannot open the file");
  EXPECT_NE(error_of([&] { JsonReader::parse_file(dir / "bad.json"); }).find("bad.json: not valid JSON"),
            std::string::npos);
  EXPECT_EQ(error_of([&] { JsonReader::parse_file(dir / "array.json"); }),
            (dir / "array.json").string() + ": (top): expected an object");
  // A key given twice in one object is an error naming its path; the same key in different objects is not.
  EXPECT_EQ(error_of([&] { JsonReader::parse_file(dir / "twice.json"); }),
            (dir / "twice.json").string() + ": pools[1].d.e: duplicate key (only one of them would be read)");
  EXPECT_EQ(error_of([&] { JsonReader::parse_file(dir / "top_twice.json"); }),
            (dir / "top_twice.json").string() + ": seed: duplicate key (only one of them would be read)");
  EXPECT_EQ(JsonReader::parse_file(dir / "apart.json")["c"][1]["x"], 2);
  std::filesystem::remove_all(dir);
}

}  // namespace json_reader_test
}  // namespace nvl::rt
