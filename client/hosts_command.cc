// gpubench hosts: each daemon's machine, side by side (one column per host),
// or as JSON; a host that refused the caller or did not answer says so.
#include <algorithm>
#include <functional>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "client/cli.h"
#include "client/cli_internal.h"
#include "client/json_writer.h"
#include "client/output.h"
#include "common/spec.h"

namespace gpubench::client {
namespace {

std::string GiB(int64_t bytes) { return absl::StrFormat("%.1f GiB", bytes / double(1 << 30)); }

// Each daemon's answer to GetHostInfo, in the daemons' order.
struct HostAnswers {
  std::vector<v1::HostInfo> infos;
  std::vector<absl::Status> status;

  // A daemon that refused the caller answered: it is reachable, and why it
  // refused is what the user needs (a token, a role).
  bool refused(size_t i) const {
    return absl::IsUnauthenticated(status[i]) || absl::IsPermissionDenied(status[i]);
  }
};

HostAnswers AskEach(const std::vector<Daemon>& daemons) {
  HostAnswers answers;
  answers.infos.resize(daemons.size());
  answers.status.resize(daemons.size());
  ForEachDaemon(daemons, [&](size_t i) {
    auto resp = daemons[i].Call(&v1::BenchService::Stub::GetHostInfo, v1::GetHostInfoRequest());
    answers.status[i] = resp.status();
    if (resp.ok()) answers.infos[i] = resp->host();
  });
  return answers;
}

void PrintJson(const std::vector<Daemon>& daemons, const HostAnswers& h, std::ostream& out) {
  JsonWriter json(out);
  json.Array();
  for (size_t i = 0; i < h.infos.size(); ++i) {
    const absl::Status& s = h.status[i];
    json.Object().Key("name").String(daemons[i].host.name);
    json.Key("reachable").Bool(s.ok() || h.refused(i));
    if (s.ok()) json.Key("host").Message(h.infos[i]);
    if (h.refused(i)) json.Key("refused").String(s.message());
    json.End();
  }
  json.End();
}

std::string Gpus(const v1::HostInfo& h) {
  if (h.gpus().empty()) return h.mps_available() ? "Apple MPS" : "none";
  std::map<std::string, int> count;
  for (const auto& g : h.gpus()) ++count[absl::StrCat(g.name(), " ", GiB(g.memory_bytes()))];
  std::vector<std::string> parts;
  for (const auto& [name, n] : count) parts.push_back(absl::StrCat(n, "x ", name));
  return absl::StrJoin(parts, ", ");
}

std::string Confinement(const v1::HostInfo& h) {
  if (h.worker_confinement().empty()) return "-";  // a daemon before it
  return h.unconfined_user_models_allowed()
             ? absl::StrCat(h.worker_confinement(), "; user models allowed unconfined")
             : h.worker_confinement();
}

std::string OrDash(const std::string& s) { return s.empty() ? "-" : s; }

Table SideBySide(const std::vector<Daemon>& daemons, const HostAnswers& h) {
  using Field = std::function<std::string(const v1::HostInfo&)>;
  const std::pair<const char*, Field> kRows[] = {
      {"hostname", [](const v1::HostInfo& i) { return i.hostname(); }},
      {"gpus", Gpus},
      {"compute capability",
       [](const v1::HostInfo& i) {
         return i.gpus().empty() ? std::string("-") : i.gpus(0).compute_capability();
       }},
      {"driver", [](const v1::HostInfo& i) { return OrDash(i.driver_version()); }},
      {"cuda", [](const v1::HostInfo& i) { return OrDash(i.cuda_version()); }},
      {"cudnn", [](const v1::HostInfo& i) { return OrDash(i.cudnn_version()); }},
      {"torch", [](const v1::HostInfo& i) { return i.torch_version(); }},
      {"cpu",
       [](const v1::HostInfo& i) {
         return absl::StrCat(i.cpu_model(), " (", i.cpu_cores(), " cores)");
       }},
      {"cpu blas",
       [](const v1::HostInfo& i) {
         return i.cpu_blas().empty() ? std::string("-")
                                     : absl::StrCat(i.cpu_blas(), ", ", i.cpu_threads(),
                                                    " threads");
       }},
      {"memory", [](const v1::HostInfo& i) { return GiB(i.memory_bytes()); }},
      {"os", [](const v1::HostInfo& i) { return absl::StrCat(i.os(), " ", i.kernel()); }},
      {"gpubench", [](const v1::HostInfo& i) { return i.gpubench_version(); }},
      {"worker confinement", Confinement},
  };
  Table t;
  t.header = {"host"};
  for (const Daemon& d : daemons) t.header.push_back(d.host.name);
  for (const auto& [name, field] : kRows) {
    std::vector<std::string> r = {name};
    for (size_t i = 0; i < h.infos.size(); ++i) {
      if (h.status[i].ok()) {
        r.push_back(field(h.infos[i]));
      } else if (std::string(name) != "hostname") {
        r.push_back("-");
      } else if (h.refused(i)) {
        r.push_back(absl::StrCat("refused: ", h.status[i].message()));
      } else {
        r.push_back("unreachable");
      }
    }
    t.rows.push_back(std::move(r));
  }
  return t;
}

}  // namespace

int HostsCommand(const Args& a, std::ostream& out, std::ostream& err) {
  auto daemons = ConnectAll(a, /*all_fleet=*/true);
  if (!daemons.ok()) return Usage(err, std::string(daemons.status().message()));
  const HostAnswers answers = AskEach(*daemons);
  int code = kExitOk;
  for (size_t i = 0; i < daemons->size(); ++i) {
    if (!answers.status[i].ok()) {
      code = std::max(code, CallFailed((*daemons)[i].host, answers.status[i], err));
    }
  }
  if (a.format == Format::kJson) {
    PrintJson(*daemons, answers, out);
  } else {
    PrintTable(SideBySide(*daemons, answers), a.format, out);
  }
  err << HostsAnswered(*daemons, answers.status) << "\n";
  return code;
}

}  // namespace gpubench::client
