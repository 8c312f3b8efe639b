#include "server/upload_ledger.h"

#include "absl/strings/str_cat.h"

namespace gpubench::server {

absl::Status UploadLedger::Reserve(const std::string& caller, bool shared,
                                   int64_t size_bytes, int64_t stored_bytes,
                                   int64_t quota_bytes) {
  absl::MutexLock lock(&mu_);
  if (shared) {
    auto it = by_caller_.find(caller);
    const Share mine = it == by_caller_.end() ? Share{} : it->second;
    if (mine.uploads >= kMaxPerCaller) {
      return absl::ResourceExhaustedError(absl::StrCat(
          caller, " has ", mine.uploads, " uploads in flight, its share (at most ",
          kMaxPerCaller, " at a time); retry when one has ended"));
    }
    const int64_t share_bytes = quota_bytes / 2;
    if (mine.bytes + size_bytes > share_bytes) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "header.size_bytes: ", size_bytes, " more bytes would pass ", caller,
          "'s share of uploads in flight, half the model quota (", share_bytes,
          " of --models-quota-bytes ", quota_bytes, "; ", mine.bytes,
          " uploading); retry when they have ended"));
    }
  }
  if (stored_bytes + bytes_ + size_bytes > quota_bytes) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "header.size_bytes: ", size_bytes, " more bytes would pass the model quota of ",
        quota_bytes, " (", stored_bytes, " stored, ", bytes_,
        " uploading); an admin can delete models with gpubench model rm"));
  }
  bytes_ += size_bytes;
  Share& mine = by_caller_[caller];
  ++mine.uploads;
  mine.bytes += size_bytes;
  return absl::OkStatus();
}

void UploadLedger::Release(const std::string& caller, int64_t size_bytes) {
  if (size_bytes == 0) return;
  absl::MutexLock lock(&mu_);
  bytes_ -= size_bytes;
  auto it = by_caller_.find(caller);
  if (it == by_caller_.end()) return;
  it->second.bytes -= size_bytes;
  if (--it->second.uploads <= 0) by_caller_.erase(it);
}

}  // namespace gpubench::server
