// JsonWriter: the CLI's one JSON emitter. Every `--output json` and
// `--output gbench` document is written through it.
#ifndef GPUBENCH_CLIENT_JSON_WRITER_H_
#define GPUBENCH_CLIENT_JSON_WRITER_H_

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "google/protobuf/message.h"

namespace gpubench::client {

// Writes one JSON document to a stream, two-space indented. Objects keep
// their keys in the order written (a table's columns stay in order);
// strings are escaped here and nowhere else; a number JSON cannot hold
// (NaN, infinity) is null; a proto message is protobuf's own JSON of it.
//
//   JsonWriter json(out);
//   json.Object().Key("host").String(name).Key("runs").Int(3).End();
//
// Not thread-safe. The caller balances Object/Array with End.
class JsonWriter {
 public:
  // kLine writes the document on one line (a JSON Lines record).
  enum class Layout { kIndented, kLine };
  explicit JsonWriter(std::ostream& out, Layout layout = Layout::kIndented)
      : out_(out), layout_(layout) {}
  JsonWriter(const JsonWriter&) = delete;
  JsonWriter& operator=(const JsonWriter&) = delete;
  // Ends the document with a newline once every Object and Array is ended.
  ~JsonWriter();

  JsonWriter& Object();
  JsonWriter& Array();
  JsonWriter& End();
  // In an object, before each value.
  JsonWriter& Key(absl::string_view key);

  JsonWriter& String(absl::string_view value);
  JsonWriter& Number(double value);
  // As Number, but a whole value keeps a fraction ("700.0"), so that readers
  // that type a column by its values (DuckDB, pandas) make it a float column.
  JsonWriter& Real(double value);
  JsonWriter& Int(int64_t value);
  JsonWriter& Bool(bool value);
  JsonWriter& Null();
  JsonWriter& Message(const google::protobuf::Message& message);

 private:
  // The comma and line break before a key or an array's element.
  void Next();
  void Indent();

  std::ostream& out_;
  const Layout layout_;
  std::vector<int> open_;  // per open object or array: elements written so far
  std::vector<bool> is_object_;
  bool after_key_ = false;
  bool wrote_ = false;
};

// v in the fewest digits that read back as v (%.15g, else %.17g): 0.1 is
// "0.1" and 66571993088 is "66571993088". For finite v.
std::string ShortestNumber(double v);

}  // namespace gpubench::client

#endif  // GPUBENCH_CLIENT_JSON_WRITER_H_
