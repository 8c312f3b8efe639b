// UploadModel's reactor: a model streamed in chunks into the daemon's model
// directory, within the caller's share of uploads and quota, cut when it
// goes quiet or too slow.
#ifndef GPUBENCH_SERVER_MODEL_UPLOAD_H_
#define GPUBENCH_SERVER_MODEL_UPLOAD_H_

#include "gpubench/v1/service.grpc.pb.h"
#include "server/auth.h"
#include "server/idle_watch.h"
#include "server/service.h"
#include "server/upload_ledger.h"
#include "storage/store.h"

namespace gpubench::server {

// A reactor that deletes itself when done. shared: callers authenticate,
// so each upload counts against its caller's share of the ledger.
grpc::ServerReadReactor<v1::UploadModelRequest>* NewModelUpload(
    storage::Store* store, const ServiceOptions& options, Caller caller,
    bool shared, UploadLedger* ledger, IdleWatch* idle,
    v1::UploadModelResponse* response);

}  // namespace gpubench::server

#endif  // GPUBENCH_SERVER_MODEL_UPLOAD_H_
