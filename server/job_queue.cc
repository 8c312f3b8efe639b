#include "server/job_queue.h"

#include <algorithm>

namespace gpubench::server {

void JobQueue::Push(const std::string& job_id, int priority, int64_t submit_ns, Leases leases) {
  Remove(job_id);
  auto key = std::make_tuple(-priority, submit_ns, job_id);
  order_.insert(key);
  queued_[job_id] = {key, std::move(leases)};
}

bool JobQueue::Remove(const std::string& job_id) {
  auto it = queued_.find(job_id);
  if (it == queued_.end()) return false;
  order_.erase(it->second.first);
  queued_.erase(it);
  return true;
}

std::optional<JobQueue::Started> JobQueue::TakeStartable() {
  Leases claimed = busy_;
  for (const auto& key : order_) {
    const std::string& id = std::get<2>(key);
    const Leases& want = queued_.at(id).second;
    const bool free =
        claimed.count(kWholeHost) == 0 && (want.count(kWholeHost) == 0 || claimed.empty()) &&
        std::none_of(want.begin(), want.end(),
                     [&](const std::string& d) { return claimed.count(d) > 0; });
    if (free) {
      Started started{id, want};
      busy_.insert(want.begin(), want.end());
      Remove(started.job_id);
      return started;
    }
    claimed.insert(want.begin(), want.end());
  }
  return std::nullopt;
}

void JobQueue::Release(const Leases& leases) {
  for (const std::string& d : leases) busy_.erase(d);
}

}  // namespace gpubench::server
