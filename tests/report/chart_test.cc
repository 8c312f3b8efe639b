#include "report/chart.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

namespace gpubench::report::internal {
namespace {

// needle occurs in svg exactly once.
bool Once(const std::string& svg, const std::string& needle) {
  return svg.find(needle) != std::string::npos &&
         svg.find(needle) == svg.rfind(needle);
}

// A step of 1, 2, 2.5 or 5 times a power of ten.
bool Round(double step) {
  const double mantissa = step / std::pow(10.0, std::floor(std::log10(step)));
  for (double m : {1.0, 2.0, 2.5, 5.0, 10.0}) {
    if (std::fabs(mantissa - m) < 1e-9) return true;
  }
  return false;
}

TEST(NiceScale, GivesRoundTicksCoveringTheMax) {
  for (double max :
       {0.0123, 0.7, 1.0, 3.0, 9.99, 41.5, 97.0, 100.0, 1234.0, 2.6e6}) {
    const Scale s = NiceScale(max);
    EXPECT_TRUE(Round(s.step)) << max << ": step " << s.step;
    EXPECT_GE(s.max, max) << max;
    // The axis ends at the first tick at or above the max, in at most 5 steps.
    EXPECT_LT(s.max - s.step, max) << max;
    const double steps = s.max / s.step;
    EXPECT_NEAR(steps, std::round(steps), 1e-9) << max;
    EXPECT_LE(std::round(steps), 5) << max;
  }
  EXPECT_EQ(NiceScale(97).max, 100);
  EXPECT_EQ(NiceScale(97).step, 20);
  EXPECT_EQ(NiceScale(1234).max, 1250);
  EXPECT_EQ(NiceScale(1234).step, 250);
}

TEST(NiceScale, FallsBackToZeroToOneWithoutAPositiveMax) {
  for (double max : {0.0, -5.0, std::nan(""), double{INFINITY}}) {
    const Scale s = NiceScale(max);
    EXPECT_EQ(s.max, 1) << max;
    EXPECT_EQ(s.step, 1) << max;
  }
}

LineChart Chart(std::vector<Series> series) {
  return LineChart{"Throughput vs batch size", "batch size", "samples/s",
                   std::move(series)};
}

TEST(LineChart, DrawsNothingWithoutTwoDifferentX) {
  EXPECT_EQ(RenderLineChart(Chart({})), "");
  EXPECT_EQ(RenderLineChart(Chart({{"fp32", "#000", false, {{32, 900}}, {}}})), "");
  // Two points, but at one batch size: still no line.
  EXPECT_EQ(RenderLineChart(Chart({{"fp32", "#000", false, {{32, 900}}, {}},
                                   {"fp16", "#111", false, {{32, 1700}}, {}}})),
            "");
  EXPECT_EQ(
      RenderLineChart(Chart({{"fp32", "#000", false, {{32, 900}, {32, 910}}, {}}})),
      "");

  const std::string svg = RenderLineChart(
      Chart({{"fp32", "#000", false, {{64, 1200}, {32, 900}}, {}}}));
  EXPECT_EQ(svg.rfind("<svg", 0), 0u) << svg;
  EXPECT_TRUE(Once(svg, "<polyline")) << svg;
  // Each point, with its values on hover.
  EXPECT_TRUE(Once(svg, "<title>fp32: batch size 32, 900.0</title>")) << svg;
  EXPECT_TRUE(Once(svg, "<title>fp32: batch size 64, 1200</title>")) << svg;
}

TEST(LineChart, PutsDoublingBatchSizesOnALogAxis) {
  Series s{"fp32", "#000", false, {}, {}};
  for (double batch : {8, 16, 32, 64, 128, 256})
    s.points.push_back({batch, batch});
  const std::string svg = RenderLineChart(Chart({s}));
  EXPECT_NE(svg.find("batch size (log scale)"), std::string::npos);
  // Every batch size is a tick label.
  for (const char* tick : {">8<", ">16<", ">32<", ">64<", ">128<", ">256<"}) {
    EXPECT_NE(svg.find(tick), std::string::npos) << tick;
  }

  Series narrow{"fp32", "#000", false, {{8, 1}, {16, 2}}, {}};
  EXPECT_EQ(RenderLineChart(Chart({narrow})).find("(log scale)"),
            std::string::npos);
}

TEST(LineChart, SwitchesToALogYAxisOnlyWhenAskedAndWide) {
  LineChart chart = Chart({{"cpu", "#000", false, {{8, 3}, {16, 4}}, {}},
                           {"cuda:0", "#111", false, {{8, 900}, {16, 1700}}, {}}});
  EXPECT_EQ(RenderLineChart(chart).find("samples/s (log scale)"),
            std::string::npos);
  chart.log_y_when_wide = true;
  EXPECT_NE(RenderLineChart(chart).find("samples/s (log scale)"),
            std::string::npos);
}

TEST(LineChart, DrawsErrorBarsAndFitsTheAxisToThem) {
  Series s{"fp32", "#000", false, {{1, 10}, {2, 20}}, {}};
  const std::string bare = RenderLineChart(Chart({s}));
  EXPECT_EQ(bare.find("95% interval"), std::string::npos);
  EXPECT_EQ(bare.find(">40<"), std::string::npos) << bare;  // the axis ends near 20
  s.error_bars.push_back({2, 15, 45});
  const std::string barred = RenderLineChart(Chart({s}));
  EXPECT_NE(barred.find("<title>fp32: 95% interval 15.00\u201345.00</title>"), std::string::npos)
      << barred;
  EXPECT_NE(barred.find(">40<"), std::string::npos) << barred;  // the axis holds the bar's top
}

TEST(BarChart, DrawsNothingWithoutBars) {
  EXPECT_EQ(RenderBarChart({"Speedup by device", "ratio", {}, 1.0, {}}), "");
  const std::string svg =
      RenderBarChart({"Speedup by device",
                      "ratio",
                      {{"cuda:0 vs cpu", 40, "40.00x", kFaster, ""}},
                      1.0,
                      {}});
  EXPECT_TRUE(Once(svg, "<rect")) << svg;
  EXPECT_NE(svg.find(">40.00x<"), std::string::npos);
  // The 1x reference line.
  EXPECT_NE(svg.find("stroke-dasharray=\"3 2\""), std::string::npos);
}

// A label too wide for the label column takes a second line rather than
// losing its end (the model's file name, the last flag): every word shows.
TEST(BarChart, WrapsALongLabelOntoASecondLineKeepingEveryWord) {
  const std::string label = "resnet50 train b256 bf16 channels_last cuda_graph aot";
  ASSERT_GT(TextWidth(label), 230);  // wider than the label column
  const std::string svg = RenderBarChart(
      {"Speedup by device", "ratio", {{label, 2, "2.00x", kFaster, ""}}, 1.0, {}});
  EXPECT_TRUE(Once(svg, ">resnet50 train b256 bf16</tspan>")) << svg;
  EXPECT_TRUE(Once(svg, ">channels_last cuda_graph aot</tspan>")) << svg;
  EXPECT_EQ(svg.find("\u2026"), std::string::npos) << svg;  // nothing cut
  EXPECT_NE(svg.find("<title>" + label + "</title>"), std::string::npos) << svg;
  const std::vector<std::string> lines = WrapText(label, 230, 2);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0] + " " + lines[1], label);
  for (const std::string& line : lines) EXPECT_LE(TextWidth(line), 230);
  // Beyond two lines the last is cut, and says so.
  const std::vector<std::string> cut = WrapText(label + " " + label, 230, 2);
  ASSERT_EQ(cut.size(), 2u);
  EXPECT_EQ(cut[1].substr(cut[1].size() - 3), "\u2026");
  EXPECT_LE(TextWidth(cut[1]), 230);
  EXPECT_EQ(WrapText("fp16", 230, 2), std::vector<std::string>{"fp16"});
}

TEST(ChartText, IsEscapedEverywhere) {
  const std::string line = RenderLineChart(
      LineChart{"<script>t</script>",
                "x & <y>",
                "\"q\"",
                {{"<b>series</b>", "#000", false, {{1, 1}, {2, 2}}, {}}}});
  const std::string bar =
      RenderBarChart({"<script>t</script>",
                      "x & <y>",
                      {{"<b>bar</b>", 1, "<i>1</i>", "#000", "<u>tip</u>"}},
                      {},
                      {{"<b>legend</b>", "#000", Mark::kBox}}});
  for (const std::string& svg : {line, bar}) {
    EXPECT_EQ(svg.find("<script"), std::string::npos) << svg;
    EXPECT_EQ(svg.find("<b>"), std::string::npos) << svg;
    EXPECT_NE(svg.find("&lt;script&gt;t&lt;/script&gt;"), std::string::npos);
    EXPECT_NE(svg.find("x &amp; &lt;y&gt;"), std::string::npos);
  }
  EXPECT_NE(line.find("&quot;q&quot;"), std::string::npos);
  EXPECT_NE(bar.find("&lt;u&gt;tip&lt;/u&gt;"), std::string::npos);
}

// A name another user chose cannot show itself reordered (U+202E) nor carry
// C1 or escape controls into the page: they become visible escapes.
TEST(ChartText, ControlAndBidiCharactersShowAsEscapes) {
  const std::string html = EscapeHtml("job\xe2\x80\xaegnp.exe \xc2\x9b\x1b[2J <b>\nnext");
  EXPECT_EQ(html, "job\\u202egnp.exe \\u009b\\x1b[2J &lt;b&gt;\nnext");
}

TEST(ChartLegend, WrapsLongEntriesInsideTheChart) {
  std::vector<Series> one, many;
  for (int i = 0; i < 12; ++i) {
    Series s{
        "cuda:" + std::to_string(i) + ", fp16, channels_last on, input host",
        SeriesColor(i),
        false,
        {{1, 1.0 + i}, {2, 2.0 + i}},
        {}};
    if (i == 0) one.push_back(s);
    many.push_back(s);
  }
  const std::string a = RenderLineChart(Chart(one));
  const std::string b = RenderLineChart(Chart(many));
  auto height = [](const std::string& svg) {
    const size_t at = svg.find("height=\"") + 8;
    return std::stod(svg.substr(at, svg.find('"', at) - at));
  };
  EXPECT_GT(height(b), height(a) + 5 * 18);  // at least 6 legend rows
  // No legend text starts past the chart's right edge (580 px).
  for (size_t pos = b.find("<text x=\""); pos != std::string::npos;
       pos = b.find("<text x=\"", pos + 1)) {
    EXPECT_LT(std::stod(b.substr(pos + 9)), 580);
  }
}

TEST(ChartText, FitCutsAtACodePointAndMarksTheCut) {
  EXPECT_EQ(FitText("fp16", 100), "fp16");
  std::string accents;
  for (int i = 0; i < 60; ++i) accents += "\u00e9";  // 2 bytes each
  const std::string cut = FitText(accents, 100);
  ASSERT_GE(cut.size(), 3u);
  EXPECT_EQ(cut.substr(cut.size() - 3), "\u2026");
  const std::string kept = cut.substr(0, cut.size() - 3);
  EXPECT_EQ(kept.size() % 2, 0u) << "a code point was split";
  for (size_t i = 0; i < kept.size(); i += 2)
    EXPECT_EQ(kept.substr(i, 2), "\u00e9");
  EXPECT_LE(TextWidth(cut), 100);
  EXPECT_GT(TextWidth(cut), 60);  // cut no further than it needs
}

TEST(ChartText, FiguresKeepFourSignificantDigitsOrTheWholeNumber) {
  EXPECT_EQ(FormatFigure(123456.7), "123457");
  EXPECT_EQ(FormatFigure(1234.56), "1235");
  EXPECT_EQ(FormatFigure(123.456), "123.5");
  EXPECT_EQ(FormatFigure(12.3456), "12.35");
  EXPECT_EQ(FormatFigure(1.23456), "1.235");
  EXPECT_EQ(FormatFigure(-12.3456), "-12.35");
}

}  // namespace
}  // namespace gpubench::report::internal
