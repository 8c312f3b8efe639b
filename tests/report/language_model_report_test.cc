// The report's language-model plots: tokens/s against batch, ITL and TTFT
// against the context, MFU by size, decoding's bandwidth against the copy
// peak; built from runs in memory as a daemon stores them.
#include <gtest/gtest.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "report/format.h"
#include "report/language_model_table.h"
#include "report/report.h"
#include "report/roofline.h"
#include "tests/report/report_fixtures.h"

namespace gpubench::report {
namespace {

using fixtures::Count;
using fixtures::SucceededRun;

v1::RunConfig Gpt(const char* size, v1::Mode mode, int batch) {
  v1::RunConfig c;
  c.set_workload("gpt");
  c.set_mode(mode);
  c.set_device("cuda:0");
  c.set_precision(v1::PRECISION_BF16);
  c.set_batch_size(batch);
  c.mutable_params()->set_model_size(size);
  return c;
}

// Decoding at a prompt length: ITL grows with the context, TTFT faster.
v1::Run Decode(int index, int prompt, int batch, double itl_ms) {
  v1::RunConfig c = Gpt("124m", v1::MODE_INFER, batch);
  c.mutable_params()->set_prompt_length(prompt);
  c.mutable_params()->set_new_tokens(64);
  v1::Run r = SucceededRun(index, c, 1000.0 * batch / (64 * itl_ms));
  v1::RunResult& res = *r.mutable_result();
  res.set_parameter_count(124'000'000);
  res.set_tokens_per_s(1000.0 * batch / itl_ms);
  res.mutable_inter_token_latency()->set_p50_ms(itl_ms);
  res.mutable_inter_token_latency()->set_p99_ms(itl_ms * 1.2);
  res.mutable_time_to_first_token()->set_p50_ms(prompt / 100.0);
  res.set_decode_bandwidth_gb_per_s(400 / itl_ms);
  return r;
}

v1::Run Train(int index, const char* size, int64_t parameters, double mfu) {
  v1::RunConfig c = Gpt(size, v1::MODE_TRAIN, 8);
  v1::Run r = SucceededRun(index, c, 100.0);
  v1::RunResult& res = *r.mutable_result();
  res.set_parameter_count(parameters);
  res.set_tokens_per_s(100.0 * 1024);  // 1,024 tokens a sample
  res.set_achieved_tflops(989.4 * mfu);
  res.set_datasheet_peak_tflops(989.4);
  res.set_mfu(mfu);
  return r;
}

ReportJob LanguageModelJob() {
  ReportJob job;
  job.job.set_job_id("job-lm");
  int index = 0;
  for (int prompt : {128, 512, 2048}) {
    job.runs.push_back(Decode(index++, prompt, 1, 0.6 + prompt / 4096.0));
  }
  job.runs.push_back(Train(index++, "124m", 124'000'000, 0.274));
  job.runs.push_back(Train(index++, "350m", 350'000'000, 0.331));
  job.peak_runs = fixtures::PeakRuns(v1::PRECISION_BF16, 700, 1500);  // 3,000 GB/s of traffic
  return job;
}

TEST(LanguageModelReport, DrawsLatencyAgainstContextAndMfuBySize) {
  const std::string html = RenderReport({LanguageModelJob()}, "lm");
  EXPECT_NE(html.find("Inter-token latency (p50, p99) vs prompt length"), std::string::npos);
  EXPECT_NE(html.find("Time to first token (p50) vs prompt length"), std::string::npos);
  // The 2,048-token prompt's ITL p50 (0.6 + 0.5 ms) and TTFT (20.48 ms).
  EXPECT_NE(html.find("prompt length (tokens) 2048, 1.100<"), std::string::npos) << html;
  EXPECT_NE(html.find("prompt length (tokens) 2048, 20.48<"), std::string::npos);
  // MFU bars: 27.4% and 33.1% of the datasheet; of the measured 700 TFLOP/s
  // matmul, 271.1 / 700 = 38.7% and 327.5 / 700 = 46.8%.
  EXPECT_NE(html.find("MFU by model size (% of the GPU&#39;s dense datasheet peak)"),
            std::string::npos);
  EXPECT_NE(html.find(">27.4%<"), std::string::npos);
  EXPECT_NE(html.find(">33.1%<"), std::string::npos);
  EXPECT_NE(html.find(">38.7%<"), std::string::npos);
  EXPECT_NE(html.find(">46.8%<"), std::string::npos);
  EXPECT_NE(html.find(">350m (350.0M)"), std::string::npos);
  // Decoding at prompt 128 reads 400 / 0.631 = 634 GB/s: 21.1% of 3,000.
  EXPECT_NE(html.find("Decoding&#39;s weight and KV-cache reads"), std::string::npos);
  EXPECT_NE(html.find(">21.1%<"), std::string::npos);
  // Its three bars, one a prompt length, say which.
  EXPECT_NE(html.find(" \u00b7 prompt_length: 2048 new_tokens: 64</title>"),
            std::string::npos)
      << html;
}

// The figures show prints (tokens/s, MFU with the peak it is a share of,
// TTFT, ITL) are in the report too, as a table: the same cells.
TEST(LanguageModelReport, HasShowsLanguageModelTable) {
  const ReportJob job = LanguageModelJob();
  const std::string html = RenderReport({job}, "lm");
  const size_t table = html.find("<caption>Language models (MFU: the model&#39;s FLOPs");
  ASSERT_NE(table, std::string::npos) << html;
  const std::string rows = html.substr(table, html.find("</table>", table) - table);
  const LanguageModelTable lm = LanguageModelFigures(
      RunPointers(job.runs), PeaksOf(RunPointers(job.runs), job.peak_runs));
  ASSERT_EQ(lm.rows.size(), 5u);
  // Run 3, gpt 124m training: 27.4% MFU of 989.4 TFLOP/s, 38.7% of the
  // measured 700; run 2, decoding a 2,048-token prompt: TTFT 20.480 ms.
  EXPECT_EQ(lm.rows[3][2], "27.4%");
  EXPECT_EQ(lm.rows[3][3], "989.4 bf16");  // the peak and the precision it is of
  EXPECT_EQ(lm.rows[3][4], "38.7%");
  EXPECT_EQ(lm.rows[2][5], "20.480");
  for (const auto& row : lm.rows) {
    std::string cells;
    for (const std::string& cell : row) absl::StrAppend(&cells, "<td class=\"num\">", cell, "</td>");
    EXPECT_NE(rows.find(cells), std::string::npos) << cells << "\n" << rows;
  }
}

TEST(LanguageModelReport, TokensPerSecondAgainstBatchOnAChartOfTheirOwn) {
  ReportJob job;
  job.job.set_job_id("job-batch");
  int index = 0;
  for (int batch : {1, 4, 16}) job.runs.push_back(Decode(index++, 512, batch, 0.6 + batch / 100.0));
  const std::string html = RenderReport({job}, "batch");
  EXPECT_NE(html.find("Tokens/s vs batch size"), std::string::npos);
  EXPECT_EQ(html.find("Throughput vs batch size"), std::string::npos);
  // Batch 16 at 0.76 ms a token: 21,053 tokens/s.
  EXPECT_NE(html.find("batch size 16, 21053<"), std::string::npos) << html;
  // One prompt length draws no context line, and no GPU peaks no share.
  EXPECT_EQ(html.find("vs prompt length"), std::string::npos);
  EXPECT_EQ(html.find("KV-cache reads"), std::string::npos);
}

TEST(LanguageModelReport, LinesApartOnlyInNewTokensSayIt) {
  ReportJob job;
  job.job.set_job_id("job-new");
  int index = 0;
  for (int new_tokens : {32, 256}) {
    for (int prompt : {128, 1024}) {
      v1::Run r = Decode(index++, prompt, 1, 0.7);
      r.mutable_config()->mutable_params()->set_new_tokens(new_tokens);
      job.runs.push_back(r);
    }
  }
  const std::string html = RenderReport({job}, "new tokens");
  // The legend's entries (the runs table shows the params anyway).
  EXPECT_NE(html.find(">124m (124.0M) \u00b7 new_tokens: 32 p50<"), std::string::npos) << html;
  EXPECT_NE(html.find(">124m (124.0M) \u00b7 new_tokens: 256 p50<"), std::string::npos);
  EXPECT_EQ(Count(html, "Inter-token latency (p50, p99) vs prompt length</title>"), 1);
}

}  // namespace
}  // namespace gpubench::report
