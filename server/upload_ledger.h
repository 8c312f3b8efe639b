// The model quota's side of uploads in flight: what they hold, in all and
// per caller. Thread-safe.
#ifndef GPUBENCH_SERVER_UPLOAD_LEDGER_H_
#define GPUBENCH_SERVER_UPLOAD_LEDGER_H_

#include <cstdint>
#include <map>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"

namespace gpubench::server {

// The bytes of uploads in flight, in all and per caller. They count against
// the models quota until they end, and one caller may hold only its share:
// at most kMaxPerCaller uploads at a time, of at most half the quota
// together. Half of the whole quota rather than of what is free, so that one
// caller can still fill the quota one upload after another, while the other
// half stays open to everyone else for as long as that caller's uploads
// last (bounded by the idle timeout and the minimum rate).
class UploadLedger {
 public:
  static constexpr int kMaxPerCaller = 2;

  // Reserves size_bytes for one more upload by `caller`, or says why not
  // (RESOURCE_EXHAUSTED). `shared`: the caller is one of several identities
  // (false where the daemon knows none, and every caller is "anonymous").
  absl::Status Reserve(const std::string& caller, bool shared, int64_t size_bytes,
                       int64_t stored_bytes, int64_t quota_bytes);
  // Gives back what Reserve took (nothing where bytes is 0).
  void Release(const std::string& caller, int64_t size_bytes);

 private:
  struct Share {
    int uploads = 0;
    int64_t bytes = 0;
  };
  absl::Mutex mu_;
  int64_t bytes_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<std::string, Share> by_caller_ ABSL_GUARDED_BY(mu_);
};

}  // namespace gpubench::server

#endif  // GPUBENCH_SERVER_UPLOAD_LEDGER_H_
