#include "client/local_runner.h"

#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "common/clock.h"
#include "common/spec.h"
#include "google/protobuf/util/time_util.h"
#include "worker/process.h"

namespace gpubench::client {

using google::protobuf::util::TimeUtil;

absl::StatusOr<LocalJobResult> RunLocalJob(
    const v1::JobSpec& spec, const std::string& worker_path,
    storage::Store* store,
    const std::function<void(const v1::WorkerEvent&)>& on_event) {
  auto configs = ExpandSweep(spec);
  if (!configs.ok()) return configs.status();
  LocalJobResult result;
  v1::Job& job = result.job;
  *job.mutable_spec() = spec;
  job.set_state(v1::JOB_STATE_RUNNING);
  job.set_run_count(configs->size());
  job.set_attempt(1);
  *job.mutable_submit_time() = NowTimestamp();
  *job.mutable_start_time() = job.submit_time();
  auto id = store->InsertJob(job);
  if (!id.ok()) return id.status();
  job.set_job_id(*id);

  v1::WorkerRequest request;
  request.set_job_id(job.job_id());
  *request.mutable_spec() = spec;
  // The user's own worker, as the user: any file they can read is theirs to load.
  request.add_model_roots("/");
  auto process = worker::WorkerProcess::Start(worker_path, request);
  if (!process.ok()) return process.status();

  bool done = false;
  absl::Status stream_status;
  while (true) {
    v1::WorkerEvent event;
    auto got = (*process)->Next(&event);
    if (!got.ok()) {
      stream_status = got.status();
      (*process)->Kill();
      break;
    }
    if (!*got) break;
    if (on_event) on_event(event);
    if (event.has_run_finished()) {
      v1::Run run = event.run_finished().run();
      auto run_id = store->InsertRun(run);
      if (!run_id.ok()) return run_id.status();
      run.set_run_id(*run_id);
      if (!event.run_finished().trace_json().empty()) {
        if (auto s = store->PutTrace(*run_id, "chrome", event.run_finished().trace_json());
            !s.ok()) {
          return s;
        }
      }
      CountFinishedRun(run, &job);
      result.runs.push_back(std::move(run));
    } else if (event.has_done()) {
      done = true;
      if (event.done().cancelled()) job.set_state(v1::JOB_STATE_CANCELLED);
    }
  }
  const worker::ExitInfo exit = (*process)->Wait();
  *job.mutable_end_time() = NowTimestamp();
  if (!done || !exit.ok() || !stream_status.ok()) {
    job.set_state(v1::JOB_STATE_FAILED);
    job.set_worker_exit(exit.Describe());
    job.set_worker_stderr_tail(exit.stderr_tail);
    job.set_error(stream_status.ok()
                      ? absl::StrCat("worker ended early: ", exit.Describe())
                      : std::string(stream_status.message()));
  } else if (job.state() == v1::JOB_STATE_RUNNING) {
    bool any_ok = false;
    for (const auto& r : result.runs) {
      any_ok |= r.state() == v1::RUN_STATE_SUCCEEDED ||
                r.state() == v1::RUN_STATE_OUT_OF_MEMORY ||
                r.state() == v1::RUN_STATE_SKIPPED_AFTER_OOM;
    }
    job.set_state(any_ok ? v1::JOB_STATE_SUCCEEDED : v1::JOB_STATE_FAILED);
    if (!any_ok) job.set_error("every run failed");
  }
  if (auto s = store->UpdateJob(job); !s.ok()) return s;
  return result;
}

}  // namespace gpubench::client
