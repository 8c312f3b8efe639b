#include "server/job_queue.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"

namespace gpubench::server {

std::string GpuLease(int index) { return absl::StrCat("cuda:", index); }

void JobQueue::Push(const std::string& job_id, int priority, int64_t submit_ns, Leases leases,
                    int any_gpus, const std::string& submitter) {
  Remove(job_id);
  ++pushes_;
  auto key = std::make_tuple(-priority, submit_ns, job_id);
  order_.insert(key);
  queued_[job_id] = Entry{key, std::move(leases), std::max(0, any_gpus), submitter};
}

int JobQueue::QueuedBy(const std::string& submitter) const {
  // A scan: the queue is bounded (--max-queue) and this runs once a submit.
  int n = 0;
  for (const auto& [id, entry] : queued_) n += entry.submitter == submitter;
  return n;
}

bool JobQueue::Remove(const std::string& job_id) {
  auto it = queued_.find(job_id);
  if (it == queued_.end()) return false;
  order_.erase(it->second.key);
  queued_.erase(it);
  return true;
}

std::optional<JobQueue::Started> JobQueue::TakeStartable() {
  // What running jobs hold plus what waiting jobs ahead keep for themselves.
  Leases claimed = busy_;
  for (const auto& key : order_) {
    const std::string& id = std::get<2>(key);
    const Entry& entry = queued_.at(id);
    const Leases& want = entry.leases;
    // More GPUs than the host has: it can never start, and keeps nothing
    // from the jobs behind it (the daemon refuses such jobs).
    if (entry.any_gpus > gpu_count_) continue;
    // The GPUs it names count towards its K (its runs use them in turn);
    // the rest come from the free ones, lowest first.
    int named = 0;
    for (int i = 0; i < gpu_count_; ++i) named += want.count(GpuLease(i));
    const int extra = std::max(0, entry.any_gpus - named);
    std::vector<std::string> open;
    for (int i = 0; i < gpu_count_ && static_cast<int>(open.size()) < extra; ++i) {
      const std::string gpu = GpuLease(i);
      if (!claimed.count(gpu) && !want.count(gpu)) open.push_back(gpu);
    }
    const bool free =
        claimed.count(kWholeHost) == 0 && (want.count(kWholeHost) == 0 || claimed.empty()) &&
        std::none_of(want.begin(), want.end(),
                     [&](const std::string& d) { return claimed.count(d) > 0; }) &&
        static_cast<int>(open.size()) == extra;
    if (free) {
      Started started{id, want};
      started.leases.insert(open.begin(), open.end());
      busy_.insert(started.leases.begin(), started.leases.end());
      Remove(id);
      return started;
    }
    claimed.insert(want.begin(), want.end());
    // Kept for this job as they come free, so that it gets its K in the end.
    claimed.insert(open.begin(), open.end());
  }
  return std::nullopt;
}

void JobQueue::Release(const Leases& leases) {
  for (const std::string& d : leases) busy_.erase(d);
}

}  // namespace gpubench::server
