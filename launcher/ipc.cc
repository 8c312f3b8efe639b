#include "launcher/ipc.h"

#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/util/delimited_message_util.h"

namespace gpubench::ipc {

MessageWriter::MessageWriter(int fd) : out_(fd) {}

absl::Status MessageWriter::Write(const google::protobuf::Message& message) {
  if (!google::protobuf::util::SerializeDelimitedToZeroCopyStream(message,
                                                                  &out_) ||
      !out_.Flush()) {
    return absl::UnavailableError("the other end of the pipe is gone");
  }
  return absl::OkStatus();
}

MessageReader::MessageReader(int fd) : in_(fd) {}

absl::StatusOr<bool> MessageReader::Read(google::protobuf::Message* message) {
  // A clean end of stream is EOF exactly at a message boundary.
  const void* data;
  int size;
  if (!in_.Next(&data, &size)) return false;
  in_.BackUp(size);
  bool clean_eof = false;
  if (!google::protobuf::util::ParseDelimitedFromZeroCopyStream(message, &in_,
                                                                &clean_eof)) {
    if (clean_eof) return false;
    return absl::DataLossError("truncated or malformed message on the pipe");
  }
  return true;
}

}  // namespace gpubench::ipc
