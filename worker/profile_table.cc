#include "worker/profile_table.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <sstream>

namespace gpubench::profile {
namespace {

bool Has(const std::string& lower, std::initializer_list<const char*> words) {
  for (const char* w : words) {
    if (lower.find(w) != std::string::npos) return true;
  }
  return false;
}

std::string JsonEscape(const std::string& s) {
  std::string out;
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20) {
      out += ' ';
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

}  // namespace

std::string Categorize(const std::string& name) {
  std::string n = name;
  std::transform(n.begin(), n.end(), n.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (Has(n, {"memcpy htod", "memcpy h2d", "memcpyhtod"})) return "memcpy_h2d";
  if (Has(n, {"memcpy dtoh", "memcpy d2h", "memcpydtoh"})) return "memcpy_d2h";
  if (Has(n, {"memcpy dtod", "memcpy d2d", "memcpydtod"})) return "memcpy_d2d";
  if (Has(n, {"attention", "sdpa", "flash", "fmha", "scaled_dot_product"})) return "attention";
  // cuDNN's RNN kernels ("elemWiseRNNcell", "LSTM_elementWise_bp1") and
  // its BatchNorm kernels ("cudnn::bn_bw_1C11_kernel_new") before the rule
  // that takes any other cuDNN kernel for a convolution.
  if (Has(n, {"lstm", "rnn", "aten::gru", "gru_cell"})) return "rnn";
  if (Has(n, {"bn_fw", "bn_bw", "batch_norm", "batchnorm"})) return "normalization";
  if (Has(n, {"conv", "cudnn", "implicit_gemm", "wgrad", "dgrad"})) return "convolution";
  if (Has(n, {"gemm", "matmul", "aten::mm", "aten::bmm", "addmm", "linear", "cublas",
              "cutlass", "xmma", "sm90_", "sm80_", "aten::dot"})) {
    return "matmul";
  }
  if (Has(n, {"norm"})) return "normalization";
  if (Has(n, {"pool"})) return "pooling";
  if (Has(n, {"optimizer", "sgd", "adam", "foreach", "zero_grad", "amp_update_scale",
              "non_finite_check"})) {
    return "optimizer";
  }
  // An operator and the operators it calls are one category: the CPU's
  // aten::relu spends its time in aten::clamp_min, the GPU's in a
  // vectorized clamp_min kernel; both are elementwise, so per-category
  // tables of the two devices line up.
  if (Has(n, {"elementwise", "vectorized", "add", "mul", "div", "sub", "relu", "gelu",
              "sigmoid", "tanh", "copy", "fill", "where", "clone", "cat", "exp",
              "threshold", "reduce", "sum", "mean", "aten::to", "_to_copy", "clamp",
              "maximum", "minimum", "aten::max", "aten::min", "neg", "pow", "sqrt", "silu",
              "softmax", "abs", "masked_fill", "dropout", "lerp", "log", "embedding"})) {
    return "elementwise";
  }
  return "other";
}

namespace {

bool IsRuntimeCall(const Event& e) {
  return !e.device && e.correlation != 0 && e.name.rfind("cu", 0) == 0;
}

// Sorts events per thread by start, longer first on ties, so that a parent
// comes before what it encloses.
std::vector<const Event*> ByThreadAndStart(const std::vector<Event>& events) {
  std::vector<const Event*> sorted;
  for (const Event& e : events) {
    if (!e.device) sorted.push_back(&e);
  }
  std::sort(sorted.begin(), sorted.end(), [](const Event* a, const Event* b) {
    if (a->thread != b->thread) return a->thread < b->thread;
    if (a->start_us != b->start_us) return a->start_us < b->start_us;
    return a->duration_us > b->duration_us;
  });
  return sorted;
}

// A runtime call, the innermost aten:: operator open on its thread when it
// was made, and the innermost event of any name open then (a collective's
// "nccl:all_reduce", compiled code's annotation); nullptr: none.
struct Launch {
  const Event* call = nullptr;
  const Event* op = nullptr;
  const Event* open = nullptr;
};

// Correlation id -> its runtime call and launching operator.
std::map<uint64_t, Launch> LaunchingOperators(const std::vector<Event>& events) {
  std::map<uint64_t, Launch> launched_by;
  std::vector<const Event*> open;
  uint64_t thread = 0;
  for (const Event* e : ByThreadAndStart(events)) {
    if (e->thread != thread) open.clear();
    thread = e->thread;
    while (!open.empty() && open.back()->start_us + open.back()->duration_us <= e->start_us) {
      open.pop_back();
    }
    if (IsRuntimeCall(*e)) {
      Launch& launch = launched_by[e->correlation];
      launch.call = e;
      if (!open.empty()) launch.open = open.back();
      for (auto it = open.rbegin(); it != open.rend(); ++it) {
        if ((*it)->name.rfind("aten::", 0) == 0) {
          launch.op = *it;
          break;
        }
      }
      continue;
    }
    open.push_back(e);
  }
  return launched_by;
}

using RowsByName = std::map<std::string, OperatorRow>;
// Time by row and category: a device row's kernel may be launched by
// operators of several categories.
using CategoriesByName = std::map<std::string, std::map<std::string, double>>;

// Device events: each kernel's time, by the category of the operator that
// launched it (memory copies stay copies).
void CountDeviceTime(const std::vector<Event>& events,
                     const std::map<uint64_t, Launch>& launched_by, RowsByName* by_name,
                     CategoriesByName* by_category) {
  for (const Event& e : events) {
    if (!e.device) continue;
    OperatorRow& row = (*by_name)[e.name];
    ++row.count;
    row.self_time_us += e.duration_us;
    std::string category = Categorize(e.name);
    auto launch = launched_by.find(e.correlation);
    if (category.rfind("memcpy", 0) != 0 && e.correlation != 0 && launch != launched_by.end() &&
        launch->second.op != nullptr) {
      category = Categorize(launch->second.op->name);
    }
    (*by_category)[e.name][category] += e.duration_us;
  }
}

// Device events by the operator that launched them: its kernels' time, and
// its calls that launched any (a CUDA graph's replay by its runtime call;
// with no aten:: operator open, the innermost event that was).
std::vector<OperatorRow> ByLaunchingOperator(const std::vector<Event>& events,
                                             const std::map<uint64_t, Launch>& launched_by) {
  std::map<std::string, OperatorRow> rows;
  std::map<std::string, std::set<const Event*>> calls;
  double total = 0;
  for (const Event& e : events) {
    if (!e.device) continue;
    auto launch = e.correlation != 0 ? launched_by.find(e.correlation) : launched_by.end();
    std::string name = kNoOperator;
    const Event* call = nullptr;
    if (launch != launched_by.end() && launch->second.op != nullptr) {
      name = launch->second.op->name;
      call = launch->second.op;
    } else if (launch != launched_by.end() &&
               launch->second.call->name.find("GraphLaunch") != std::string::npos) {
      name = kGraphReplay;
      call = launch->second.call;
    } else if (launch != launched_by.end() && launch->second.open != nullptr) {
      name = launch->second.open->name;
      call = launch->second.open;
    }
    OperatorRow& row = rows[name];
    row.name = name;
    row.self_time_us += e.duration_us;
    if (call != nullptr) calls[name].insert(call);
    total += e.duration_us;
  }
  std::vector<OperatorRow> out;
  for (auto& [name, row] : rows) {
    row.count = static_cast<int64_t>(calls[name].size());
    row.share = total > 0 ? row.self_time_us / total : 0;
    row.category = name == kGraphReplay || name == kNoOperator ? "other" : Categorize(name);
    out.push_back(row);
  }
  return out;
}

// Host events only: per thread, by start, a stack of open operators gives
// each one's direct children, and its self time is its own less theirs.
void CountSelfTime(const std::vector<Event>& events, RowsByName* by_name) {
  const std::vector<const Event*> sorted = ByThreadAndStart(events);
  std::vector<std::pair<const Event*, double>> stack;  // event, children's time
  auto close_last = [&] {
    const auto [event, children_us] = stack.back();
    OperatorRow& row = (*by_name)[event->name];
    ++row.count;
    row.self_time_us += std::max(0.0, event->duration_us - children_us);
    stack.pop_back();
  };
  uint64_t thread = 0;
  for (const Event* e : sorted) {
    while (!stack.empty() && e->thread != thread) close_last();
    thread = e->thread;
    while (!stack.empty() &&
           stack.back().first->start_us + stack.back().first->duration_us <= e->start_us) {
      close_last();
    }
    if (!stack.empty()) stack.back().second += e->duration_us;
    stack.push_back({e, 0});
  }
  while (!stack.empty()) close_last();
}

template <typename Row>
void SortByTime(std::vector<Row>* rows) {
  std::sort(rows->begin(), rows->end(),
            [](const Row& a, const Row& b) { return a.self_time_us > b.self_time_us; });
}

// The top_n rows by time (every row where top_n is 0 or less).
template <typename Row>
void KeepTop(std::vector<Row>* rows, int top_n) {
  SortByTime(rows);
  if (top_n > 0 && static_cast<int>(rows->size()) > top_n) rows->resize(top_n);
}

}  // namespace

Table BuildTable(const std::vector<Event>& events, int top_n) {
  Table table;
  table.device_times =
      std::any_of(events.begin(), events.end(), [](const Event& e) { return e.device; });
  RowsByName by_name;
  CategoriesByName by_category;
  std::map<uint64_t, Launch> launched_by;
  if (table.device_times) {
    launched_by = LaunchingOperators(events);
    CountDeviceTime(events, launched_by, &by_name, &by_category);
  } else {
    CountSelfTime(events, &by_name);
  }
  double total = 0;
  std::map<std::string, double> categories;
  for (auto& [name, row] : by_name) {
    row.name = name;
    if (table.device_times) {
      // The row's category is where most of its time went.
      double most = -1;
      for (const auto& [category, us] : by_category[name]) {
        categories[category] += us;
        if (us > most) most = us, row.category = category;
      }
    } else {
      row.category = Categorize(name);
      categories[row.category] += row.self_time_us;
    }
    total += row.self_time_us;
  }
  for (auto& [name, row] : by_name) {
    row.share = total > 0 ? row.self_time_us / total : 0;
    table.top.push_back(row);
  }
  KeepTop(&table.top, top_n);
  if (table.device_times) {
    table.launching = ByLaunchingOperator(events, launched_by);
    KeepTop(&table.launching, top_n);
  }
  for (const auto& [category, us] : categories) {
    table.categories.push_back({category, us, total > 0 ? us / total : 0});
  }
  SortByTime(&table.categories);
  return table;
}

std::string ChromeTrace(const std::vector<Event>& events) {
  std::ostringstream out;
  out.precision(3);
  out << std::fixed << "{\"traceEvents\":[";
  bool first = true;
  for (const Event& e : events) {
    out << (first ? "\n" : ",\n") << "{\"name\":\"" << JsonEscape(e.name)
        << "\",\"cat\":\"" << (e.device ? "kernel" : "cpu_op") << "\",\"ph\":\"X\",\"ts\":"
        << e.start_us << ",\"dur\":" << e.duration_us << ",\"pid\":" << (e.device ? 1 : 0)
        << ",\"tid\":" << e.thread << "}";
    first = false;
  }
  out << "\n],\"displayTimeUnit\":\"ms\"}\n";
  return out.str();
}

std::string WithDistributedInfo(std::string trace, const std::string& backend, int rank,
                                int world_size) {
  const size_t open = trace.find_first_not_of(" \t\r\n");
  if (open == std::string::npos || trace[open] != '{' ||
      trace.find("\"distributedInfo\"") != std::string::npos) {
    return trace;
  }
  std::ostringstream info;
  info << "\n  \"distributedInfo\": {\"backend\": \"" << JsonEscape(backend)
       << "\", \"rank\": " << rank << ", \"world_size\": " << world_size << "}";
  // A comma unless the object is empty.
  const size_t next = trace.find_first_not_of(" \t\r\n", open + 1);
  if (next != std::string::npos && trace[next] != '}') info << ",";
  trace.insert(open + 1, info.str());
  return trace;
}

}  // namespace gpubench::profile
