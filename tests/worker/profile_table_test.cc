// The operator table and the fallback Chrome trace, on planted events.
#include "worker/profile_table.h"

#include <gtest/gtest.h>

#include <numeric>

#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"

namespace gpubench::profile {
namespace {

TEST(ProfileTable, CpuSelfTimeExcludesNestedOperators) {
  // aten::linear [0, 100) holds aten::addmm [10, 70) which holds aten::copy_
  // [20, 30); on another thread aten::relu [5, 25).
  const std::vector<Event> events = {
      {"aten::linear", false, 1, 0, 100},
      {"aten::addmm", false, 1, 10, 60},
      {"aten::copy_", false, 1, 20, 10},
      {"aten::relu", false, 2, 5, 20},
      {"aten::linear", false, 1, 200, 50},
  };
  const Table t = BuildTable(events, 10);
  EXPECT_FALSE(t.device_times);
  std::map<std::string, OperatorRow> rows;
  for (const auto& r : t.top) rows[r.name] = r;
  EXPECT_DOUBLE_EQ(rows["aten::linear"].self_time_us, 40 + 50);
  EXPECT_EQ(rows["aten::linear"].count, 2);
  EXPECT_DOUBLE_EQ(rows["aten::addmm"].self_time_us, 50);
  EXPECT_DOUBLE_EQ(rows["aten::copy_"].self_time_us, 10);
  EXPECT_DOUBLE_EQ(rows["aten::relu"].self_time_us, 20);
  EXPECT_EQ(t.top.front().name, "aten::linear");  // by self time
  double shares = 0;
  for (const auto& r : t.top) shares += r.share;
  EXPECT_NEAR(shares, 1, 1e-9);
  double category_shares = 0;
  for (const auto& c : t.categories) category_shares += c.share;
  EXPECT_NEAR(category_shares, 1, 1e-9);
  EXPECT_EQ(rows["aten::addmm"].category, "matmul");
}

TEST(ProfileTable, DeviceActivitiesWinWhenPresent) {
  const std::vector<Event> events = {
      {"aten::conv2d", false, 1, 0, 500},
      {"sm90_xmma_fprop_implicit_gemm_f16f16", true, 7, 10, 300},
      {"Memcpy HtoD (Pinned -> Device)", true, 8, 0, 100},
      {"vectorized_elementwise_kernel", true, 7, 320, 100},
  };
  const Table t = BuildTable(events, 2);
  EXPECT_TRUE(t.device_times);
  ASSERT_EQ(t.top.size(), 2u);  // top_n
  EXPECT_EQ(t.top[0].category, "convolution");
  EXPECT_NEAR(t.top[0].share, 0.6, 1e-9);
  std::map<std::string, double> cat;
  for (const auto& c : t.categories) cat[c.category] = c.share;
  EXPECT_NEAR(cat["memcpy_h2d"], 0.2, 1e-9);
  EXPECT_NEAR(cat["elementwise"], 0.2, 1e-9);
  EXPECT_EQ(cat.count("other"), 0u);
}

// As Kineto reports a bidirectional LSTM's step: cuBLAS GEMMs and cuDNN's
// cell kernels, each launched by a runtime call inside an operator. They
// take the launching operator's category (rnn), as the CPU profile's single
// LSTM operator does; a copy keeps its own; a kernel no operator launched (a
// graph replay) goes by its name.
TEST(ProfileTable, KernelsTakeTheCategoryOfTheOperatorThatLaunchedThem) {
  Event lstm{"aten::lstm", false, 1, 0, 100};
  Event rnn{"aten::_cudnn_rnn", false, 1, 5, 90};
  Event launch_gemm{"cudaLaunchKernel", false, 1, 10, 2, 71};
  Event launch_cell{"cuLaunchKernel", false, 1, 20, 2, 72};
  Event copy{"aten::copy_", false, 1, 96, 3};
  Event launch_copy{"cudaMemcpyAsync", false, 1, 97, 1, 73};
  Event graph{"cudaGraphLaunch", false, 1, 200, 2, 74};
  Event gemm{"sm80_xmma_gemm_f32f32_f32f32_f32_tn_n", true, 7, 30, 40, 71};
  Event cell{"void elemWiseRNNcell<float>(...)", true, 7, 70, 10, 72};
  Event h2d{"Memcpy HtoD (Pinned -> Device)", true, 8, 100, 20, 73};
  Event replayed{"sm80_xmma_gemm_f16f16_f16f32_f32_tn_n", true, 7, 210, 30, 74};
  const Table t = BuildTable({lstm, rnn, launch_gemm, launch_cell, copy, launch_copy, graph, gemm,
                              cell, h2d, replayed},
                             10);
  std::map<std::string, double> cat;
  for (const auto& c : t.categories) cat[c.category] = c.self_time_us;
  EXPECT_DOUBLE_EQ(cat["rnn"], 50);         // the GEMM and the cell kernel
  EXPECT_DOUBLE_EQ(cat["memcpy_h2d"], 20);  // not aten::copy_'s elementwise
  EXPECT_DOUBLE_EQ(cat["matmul"], 30);      // the replayed GEMM, by its name
  for (const auto& row : t.top) {
    if (row.name == gemm.name) {
      EXPECT_EQ(row.category, "rnn");
    }
  }
}

// Device time by the operator that launched it: aten::_cudnn_rnn's two
// kernels in its one call (the innermost aten:: operator, not aten::lstm
// around it), aten::copy_'s copy, a graph's replay by its runtime call
// (two replays), a collective's kernel by the event open around its launch,
// and a kernel launched with nothing open (compiled code) apart.
TEST(ProfileTable, KernelsCountForTheOperatorThatLaunchedThem) {
  const std::vector<Event> events = {
      {"aten::lstm", false, 1, 0, 100},
      {"aten::_cudnn_rnn", false, 1, 5, 90},
      {"cudaLaunchKernel", false, 1, 10, 2, 71},
      {"cuLaunchKernel", false, 1, 20, 2, 72},
      {"aten::copy_", false, 1, 96, 3},
      {"cudaMemcpyAsync", false, 1, 97, 1, 73},
      {"cudaGraphLaunch", false, 1, 200, 2, 74},
      {"cudaGraphLaunch", false, 1, 300, 2, 75},
      {"cuLaunchKernel", false, 1, 400, 1, 76},
      {"record_param_comms", false, 1, 500, 10},
      {"cudaLaunchKernelExC", false, 1, 502, 2, 77},
      {"ncclDevKernel_AllReduce_Sum_bf16_RING_LL", true, 9, 505, 40, 77},
      {"sm80_xmma_gemm_f32f32_f32f32_f32_tn_n", true, 7, 30, 40, 71},
      {"void elemWiseRNNcell<float>(...)", true, 7, 70, 10, 72},
      {"Memcpy HtoD (Pinned -> Device)", true, 8, 100, 20, 73},
      {"sm80_xmma_gemm_f16f16_f16f32_f32_tn_n", true, 7, 210, 30, 74},
      {"triton_poi_fused_add_0", true, 7, 220, 5, 74},
      {"sm80_xmma_gemm_f16f16_f16f32_f32_tn_n", true, 7, 310, 30, 75},
      {"triton_red_fused_sum_1", true, 7, 410, 15, 76},
  };
  const Table t = BuildTable(events, 10);
  std::map<std::string, OperatorRow> rows;
  for (const auto& r : t.launching) rows[r.name] = r;
  ASSERT_EQ(rows.size(), 5u) << t.launching.size();
  EXPECT_DOUBLE_EQ(rows["record_param_comms"].self_time_us, 40);
  EXPECT_EQ(rows["record_param_comms"].count, 1);
  EXPECT_EQ(rows.count("aten::lstm"), 0u);
  EXPECT_DOUBLE_EQ(rows["aten::_cudnn_rnn"].self_time_us, 50);
  EXPECT_EQ(rows["aten::_cudnn_rnn"].count, 1);
  EXPECT_EQ(rows["aten::_cudnn_rnn"].category, "rnn");
  EXPECT_DOUBLE_EQ(rows["aten::copy_"].self_time_us, 20);
  EXPECT_DOUBLE_EQ(rows[kGraphReplay].self_time_us, 65);
  EXPECT_EQ(rows[kGraphReplay].count, 2);
  EXPECT_DOUBLE_EQ(rows[kNoOperator].self_time_us, 15);
  EXPECT_EQ(rows[kNoOperator].count, 0);
  EXPECT_EQ(t.launching.front().name, kGraphReplay);  // by device time
  double shares = 0;
  for (const auto& r : t.launching) shares += r.share;
  EXPECT_NEAR(shares, 1, 1e-9);
  // Top n, as the kernels' table; none on the CPU.
  EXPECT_EQ(BuildTable(events, 3).launching.size(), 3u);
  EXPECT_TRUE(BuildTable({{"aten::relu", false, 1, 0, 5}}, 10).launching.empty());
}

TEST(ProfileTable, CategoriesOfCommonNames) {
  EXPECT_EQ(Categorize("aten::cudnn_convolution"), "convolution");
  EXPECT_EQ(Categorize("aten::bmm"), "matmul");
  EXPECT_EQ(Categorize("aten::_scaled_dot_product_flash_attention"), "attention");
  EXPECT_EQ(Categorize("aten::native_batch_norm"), "normalization");
  EXPECT_EQ(Categorize("aten::max_pool2d_with_indices"), "pooling");
  EXPECT_EQ(Categorize("aten::_cudnn_rnn"), "rnn");
  EXPECT_EQ(Categorize("aten::lstm"), "rnn");
  // Kernel names seen on the H100 (bench/results/2026-11-25-h100-analyses.txt).
  EXPECT_EQ(Categorize("void elemWiseRNNcell<float, float, float, (cudnnRNNMode_t)2>(...)"),
            "rnn");
  EXPECT_EQ(Categorize("void cudnn::bn_bw_1C11_kernel_new<float, float, float2, 512, true, 1>"
                       "(...)"),
            "normalization");
  EXPECT_EQ(Categorize("void cudnn::bn_fw_tr_1C11_kernel_NCHW<float, float, 512, true, 1>(...)"),
            "normalization");
  EXPECT_EQ(Categorize("sm80_xmma_fprop_implicit_gemm_f32f32_f32f32_f32_nchwkcrs_nchw"),
            "convolution");
  EXPECT_EQ(Categorize("Memcpy DtoH (Device -> Pageable)"), "memcpy_d2h");
  EXPECT_EQ(Categorize("Memcpy DtoD (Device -> Device)"), "memcpy_d2d");
  EXPECT_EQ(Categorize("Optimizer.step#SGD.step"), "optimizer");
  EXPECT_EQ(Categorize("aten::_foreach_add_"), "optimizer");
  EXPECT_EQ(Categorize("aten::relu_"), "elementwise");
  // ReLU as the CPU runs it (aten::relu calls aten::clamp_min, where its
  // self time is) and as the GPU does: one category on both devices.
  EXPECT_EQ(Categorize("aten::clamp_min"), "elementwise");
  EXPECT_EQ(Categorize("aten::clamp_min_"), "elementwise");
  EXPECT_EQ(Categorize("void at::native::vectorized_elementwise_kernel<4, "
                       "at::native::(anonymous namespace)::clamp_min_scalar_kernel_impl"),
            "elementwise");
  EXPECT_EQ(Categorize("aten::_softmax"), "elementwise");
  EXPECT_EQ(Categorize("aten::embedding"), "elementwise");
  EXPECT_EQ(Categorize("aten::empty"), "other");
}

TEST(ProfileTable, ChromeTraceParsesWithEveryEvent) {
  const std::vector<Event> events = {
      {"aten::linear", false, 1, 0, 100},
      {"name with \"quotes\" and \\ backslash", false, 1, 10, 60},
  };
  const std::string json = ChromeTrace(events);
  google::protobuf::Struct doc;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(json, &doc).ok()) << json;
  const auto& list = doc.fields().at("traceEvents").list_value();
  ASSERT_EQ(list.values_size(), 2);
  const auto& second = list.values(1).struct_value().fields();
  EXPECT_EQ(second.at("name").string_value(), "name with \"quotes\" and \\ backslash");
  EXPECT_EQ(second.at("ph").string_value(), "X");
  EXPECT_DOUBLE_EQ(second.at("dur").number_value(), 60);
}

// A rank's trace names its rank where HTA reads it, in a trace that stays
// JSON: the fallback trace, Kineto's layout, an empty object; a trace that
// has one already, or is no object, is kept as it is.
TEST(ProfileTable, ARanksTraceCarriesItsDistributedInfo) {
  const std::string kineto = "{\n  \"schemaVersion\": 1,\n  \"traceEvents\": []\n}";
  for (const std::string& trace :
       {ChromeTrace({{"aten::mm", false, 1, 0, 10}}), kineto, std::string("  {}")}) {
    const std::string marked = WithDistributedInfo(trace, "gloo", 1, 2);
    google::protobuf::Struct doc;
    ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(marked, &doc).ok()) << marked;
    const auto& info = doc.fields().at("distributedInfo").struct_value().fields();
    EXPECT_EQ(info.at("rank").number_value(), 1) << marked;
    EXPECT_EQ(info.at("world_size").number_value(), 2);
    EXPECT_EQ(info.at("backend").string_value(), "gloo");
    EXPECT_EQ(WithDistributedInfo(marked, "nccl", 0, 2), marked);
  }
  EXPECT_EQ(WithDistributedInfo("not json", "gloo", 1, 2), "not json");
}

}  // namespace
}  // namespace gpubench::profile
