// `gpubench export`: every host's runs, a flat row each, as JSON Lines on
// stdout or loaded into a PostgreSQL table (--to postgresql://...).
#include <algorithm>
#include <memory>
#include <mutex>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "client/cli.h"
#include "client/cli_internal.h"
#include "client/json_writer.h"
#include "client/postgres_sink.h"
#include "client/run_columns.h"

namespace gpubench::client {
namespace {

// A row as one JSON Lines record: each column a key, absent ones null.
void WriteJsonLine(const std::vector<Cell>& row, std::ostream& out) {
  JsonWriter json(out, JsonWriter::Layout::kLine);
  json.Object();
  for (const Cell& c : row) {
    json.Key(c.name);
    if (!c.present) {
      json.Null();
    } else if (c.type == ColumnType::kNumber) {
      json.Real(c.number);
    } else if (c.type == ColumnType::kInteger) {
      json.Int(c.integer);
    } else if (c.type == ColumnType::kBool) {
      json.Bool(c.number != 0);
    } else {
      json.String(c.text);
    }
  }
  json.End();
}

}  // namespace

int ExportCommand(const Args& a, std::ostream& out, std::ostream& err) {
  if (!a.positional.empty()) return Usage(err, "export takes no positional arguments");
  v1::QueryRunsRequest query;
  if (auto s = RunsQuery(a, &query); !s.ok()) return Usage(err, std::string(s.message()));
  const std::string to = a.Option("to");
  std::unique_ptr<PostgresSink> sink;
  if (!to.empty()) {
    if (!absl::StartsWith(to, "postgresql://") && !absl::StartsWith(to, "postgres://")) {
      return Usage(err, "--to: not a postgresql:// URL");
    }
    auto opened = PostgresSink::Open(to, a.Option("table", "gpubench_runs"),
                                     ExportColumns(v1::Run(), ""));
    if (!opened.ok()) {
      if (absl::IsInvalidArgument(opened.status())) {
        return Usage(err, std::string(opened.status().message()));
      }
      err << "gpubench: " << opened.status().message() << "\n";
      return absl::IsUnavailable(opened.status()) ? kExitUnreachable : kExitJobFailed;
    }
    sink = std::move(*opened);
  } else if (a.Has("table")) {
    return Usage(err, "--table goes with --to postgresql://...");
  }
  auto daemons = ConnectAll(a, /*all_fleet=*/true);
  if (!daemons.ok()) return Usage(err, std::string(daemons.status().message()));
  // Hosts are read at once, a page at a time; each page is written whole
  // (its lines, or one transaction) before the next, a row at a time, so
  // at most a page per host is held.
  std::mutex mu;
  absl::Status sink_status;
  int64_t exported = 0;
  std::vector<absl::Status> status(daemons->size());
  ForEachDaemon(*daemons, [&](size_t i) {
    const Daemon& d = (*daemons)[i];
    v1::QueryRunsRequest req = query;
    req.set_page_size(1000);
    do {
      auto page = d.Call(&v1::BenchService::Stub::QueryRuns, req);
      if (!page.ok()) {
        status[i] = page.status();
        return;
      }
      std::lock_guard<std::mutex> lock(mu);
      if (!sink_status.ok()) return;
      for (const v1::Run& r : page->runs()) {
        const std::vector<Cell> row = ExportColumns(r, d.host.name);
        if (sink) {
          sink->AddRow(row);
        } else {
          WriteJsonLine(row, out);
        }
      }
      sink_status = sink ? sink->Flush() : absl::OkStatus();
      out.flush();
      if (!out) sink_status = absl::DataLossError("cannot write the output (a full disk?)");
      if (sink_status.ok()) exported += page->runs_size();
      if (!page->next_page_token().empty() && page->next_page_token() == req.page_token()) {
        status[i] = absl::DataLossError("gave the same page token twice");
        return;
      }
      req.set_page_token(page->next_page_token());
    } while (!req.page_token().empty());
  });
  int code = kExitOk;
  for (size_t i = 0; i < daemons->size(); ++i) {
    if (!status[i].ok()) code = std::max(code, CallFailed((*daemons)[i].host, status[i], err));
  }
  if (!sink_status.ok()) {
    err << "gpubench: " << sink_status.message() << "\n";
    code = std::max(code, kExitJobFailed);  // 1: the load failed
  }
  err << "exported " << exported << " runs";
  if (sink) {
    err << " into " << a.Option("table", "gpubench_runs") << ": " << sink->counts().inserted
        << " new, " << sink->counts().updated << " updated, " << sink->counts().unchanged
        << " unchanged";
  }
  err << "; " << HostsAnswered(*daemons, status) << "\n";
  return code;
}

}  // namespace gpubench::client
