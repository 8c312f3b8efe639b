// Length-delimited protobuf messages over file descriptors: the pipe
// protocol between a parent (daemon or CLI) and gpubench-worker.
#ifndef GPUBENCH_LAUNCHER_IPC_H_
#define GPUBENCH_LAUNCHER_IPC_H_

#include <memory>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "google/protobuf/io/zero_copy_stream_impl.h"
#include "google/protobuf/message.h"

namespace gpubench::ipc {

// Writes messages to a file descriptor it does not own, flushing after each.
// Thread-compatible.
class MessageWriter {
 public:
  explicit MessageWriter(int fd);
  // Unavailable when the reader has gone away (broken pipe).
  absl::Status Write(const google::protobuf::Message& message);

 private:
  google::protobuf::io::FileOutputStream out_;
};

// Reads messages from a file descriptor it does not own. Thread-compatible.
class MessageReader {
 public:
  explicit MessageReader(int fd);
  // True and *message filled; false at a clean end of stream; DataLoss for a
  // truncated or garbled message.
  absl::StatusOr<bool> Read(google::protobuf::Message* message);

 private:
  google::protobuf::io::FileInputStream in_;
};

}  // namespace gpubench::ipc

#endif  // GPUBENCH_LAUNCHER_IPC_H_
