// The measured-table reader: the columns it takes, quoted fields, and each kind of bad row exiting with
// the line and column named.
#include <gtest/gtest.h>

#include <sstream>

#include "emu/measured/measured_table.h"
#include "emu/rt/errors.h"

namespace nvl::emu {
namespace measured_table_test {

const std::string kHeader =
    "id,system,backend,backend_version,model_path,precision,mode,isl,osl,batch_size,tp_size,attention_dp_size,"
    "moe_ep_size,prefill_num_workers,prefill_tp_size,prefill_attention_dp_size,prefill_moe_ep_size,prefill_batch_size,"
    "decode_num_workers,decode_tp_size,decode_attention_dp_size,decode_moe_tp_size,decode_moe_ep_size,decode_batch_size,"
    "silicon_ttft_ms,silicon_tpot_ms,silicon_data_source";
const std::string kAgg =
    "glm,b200_sxm,sglang,nightly,zhipuai/GLM-5,fp8,agg,8192,1024,32,8,1,1,,,,,,,,,,,,1262.5,35.25,"
    "source_file=a.csv; silicon_concurrency=32; measured=2026";
const std::string kDisagg =
    "ds,gb200,trtllm,1.1,deepseek-ai/DeepSeek-V3,fp4,disagg,1024,2048,,,,,2,4,1,4,1,3,8,1,1,8,16,195.5,5.5,"
    "\"db, quoted; silicon_concurrency=384\"";

std::vector<MeasuredRow> read(const std::string& text) {
  std::istringstream in(text);
  return read_measured_table(in, "t.csv");
}

// The message of the error reading `text` raises.
std::string error_of(const std::string& text) {
  try {
    read(text);
  } catch (const rt::InputError& e) {
    return e.what();
  }
  return "(no error)";
}

// `row` with field `index` (0-based) replaced by `value`.
std::string with_field(const std::string& row, std::size_t index, const std::string& value) {
  std::vector<std::string> fields;
  std::stringstream s(row);
  for (std::string f; std::getline(s, f, ',');) fields.push_back(f);
  fields.at(index) = value;
  std::string out;
  for (std::size_t i = 0; i < fields.size(); ++i) out += (i ? "," : "") + fields[i];
  return out;
}

TEST(MeasuredTable, ReadsAggregatedAndDisaggregatedRows) {
  const auto rows = read(kHeader + "\n" + kAgg + "\n\n" + kDisagg + "\r\n");
  ASSERT_EQ(rows.size(), 2u);
  const MeasuredRow& a = rows[0];
  EXPECT_EQ(a.line, 2u);
  EXPECT_EQ(a.id, "glm");
  EXPECT_EQ(a.system, "b200_sxm");
  EXPECT_EQ(a.model_path, "zhipuai/GLM-5");
  EXPECT_EQ(a.mode, "agg");
  EXPECT_EQ(a.isl, 8192);
  EXPECT_EQ(a.osl, 1024);
  EXPECT_EQ(a.concurrency, 32);
  EXPECT_EQ(a.aggregated.tp, 8);
  EXPECT_EQ(a.aggregated.dp, 1);
  EXPECT_EQ(a.aggregated.moe_ep, 1);
  EXPECT_EQ(a.aggregated.batch, 32);
  EXPECT_DOUBLE_EQ(a.ttft_ms, 1262.5);
  EXPECT_DOUBLE_EQ(a.tpot_ms, 35.25);

  const MeasuredRow& d = rows[1];
  EXPECT_EQ(d.line, 4u);  // after the blank line
  EXPECT_EQ(d.backend_version, "1.1");
  EXPECT_EQ(d.concurrency, 384);  // from a quoted field with a comma in it
  EXPECT_EQ(d.prefill.workers, 2);
  EXPECT_EQ(d.prefill.tp, 4);
  EXPECT_EQ(d.prefill.dp, 1);
  EXPECT_EQ(d.prefill.moe_ep, 4);
  EXPECT_EQ(d.prefill.batch, 1);
  EXPECT_EQ(d.decode.workers, 3);
  EXPECT_EQ(d.decode.tp, 8);
  EXPECT_EQ(d.decode.moe_tp, 1);
  EXPECT_EQ(d.decode.moe_ep, 8);
  EXPECT_EQ(d.decode.batch, 16);
  EXPECT_DOUBLE_EQ(d.tpot_ms, 5.5);
}

TEST(MeasuredTable, UnrecordedOptionalCellsStayEmpty) {
  // batch sizes and decode MoE TP are not always recorded.
  std::string row = with_field(with_field(with_field(kDisagg, 17, ""), 21, ""), 23, "");
  const auto rows = read(kHeader + "\n" + row + "\n");
  EXPECT_FALSE(rows[0].prefill.batch);
  EXPECT_FALSE(rows[0].decode.moe_tp);
  EXPECT_FALSE(rows[0].decode.batch);
}

TEST(MeasuredTable, TheGivenTableReads) {
  const auto rows = read_measured_table(std::filesystem::path(NVL_MEASURED_DIR) / "measured-serving-given.csv");
  EXPECT_EQ(rows.size(), 189u);  // as its README counts them
}

TEST(MeasuredTable, AMissingColumnNamesIt) {
  std::string header = kHeader;
  header.erase(header.find(",osl,"), 4);
  EXPECT_EQ(error_of(header + "\n"), "t.csv: line 1, column osl: missing from the header");
}

TEST(MeasuredTable, AnEmptyFileNeedsAHeader) { EXPECT_NE(error_of("").find("line 1"), std::string::npos); }

TEST(MeasuredTable, AShortRowNamesItsLine) {
  const std::string row = kAgg.substr(0, kAgg.rfind(','));
  EXPECT_EQ(error_of(kHeader + "\n" + kAgg + "\n" + row + "\n"), "t.csv: line 3: 26 fields; the header has 27");
}

TEST(MeasuredTable, ANonNumericFigureNamesLineAndColumn) {
  EXPECT_EQ(error_of(kHeader + "\n" + with_field(kAgg, 7, "8k") + "\n"),
            "t.csv: line 2, column isl: '8k' is not a whole number >= 1");
  EXPECT_EQ(error_of(kHeader + "\n" + with_field(kAgg, 24, "fast") + "\n"),
            "t.csv: line 2, column silicon_ttft_ms: 'fast' is not a number > 0 (milliseconds)");
  EXPECT_EQ(error_of(kHeader + "\n" + with_field(kDisagg, 19, "0") + "\n"),
            "t.csv: line 2, column decode_tp_size: '0' is not a whole number >= 1");
  EXPECT_EQ(error_of(kHeader + "\n" + with_field(kAgg, 9, "2.5") + "\n"),
            "t.csv: line 2, column batch_size: '2.5' is not a whole number >= 1");
}

TEST(MeasuredTable, AnUnknownModeNamesLineAndColumn) {
  EXPECT_EQ(error_of(kHeader + "\n" + with_field(kAgg, 6, "pd") + "\n"),
            "t.csv: line 2, column mode: 'pd' is not one of agg, disagg");
}

TEST(MeasuredTable, AModeNeedsItsWorkerColumns) {
  EXPECT_EQ(error_of(kHeader + "\n" + with_field(kAgg, 10, "") + "\n"),
            "t.csv: line 2, column tp_size: is empty; every agg row needs it");
  EXPECT_EQ(error_of(kHeader + "\n" + with_field(kDisagg, 18, "") + "\n"),
            "t.csv: line 2, column decode_num_workers: is empty; every disagg row needs it");
}

TEST(MeasuredTable, TheConcurrencyMustBeRecorded) {
  EXPECT_EQ(error_of(kHeader + "\n" + with_field(kAgg, 26, "source_file=a.csv") + "\n"),
            "t.csv: line 2, column silicon_data_source: has no silicon_concurrency=N (the benchmark's requests in flight)");
  EXPECT_NE(error_of(kHeader + "\n" + with_field(kAgg, 26, "silicon_concurrency=many") + "\n").find("'many'"),
            std::string::npos);
}

TEST(MeasuredTable, IdsAreUnique) {
  EXPECT_EQ(error_of(kHeader + "\n" + kAgg + "\n" + kAgg + "\n"),
            "t.csv: line 3, column id: 'glm' is already the id of line 2");
}

}  // namespace measured_table_test
}  // namespace nvl::emu
