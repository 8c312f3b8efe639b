#include "report/language_model_table.h"

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "report/chart.h"
#include "report/figures.h"
#include "report/format.h"

namespace gpubench::report {

const char kLanguageModelLegend[] =
    "MFU: the model's FLOPs over the GPU's dense datasheet peak at the run's precision (the "
    "\"of TFLOP/s\" column, which names both; none for a GPU the table does not know, or a "
    "CPU); of measured: "
    "over this host's best matmul at the precision; TTFT: prefill and first token; ITL: each "
    "next token; of copy peak: weights and cache read over this host's best device copy "
    "traffic";

std::string TableHtml(const std::string& caption, const LanguageModelTable& table) {
  std::string html =
      absl::StrCat("<table class=\"runs\"><caption>", internal::EscapeHtml(caption), "</caption><tr>");
  for (const std::string& h : table.header) absl::StrAppend(&html, "<th>", internal::EscapeHtml(h), "</th>");
  absl::StrAppend(&html, "</tr>");
  for (const auto& row : table.rows) {
    absl::StrAppend(&html, "<tr>");
    for (const std::string& cell : row) {
      absl::StrAppend(&html, "<td class=\"num\">", internal::EscapeHtml(cell), "</td>");
    }
    absl::StrAppend(&html, "</tr>");
  }
  return html + "</table>\n";
}

LanguageModelTable LanguageModelFigures(const std::vector<const v1::Run*>& runs,
                                        const std::map<std::string, DevicePeaks>& peaks) {
  LanguageModelTable t;
  // The table's own figures (report/figures.h), then what each is of.
  const Figure& tokens = FigureNamed("tokens_per_s");
  const Figure& mfu = FigureNamed("mfu");
  const Figure& ttft = FigureNamed("ttft_p50_ms");
  const Figure& itl_p50 = FigureNamed("itl_p50_ms");
  const Figure& itl_p99 = FigureNamed("itl_p99_ms");
  const Figure& decode = FigureNamed("decode_gb_per_s");
  const Figure& attention = FigureNamed("attention");
  t.header = {"#",           tokens.heading,  mfu.heading,    "of TFLOP/s",
              "of measured", ttft.heading,    itl_p50.heading, itl_p99.heading,
              decode.heading, "of copy peak", attention.heading};
  auto or_dash = [](bool present, const std::string& text) { return present ? text : "-"; };
  for (const v1::Run* run : runs) {
    const v1::Run& r = *run;
    const v1::RunResult& res = r.result();
    // A serving run's figures are the serving table's (serve_table.h).
    if (!Measured(r) || !tokens.number(r) || res.has_serve()) continue;
    const bool decoding = res.has_inter_token_latency();
    // The host's own peaks (its best matmul at the precision, its best
    // device copy's traffic), where it measured them.
    const RunPeaks roof = PeaksForRun(peaks, r);
    const double of_matmul = res.achieved_tflops() * 1e12 / roof.flops_per_s;
    const double of_copy = res.decode_bandwidth_gb_per_s() * 1e9 / roof.bytes_per_s;
    t.rows.push_back(
        {absl::StrCat(r.index()), FigureText(tokens, r), FigureText(mfu, r),
         or_dash(res.datasheet_peak_tflops() > 0,
                 absl::StrFormat("%.1f %s", res.datasheet_peak_tflops(),
                                 absl::AsciiStrToLower(absl::StripPrefix(
                                     v1::Precision_Name(r.config().precision()),
                                     "PRECISION_")))),
         or_dash(!decoding && roof.flops_per_s > 0 && res.achieved_tflops() > 0,
                 absl::StrFormat("%.1f%%", 100 * of_matmul)),
         FigureText(ttft, r), FigureText(itl_p50, r), FigureText(itl_p99, r),
         FigureText(decode, r),
         or_dash(roof.bytes_per_s > 0 && res.decode_bandwidth_gb_per_s() > 0,
                 absl::StrFormat("%.1f%%", 100 * of_copy)),
         FigureText(attention, r)});
  }
  return t;
}

}  // namespace gpubench::report
