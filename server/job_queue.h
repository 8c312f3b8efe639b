// The daemon's queue of jobs waiting for devices: priority first, then
// submission order, one lease per device ("cpu", "cuda:N", "mps"). A job may
// also ask for any K of the host's GPUs (a distributed run over K ranks); it
// takes K free ones together, or none. In memory only (the store keeps the
// QUEUED jobs); not thread-safe: JobManager's lock guards it.
#ifndef GPUBENCH_SERVER_JOB_QUEUE_H_
#define GPUBENCH_SERVER_JOB_QUEUE_H_

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>

namespace gpubench::server {

class JobQueue {
 public:
  using Leases = std::set<std::string>;
  // The lease of the whole host: a job holding it runs alone, and it waits
  // until nothing else runs.
  static constexpr char kWholeHost[] = "host";

  // gpu_count: the host's GPUs, leased as "cuda:0" ... "cuda:<gpu_count-1>";
  // what a job asking for any K GPUs chooses from.
  explicit JobQueue(int gpu_count = 0) : gpu_count_(gpu_count) {}

  // Queues a job that needs `leases` and any_gpus GPUs in all: the GPUs
  // among `leases` and as many more of the host's free ones. A higher priority goes first; equal ones in
  // submit_ns order (then by id).
  // submitter is who submitted it (QueuedBy counts by it).
  void Push(const std::string& job_id, int priority, int64_t submit_ns, Leases leases,
            int any_gpus = 0, const std::string& submitter = "");

  // Takes a queued job out; false when it was not queued.
  bool Remove(const std::string& job_id);
  // Whether a job is queued.
  bool Contains(const std::string& job_id) const { return queued_.count(job_id) > 0; }

  // The first job, in queue order, whose devices are all free (for one
  // wanting kWholeHost: every device; while kWholeHost is held: none), with
  // its leases now held; nullopt when none can start. A job asking for any K
  // GPUs gets the K lowest-numbered free ones, all at once (never some of
  // them, so no two jobs hold part of what each needs). A job waits while an
  // earlier one wants any of its devices, and a waiting job that asks for
  // any K GPUs keeps the free ones it would take from the jobs behind it
  // (up to K), so a job wanting several devices (or the whole host) is not
  // starved by a stream of small ones, and the GPUs beyond its K stay open
  // to them.
  struct Started {
    std::string job_id;
    Leases leases;  // the chosen GPUs included
  };
  std::optional<Started> TakeStartable();

  // Frees the leases of a job that ended.
  void Release(const Leases& leases);

  size_t size() const { return order_.size(); }
  // Jobs ever pushed: what a look at the queue has seen.
  int64_t pushes() const { return pushes_; }
  // The queued jobs of one submitter.
  int QueuedBy(const std::string& submitter) const;
  bool busy(const std::string& lease) const { return busy_.count(lease) > 0; }
  int gpu_count() const { return gpu_count_; }

 private:
  struct Entry {
    std::tuple<int, int64_t, std::string> key;
    Leases leases;
    int any_gpus = 0;
    std::string submitter;
  };
  const int gpu_count_;
  // (-priority, submit ns, id): the queue order.
  std::set<std::tuple<int, int64_t, std::string>> order_;
  std::map<std::string, Entry> queued_;
  Leases busy_;
  int64_t pushes_ = 0;
};

// The lease name of GPU `index`: "cuda:<index>".
std::string GpuLease(int index);

}  // namespace gpubench::server

#endif  // GPUBENCH_SERVER_JOB_QUEUE_H_
