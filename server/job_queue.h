// The daemon's queue of jobs waiting for devices: priority first, then
// submission order, one lease per device ("cpu", "cuda:N", "mps"). In memory
// only (the store keeps the QUEUED jobs); not thread-safe: JobManager's lock
// guards it.
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

  // Queues a job that needs `leases`. A higher priority goes first; equal
  // ones in submit_ns order (then by id).
  void Push(const std::string& job_id, int priority, int64_t submit_ns, Leases leases);

  // Takes a queued job out; false when it was not queued.
  bool Remove(const std::string& job_id);

  // The first job, in queue order, whose devices are all free (for one
  // wanting kWholeHost: every device; while kWholeHost is held: none), with
  // its leases now held; nullopt when none can start. A job waits while an
  // earlier one wants any of its devices, so a job wanting several devices
  // (or the whole host) is not starved by a stream of small ones.
  struct Started {
    std::string job_id;
    Leases leases;
  };
  std::optional<Started> TakeStartable();

  // Frees the leases of a job that ended.
  void Release(const Leases& leases);

  size_t size() const { return order_.size(); }
  bool busy(const std::string& lease) const { return busy_.count(lease) > 0; }

 private:
  // (-priority, submit ns, id): the queue order.
  std::set<std::tuple<int, int64_t, std::string>> order_;
  std::map<std::string, std::pair<std::tuple<int, int64_t, std::string>, Leases>> queued_;
  Leases busy_;
};

}  // namespace gpubench::server

#endif  // GPUBENCH_SERVER_JOB_QUEUE_H_
