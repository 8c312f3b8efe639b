#include "server/model_upload.h"

#include <algorithm>
#include <cstdio>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/paths.h"
#include "common/sha256.h"
#include "common/spec.h"
#include "server/status_util.h"

namespace gpubench::server {
namespace {

// Receives a model: a header, then chunks into a temporary file; checks size
// and sha256, then keeps it once per hash under the model directory. The idle
// watch ends it (on its own thread) when it goes quiet or runs past the
// deadline its size gives, so mu_ orders that ending with the reads.
class UploadReactor : public grpc::ServerReadReactor<v1::UploadModelRequest> {
 public:
  UploadReactor(storage::Store* store, const ServiceOptions& options,
                Caller caller, bool shared, UploadLedger* ledger,
                IdleWatch* idle, v1::UploadModelResponse* response)
      : store_(store),
        options_(options),
        caller_(std::move(caller)),
        shared_(shared),
        ledger_(ledger),
        idle_(idle),
        response_(response) {
    idle_token_ = idle_->Watch([this](IdleWatch::Reason why) { Cut(why); });
    absl::MutexLock lock(&mu_);
    StartRead(&request_);
  }

  void OnReadDone(bool ok) override {
    absl::MutexLock lock(&mu_);
    if (finished_) return;  // the idle watch ended it
    idle_->Touch(idle_token_);
    absl::Status s = ok ? Take() : Complete();
    if (!s.ok() || !ok) {
      EndLocked(ToGrpcStatus(s));
      return;
    }
    StartRead(&request_);
  }

  void OnDone() override {
    idle_->Unwatch(idle_token_);
    {
      absl::MutexLock lock(&mu_);
      Release();
    }
    delete this;
  }

 private:
  // On the idle watch's thread: ends the upload with the reason, which the
  // uploader hears (a TryCancel would tell it only "Cancelled").
  void Cut(IdleWatch::Reason why) {
    absl::MutexLock lock(&mu_);
    if (finished_) return;
    if (why == IdleWatch::Reason::kIdle) {
      Log(LogLevel::kInfo, "an upload by ", caller_.name, " sent nothing for ",
          absl::FormatDuration(idle_->idle()),
          " and was cancelled; its quota is free again");
      EndLocked(grpc::Status(
          grpc::StatusCode::CANCELLED,
          absl::StrCat(
              "the upload sent nothing for ",
              absl::FormatDuration(idle_->idle()),
              " (the daemon's --upload-idle-timeout-ms) and was cancelled")));
      return;
    }
    Log(LogLevel::kInfo, "an upload by ", caller_.name, " had ", received_,
        " of ", header_.size_bytes(), " bytes after ",
        absl::FormatDuration(allowed_),
        " and was cancelled; its quota is free again");
    EndLocked(grpc::Status(
        grpc::StatusCode::DEADLINE_EXCEEDED,
        absl::StrCat(
            "the upload sent ", received_, " of ", header_.size_bytes(),
            " bytes in ", absl::FormatDuration(allowed_),
            ", the most the daemon allows for that size "
            "(--upload-idle-timeout-ms "
            "plus size at --upload-min-bytes-per-second ",
            options_.upload_min_bytes_per_second, "), and was cancelled")));
  }

  // Drops what is not stored and gives the quota back before the client
  // hears the end and sends its next upload.
  void EndLocked(const grpc::Status& status)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    finished_ = true;
    out_.close();
    if (!temp_.empty()) std::remove(temp_.c_str());  // gone already once stored
    Release();
    Finish(status);
  }

  void Release() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    ledger_->Release(caller_.name, reserved_);
    reserved_ = 0;
  }

  absl::Status Take() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (request_.has_header()) {
      if (!temp_.empty())
        return absl::InvalidArgumentError("header: sent twice");
      header_ = request_.header();
      if (header_.name().empty())
        return absl::InvalidArgumentError("header.name: required");
      if (header_.format() == v1::MODEL_FORMAT_UNSPECIFIED) {
        header_.set_format(v1::MODEL_FORMAT_TORCHSCRIPT);
      }
      if (header_.format() != v1::MODEL_FORMAT_TORCHSCRIPT &&
          header_.format() != v1::MODEL_FORMAT_AOTI_PACKAGE) {
        return absl::InvalidArgumentError(absl::StrCat(
            "header.format: unknown ModelFormat ", header_.format()));
      }
      // An AOTI package is a shared library the worker will dlopen.
      if (header_.format() == v1::MODEL_FORMAT_AOTI_PACKAGE &&
          caller_.role < v1::ROLE_ADMIN && !options_.allow_uploaded_aoti) {
        return absl::PermissionDeniedError(
            "header.format: an AOTInductor package runs native code on the "
            "host; uploading "
            "one needs the admin role");
      }
      if (!IsSha256Hex(header_.sha256())) {
        return absl::InvalidArgumentError(
            "header.sha256: must be 64 lower-case hex digits");
      }
      if (header_.name().size() > kMaxNameBytes) {
        return absl::InvalidArgumentError(
            absl::StrCat("header.name: at most ", kMaxNameBytes, " bytes"));
      }
      if (header_.size_bytes() <= 0 ||
          header_.size_bytes() > options_.max_model_bytes) {
        return absl::InvalidArgumentError(absl::StrCat(
            "header.size_bytes: must be in [1, ", options_.max_model_bytes,
            "] (the daemon's --max-model-bytes), got ", header_.size_bytes()));
      }
      // The quota counts stored models and the uploads in flight.
      auto stored = store_->models().TotalBytes();
      if (!stored.ok()) return stored.status();
      if (auto s = ledger_->Reserve(caller_.name, shared_, header_.size_bytes(),
                                    *stored, options_.models_quota_bytes);
          !s.ok()) {
        return s;
      }
      reserved_ = header_.size_bytes();
      if (options_.upload_min_bytes_per_second > 0) {
        allowed_ = std::max(idle_->idle(), absl::ZeroDuration()) +
                   absl::Seconds(static_cast<double>(header_.size_bytes()) /
                                 static_cast<double>(
                                     options_.upload_min_bytes_per_second));
        idle_->SetDeadline(idle_token_, absl::Now() + allowed_);
      }
      temp_ = absl::StrCat(options_.model_dir, "/.upload-", header_.sha256(),
                           "-", reinterpret_cast<uintptr_t>(this));
      out_.open(temp_, std::ios::binary | std::ios::trunc);
      if (!out_)
        return absl::InternalError(absl::StrCat("cannot write ", temp_));
      return absl::OkStatus();
    }
    if (temp_.empty())
      return absl::InvalidArgumentError("header: must come first");
    received_ += request_.chunk().size();
    if (received_ > header_.size_bytes()) {
      return absl::InvalidArgumentError(
          absl::StrCat("chunk: more data than header.size_bytes (",
                       header_.size_bytes(), ")"));
    }
    sha_.Update(request_.chunk());
    out_.write(request_.chunk().data(), request_.chunk().size());
    return out_ ? absl::OkStatus()
                : absl::InternalError(absl::StrCat("cannot write ", temp_));
  }

  absl::Status Complete() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (temp_.empty()) return absl::InvalidArgumentError("header: missing");
    out_.close();
    if (received_ != header_.size_bytes()) {
      return absl::InvalidArgumentError(
          absl::StrCat("header.size_bytes: ", header_.size_bytes(),
                       " announced, ", received_, " received"));
    }
    const std::string actual = sha_.HexDigest();
    if (actual != header_.sha256()) {
      return absl::InvalidArgumentError(
          absl::StrCat("header.sha256: the data hashes to ", actual, ", not ",
                       header_.sha256()));
    }
    if (auto existing = store_->models().Get(actual); existing.ok()) {
      *response_->mutable_model() = *existing;
      response_->set_already_present(true);
      std::remove(temp_.c_str());
      return absl::OkStatus();
    }
    if (std::rename(temp_.c_str(),
                    ModelPath(options_.model_dir, actual).c_str()) != 0) {
      return absl::InternalError(
          absl::StrCat("cannot store the model under ", options_.model_dir));
    }
    v1::ModelInfo model;
    model.set_sha256(actual);
    model.set_name(header_.name());
    model.set_size_bytes(received_);
    model.set_format(header_.format());
    model.set_uploaded_by(caller_.name);
    model.set_uploader_role(caller_.role);
    *model.mutable_upload_time() = NowTimestamp();
    if (auto s = store_->models().Put(model); !s.ok()) return s;
    *response_->mutable_model() = model;
    return absl::OkStatus();
  }

  storage::Store* const store_;
  const ServiceOptions& options_;
  const Caller caller_;
  const bool shared_;  // the daemon tells callers apart: shares apply
  UploadLedger* const ledger_;
  IdleWatch* const idle_;
  int64_t idle_token_ = 0;
  v1::UploadModelResponse* const response_;
  absl::Mutex mu_;
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
  int64_t reserved_ ABSL_GUARDED_BY(mu_) =
      0;  // in *ledger_, given back at the end
  absl::Duration allowed_ ABSL_GUARDED_BY(mu_) = absl::InfiniteDuration();
  v1::UploadModelRequest request_ ABSL_GUARDED_BY(mu_);
  v1::ModelUploadHeader header_ ABSL_GUARDED_BY(mu_);
  std::string temp_ ABSL_GUARDED_BY(mu_);
  std::ofstream out_ ABSL_GUARDED_BY(mu_);
  Sha256 sha_ ABSL_GUARDED_BY(mu_);  // of the chunks so far
  int64_t received_ ABSL_GUARDED_BY(mu_) = 0;
};
}  // namespace

grpc::ServerReadReactor<v1::UploadModelRequest>* NewModelUpload(
    storage::Store* store, const ServiceOptions& options, Caller caller,
    bool shared, UploadLedger* ledger, IdleWatch* idle,
    v1::UploadModelResponse* response) {
  return new UploadReactor(store, options, std::move(caller), shared, ledger,
                           idle, response);
}

}  // namespace gpubench::server
