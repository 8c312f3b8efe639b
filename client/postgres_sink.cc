#include "client/postgres_sink.h"

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/printable.h"

#ifdef GPUBENCH_HAVE_LIBPQ
#include <libpq-fe.h>
#endif

namespace gpubench::client {
namespace {

// The temporary table each page is copied into before the upsert.
constexpr char kStaging[] = "gpubench_export_staging";

absl::Status CheckTableName(const std::string& table) {
  bool ok = !table.empty() && table.size() <= 63 && !absl::ascii_isdigit(table[0]) &&
            table != kStaging;
  for (char c : table) ok = ok && (absl::ascii_isalnum(c) || c == '_');
  if (ok) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "--table: \"", Printable(table),
      "\" is not a table name (letters, digits and _, at most 63; not ", kStaging, ")"));
}

}  // namespace

#ifdef GPUBENCH_HAVE_LIBPQ
namespace {

const char* SqlType(ColumnType t) {
  switch (t) {
    case ColumnType::kNumber: return "double precision";
    case ColumnType::kInteger: return "bigint";
    case ColumnType::kBool: return "boolean";
    case ColumnType::kTime: return "timestamptz";
    default: return "text";
  }
}

// A cell in COPY's text format: \N where absent; text as valid UTF-8
// without NUL (which PostgreSQL's text cannot hold), its backslashes, tabs
// and line breaks escaped.
void AppendCopyField(const Cell& c, std::string* out) {
  if (!c.present) {
    out->append("\\N");
    return;
  }
  if (c.type == ColumnType::kBool) {
    out->push_back(c.number != 0 ? 't' : 'f');
    return;
  }
  if (c.type != ColumnType::kText && c.type != ColumnType::kTime) {
    out->append(CsvText(c));
    return;
  }
  for (char ch : ValidUtf8(c.text)) {
    switch (ch) {
      case '\\': out->append("\\\\"); break;
      case '\t': out->append("\\t"); break;
      case '\n': out->append("\\n"); break;
      case '\r': out->append("\\r"); break;
      case '\0': out->append("\xef\xbf\xbd"); break;
      default: out->push_back(ch);
    }
  }
}


// One statement's result, cleared when it goes.
struct Result {
  explicit Result(PGresult* r) : r(r) {}
  ~Result() { PQclear(r); }
  Result(const Result&) = delete;
  Result& operator=(const Result&) = delete;
  ExecStatusType status() const { return PQresultStatus(r); }
  PGresult* r;
};

std::string Quoted(const std::string& name) { return absl::StrCat("\"", name, "\""); }

absl::Status Failed(PGconn* conn, const std::string& what) {
  std::string message = PQerrorMessage(conn);
  while (!message.empty() && message.back() == '\n') message.pop_back();
  return absl::InternalError(absl::StrCat("postgresql: ", what, ": ", Printable(message)));
}

absl::Status Exec(PGconn* conn, const std::string& sql, const std::string& what) {
  Result r(PQexec(conn, sql.c_str()));
  if (r.status() == PGRES_COMMAND_OK || r.status() == PGRES_TUPLES_OK) return absl::OkStatus();
  return Failed(conn, what);
}

void IgnoreNotice(void*, const char*) {}

// message with the URL's password (USER:PASSWORD@ or ?password=) written as
// ***: libpq echoes the URL in some of its errors, and stderr ends in logs.
std::string WithoutPassword(std::string message, const std::string& url) {
  std::vector<std::string> secrets;
  const size_t scheme = url.find("://");
  const size_t at = url.find('@', scheme == std::string::npos ? 0 : scheme + 3);
  if (scheme != std::string::npos && at != std::string::npos) {
    const std::string user_info = url.substr(scheme + 3, at - scheme - 3);
    if (const size_t colon = user_info.find(':'); colon != std::string::npos) {
      secrets.push_back(user_info.substr(colon + 1));
    }
  }
  for (size_t p = url.find("password="); p != std::string::npos;
       p = url.find("password=", p + 1)) {
    const size_t from = p + 9;
    secrets.push_back(url.substr(from, url.find('&', from) - from));
  }
  for (const std::string& secret : secrets) {
    if (secret.empty()) continue;
    for (size_t p = message.find(secret); p != std::string::npos; p = message.find(secret, p)) {
      message.replace(p, secret.size(), "***");
    }
  }
  return message;
}

}  // namespace

absl::StatusOr<std::unique_ptr<PostgresSink>> PostgresSink::Open(
    const std::string& url, const std::string& table, const std::vector<Cell>& columns) {
  if (auto s = CheckTableName(table); !s.ok()) return s;
  PGconn* conn = PQconnectdb(url.c_str());
  if (conn == nullptr) return absl::ResourceExhaustedError("postgresql: out of memory");
  std::vector<std::string> names;
  for (const Cell& c : columns) names.push_back(c.name);
  std::unique_ptr<PostgresSink> sink(new PostgresSink(conn, table, names));
  if (PQstatus(conn) != CONNECTION_OK) {
    std::string message = PQerrorMessage(conn);
    while (!message.empty() && message.back() == '\n') message.pop_back();
    return absl::UnavailableError(
        absl::StrCat("postgresql: cannot connect: ", Printable(WithoutPassword(message, url))));
  }
  // "relation already exists, skipping" and the like are not the user's
  // business.
  PQsetNoticeProcessor(conn, IgnoreNotice, nullptr);
  if (PQsetClientEncoding(conn, "UTF8") != 0) return Failed(conn, "client encoding");
  std::vector<std::string> add;
  for (const Cell& c : columns) {
    add.push_back(absl::StrCat("ADD COLUMN IF NOT EXISTS ", Quoted(c.name), " ", SqlType(c.type)));
  }
  const std::string t = Quoted(table);
  for (const std::string& sql :
       {absl::StrCat("CREATE TABLE IF NOT EXISTS ", t,
                     " (host_id text NOT NULL, run_id text NOT NULL, PRIMARY KEY (host_id, run_id))"),
        absl::StrCat("ALTER TABLE ", t, " ", absl::StrJoin(add, ", ")),
        absl::StrCat("CREATE TEMP TABLE ", kStaging, " (LIKE ", t,
                     ") ON COMMIT DELETE ROWS")}) {
    if (auto s = Exec(conn, sql, "making table " + table); !s.ok()) return s;
  }
  return sink;
}

PostgresSink::~PostgresSink() { PQfinish(conn_); }

void PostgresSink::AddRow(const std::vector<Cell>& row) {
  for (size_t i = 0; i < row.size(); ++i) {
    if (i > 0) copy_.push_back('\t');
    AppendCopyField(row[i], &copy_);
  }
  copy_.push_back('\n');
  ++rows_;
}

absl::Status PostgresSink::Flush() {
  if (rows_ == 0) return absl::OkStatus();
  std::string data;
  data.swap(copy_);
  const int64_t rows = rows_;
  rows_ = 0;
  std::vector<std::string> quoted, set, mine, theirs;
  for (const std::string& n : names_) {
    quoted.push_back(Quoted(n));
    if (n == "host_id" || n == "run_id") continue;
    set.push_back(absl::StrCat(Quoted(n), " = EXCLUDED.", Quoted(n)));
    mine.push_back(absl::StrCat("t.", Quoted(n)));
    theirs.push_back(absl::StrCat("EXCLUDED.", Quoted(n)));
  }
  const std::string columns = absl::StrJoin(quoted, ", ");
  if (auto s = Exec(conn_, "BEGIN", "begin"); !s.ok()) return s;
  auto fail = [&](absl::Status s) {
    Result rollback(PQexec(conn_, "ROLLBACK"));
    return s;
  };
  {
    Result copy(
        PQexec(conn_, absl::StrCat("COPY ", kStaging, " (", columns, ") FROM STDIN").c_str()));
    if (copy.status() != PGRES_COPY_IN) return fail(Failed(conn_, "copy"));
  }
  if (PQputCopyData(conn_, data.data(), static_cast<int>(data.size())) != 1 ||
      PQputCopyEnd(conn_, nullptr) != 1) {
    return fail(Failed(conn_, "copy"));
  }
  for (PGresult* r; (r = PQgetResult(conn_)) != nullptr;) {
    Result done(r);
    if (done.status() != PGRES_COMMAND_OK) return fail(Failed(conn_, "copy"));
  }
  const std::string t = Quoted(table_);
  Result upsert(PQexec(
      conn_,
      absl::StrCat("INSERT INTO ", t, " AS t (", columns, ") SELECT ", columns,
                   " FROM ", kStaging, " ON CONFLICT (host_id, run_id) DO UPDATE SET ",
                   absl::StrJoin(set, ", "), " WHERE (", absl::StrJoin(mine, ", "),
                   ") IS DISTINCT FROM (", absl::StrJoin(theirs, ", "),
                   ") RETURNING (xmax = 0)")
          .c_str()));
  if (upsert.status() != PGRES_TUPLES_OK) return fail(Failed(conn_, "loading into " + table_));
  const int changed = PQntuples(upsert.r);
  int inserted = 0;
  for (int i = 0; i < changed; ++i) inserted += PQgetvalue(upsert.r, i, 0)[0] == 't';
  if (auto s = Exec(conn_, "COMMIT", "commit"); !s.ok()) return s;
  counts_.inserted += inserted;
  counts_.updated += changed - inserted;
  counts_.unchanged += rows - changed;
  return absl::OkStatus();
}

#else  // no libpq

absl::StatusOr<std::unique_ptr<PostgresSink>> PostgresSink::Open(const std::string&,
                                                                 const std::string& table,
                                                                 const std::vector<Cell>&) {
  if (auto s = CheckTableName(table); !s.ok()) return s;
  return absl::UnimplementedError(
      "--to: this gpubench was built without libpq (install libpq-dev and rebuild); "
      "export to JSON Lines instead");
}

PostgresSink::~PostgresSink() = default;

void PostgresSink::AddRow(const std::vector<Cell>&) {}

absl::Status PostgresSink::Flush() { return absl::UnimplementedError("built without libpq"); }

#endif  // GPUBENCH_HAVE_LIBPQ

}  // namespace gpubench::client
