// The trace reader and the breakdown of gpubench explain on hand-written
// traces (HTA's own figures on seeded traces: hta_agreement.py).
#include "report/trace_breakdown.h"

#include <gtest/gtest.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "report/trace_events.h"

namespace gpubench::report {
namespace {

std::string Kernel(const std::string& name, double ts, double dur, int stream, int corr,
                   const std::string& cat = "kernel") {
  return absl::StrCat(R"({"ph": "X", "cat": ")", cat, R"(", "name": ")", name, R"(", "ts": )", ts,
                      R"(, "dur": )", dur, R"(, "args": {"stream": )", stream,
                      R"(, "correlation": )", corr, "}}");
}

std::string Host(const std::string& name, double ts, double dur, int corr = -1,
                 const std::string& cat = "cuda_runtime") {
  return absl::StrCat(R"({"ph": "X", "cat": ")", cat, R"(", "name": ")", name, R"(", "ts": )", ts,
                      R"(, "dur": )", dur, R"(, "args": {)",
                      corr >= 0 ? absl::StrCat(R"("correlation": )", corr) : "", "}}");
}

TraceEvents Read(const std::string& json, size_t chunk) {
  TraceReader reader;
  for (size_t i = 0; i < json.size(); i += chunk) {
    EXPECT_TRUE(reader.Feed(std::string_view(json).substr(i, chunk)).ok());
  }
  EXPECT_TRUE(reader.Finish().ok());
  return std::move(reader.events());
}

// A launch at 0 of a 10 us kernel at 5; a launch at 40 (after the first
// kernel ended: the host's wait) of a kernel at 50 for 10; a kernel
// launched at 52 that runs at 62 (a 2 us gap: another kernel's wait); and
// an NCCL kernel on stream 9 under the second one.
std::string SmallTrace() {
  return absl::StrCat(
      R"({"schemaVersion": 1, "deviceProperties": [{"name": "x ] { \" y"}], "traceEvents": [)",
      R"({"ph": "M", "name": "process_name", "args": {"name": "a"}}, )",
      Host("cudaLaunchKernel", 0, 3, 1), ", ", Kernel("gemm", 5, 10, 7, 1), ", ",
      Host("aten::mm", 1, 30), ", ", Host("cudaLaunchKernel", 40, 3, 2), ", ",
      Kernel("gemm", 50, 10, 7, 2), ", ", Host("cudaLaunchKernel", 52, 3, 3), ", ",
      Kernel("Memcpy DtoD", 62, 4, 7, 3, "gpu_memcpy"), ", ", Host("cudaLaunchKernel", 45, 2, 4),
      ", ", Kernel("ncclDevKernel_AllReduce", 48, 8, 9, 4), "]}");
}

TEST(TraceReader, KeepsTheEventsABreakdownNeedsInAnyChunks) {
  const TraceEvents whole = Read(SmallTrace(), 1 << 20);
  EXPECT_EQ(whole.seen, 10);
  EXPECT_EQ(whole.events.size(), 8u);  // not the metadata, nor aten::mm (no correlation)
  const TraceEvents bytes = Read(SmallTrace(), 1);
  ASSERT_EQ(bytes.events.size(), whole.events.size());
  for (size_t i = 0; i < whole.events.size(); ++i) {
    EXPECT_EQ(bytes.events[i].ts, whole.events[i].ts);
    EXPECT_EQ(bytes.Name(bytes.events[i].name), whole.Name(whole.events[i].name));
    EXPECT_EQ(bytes.events[i].index, whole.events[i].index);
  }
}

TEST(TraceReader, RefusesWhatIsNotATraceNamingWhere) {
  TraceReader none;
  ASSERT_TRUE(none.Feed(R"({"events": []})").ok());
  EXPECT_EQ(none.Finish().message(), "trace: no traceEvents array");
  TraceReader small(64);
  const absl::Status big = small.Feed(absl::StrCat(
      R"({"traceEvents": [{}, {"name": ")", std::string(100, 'x'), R"("}]})"));
  EXPECT_EQ(big.message(), "traceEvents[1]: over 64 bytes");
  TraceReader bad;
  EXPECT_EQ(bad.Feed(R"({"traceEvents": [{"ts": }]})").message(),
            "traceEvents[0]: not a JSON object of a trace event");
  TraceReader deep;
  EXPECT_EQ(deep.Feed(absl::StrCat(R"({"traceEvents": [{"args": )", std::string(100000, '['),
                                   std::string(100000, ']'), "}]}"))
                .message(),
            "traceEvents[0]: not a JSON object of a trace event");
  TraceReader cut;
  ASSERT_TRUE(cut.Feed(R"({"traceEvents": [{"ts": 1)").ok());
  EXPECT_EQ(cut.Finish().message(), "trace: the JSON ends early");
}

TEST(TraceBreakdown, SplitsTheSpanAndTheIdleGapsAsHtaDoes) {
  const Breakdown b = BreakDown(Read(SmallTrace(), 7), 5);
  EXPECT_EQ(b.span_us, 61);  // 5 to 66
  EXPECT_EQ(b.idle_us, 61 - (10 + 12 + 4));  // busy 5-15, 48-60, 62-66
  EXPECT_EQ(b.compute_us, 20);
  EXPECT_EQ(b.communication_us, 2);  // 48-56 less the gemm from 50
  EXPECT_EQ(b.memory_us, 4);
  EXPECT_EQ(b.communication_overlap_us, 6 - 0);  // 50-56 under the gemm
  ASSERT_EQ(b.idle.size(), 2u);
  EXPECT_EQ(b.idle[0].stream, 7);
  EXPECT_EQ(b.idle[0].host_wait_us, 35);  // launched at 40, after 15
  EXPECT_EQ(b.idle[0].kernel_wait_us, 2);
  EXPECT_EQ(b.launches, 4);
  EXPECT_EQ(b.median_launch_delay_us, (2 + 7) / 2.0);  // of 2, 7, 7 and 1
  ASSERT_FALSE(b.top.empty());
  EXPECT_EQ(b.top[0].name, "gemm");
  EXPECT_EQ(b.top[0].count, 2);
  EXPECT_EQ(BiggestShare(b).rfind("54% of the span is idle waiting on the host", 0), 0u)
      << BiggestShare(b);
}

TEST(TraceBreakdown, KeepsFractionsAndLeavesTheLastStepOut) {
  const std::string json = absl::StrCat(
      R"({"traceEvents": [)", Host("ProfilerStep#1", 0, 50, -1, "user_annotation"), ", ",
      Host("cudaLaunchKernel", 1, 1, 1), ", ", Kernel("gemm", 10.25, 0.5, 7, 1), ", ",
      Kernel("gemm", 20.4, 9.8, 7, 1), ", ", Host("ProfilerStep#2", 60, 50, -1, "user_annotation"),
      ", ", Host("cudaLaunchKernel", 61, 1, 2), ", ", Kernel("late", 70, 100, 7, 2), "]}");
  const Breakdown b = BreakDown(Read(json, 3), 5);
  // Not rounded to whole µs (HTA's default would make the first gemm -1 µs
  // long); the last step's kernel is left out.
  EXPECT_EQ(b.device_events, 2);
  EXPECT_DOUBLE_EQ(b.span_us, 20.4 + 9.8 - 10.25);
  EXPECT_DOUBLE_EQ(b.compute_us, 0.5 + 9.8);
}

TEST(TraceBreakdown, ShortKernelNamesLoseTheirArgumentsNotTheirWords) {
  EXPECT_EQ(ShortKernelName("void at::native::(anonymous namespace)::max_pool<float, int>(int, "
                            "float const*)"),
            "max_pool<float, int>");
  EXPECT_EQ(ShortKernelName("Memcpy HtoD (Pageable -> Device)"),
            "Memcpy HtoD (Pageable -> Device)");
  EXPECT_EQ(ShortKernelName("(odd)"), "(odd)");
  EXPECT_EQ(ShortKernelName(std::string(200, 'k'), 10), "kkkkkkk...");
  EXPECT_EQ(ShortKernelName("f<a>(g<b>(c))"), "f<a>");
}

TEST(TraceBreakdown, KernelTypesFollowHta) {
  EXPECT_EQ(KernelType("ncclDevKernel_AllReduce_Sum"), "communication");
  EXPECT_EQ(KernelType("ncclKernel_AllGather"), "communication");
  EXPECT_EQ(KernelType("Memcpy HtoD (Pinned -> Device)"), "memory");
  EXPECT_EQ(KernelType("Memset (Device)"), "memory");
  EXPECT_EQ(KernelType("void at::native::vectorized_elementwise_kernel"), "computation");
  EXPECT_EQ(KernelType("cudaStreamSynchronize"), "other");
  EXPECT_EQ(KernelType("someMemcpyKernel"), "other");
}

}  // namespace
}  // namespace gpubench::report
