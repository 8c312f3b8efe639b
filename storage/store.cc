#include "storage/store.h"

#include <sys/stat.h>

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"

namespace gpubench::storage {
namespace {

// Pragmas, the integrity check when asked, the size cap, and migrations.
absl::Status Prepare(Connection& c, const StoreOptions& options,
                     absl::FunctionRef<absl::StatusOr<std::string>()> integrity_check) {
  // The first statement reads the header and the schema: a file that is not
  // a database, or whose schema pages are damaged, fails here, before
  // anything is written to it.
  if (auto s = c.Exec("PRAGMA journal_mode=WAL"); !s.ok()) {
    if (!absl::IsDataLoss(s)) return s;
    return absl::DataLossError(absl::StrCat(s.message(), "; the file is damaged or not a "
                                            "gpubench database, and was left untouched"));
  }
  if (auto s = c.Exec("PRAGMA foreign_keys=ON"); !s.ok()) return s;
  // In WAL mode NORMAL still survives a crash of any process (what a killed
  // daemon or worker is); only an OS crash or power cut may lose the last
  // commits. It saves an fsync per run stored.
  if (auto s = c.Exec("PRAGMA synchronous=NORMAL"); !s.ok()) return s;
  if (options.check_integrity) {
    auto verdict = integrity_check();
    if (!verdict.ok()) return verdict.status();
    if (*verdict != "ok") {
      return absl::DataLossError(absl::StrCat("database ", options.path,
                                              " failed integrity_check: ", *verdict,
                                              "; it was left untouched"));
    }
  }
  if (options.max_bytes > 0) {
    // max_page_count never shrinks a file: one already larger stays readable
    // and refuses to grow.
    Statement page(c, "page_size", "PRAGMA page_size");
    auto row = page.Step();
    const int64_t page_bytes = row.ok() && *row ? page.ColumnInt(0) : 4096;
    const int64_t pages = std::max<int64_t>(1, options.max_bytes / page_bytes);
    if (auto s = c.Exec(absl::StrCat("PRAGMA max_page_count=", pages)); !s.ok()) return s;
  }
  return Migrate(c);
}

absl::StatusOr<std::string> IntegrityCheckOn(Connection& c) {
  Statement s(c, "integrity_check", "PRAGMA integrity_check");
  std::vector<std::string> lines;
  // One line per problem, for a log line: SQLite may put newlines in one.
  absl::Status scanned = s.ForEach([&] {
    lines.push_back(absl::StrReplaceAll(s.ColumnText(0), {{"\n", " "}}));
    return absl::OkStatus();
  });
  // A page too damaged to walk ends the check with an error, not a row.
  if (!scanned.ok()) lines.push_back(std::string(scanned.message()));
  if (lines.empty()) lines.push_back("integrity_check returned nothing");
  return absl::StrJoin(lines, "; ");
}

}  // namespace

absl::StatusOr<std::unique_ptr<Store>> Store::Open(const StoreOptions& options) {
  // SQLite takes an empty file for a new database and would fill it with
  // empty tables: a store truncated by a crash, a full disk or a bad copy
  // would then serve as if it had never held anything.
  if (struct stat st; stat(options.path.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
                      st.st_size == 0) {
    return absl::DataLossError(absl::StrCat(
        "database ", options.path, " exists but is empty (0 bytes): it was truncated or "
        "never written, and was left untouched. Restore it from a backup; to start with an "
        "empty store instead, remove it (and any ", options.path, "-wal and -shm beside it)"));
  }
  auto db = Database::Open({options.path, options.busy_timeout_ms});
  if (!db.ok()) return db.status();
  std::unique_ptr<Store> store(new Store(std::move(*db)));
  auto prepared = store->db_->Write([&](Connection& c) {
    return Prepare(c, options, [&] { return IntegrityCheckOn(c); });
  });
  if (!prepared.ok()) return prepared;
  // Readers beside the writer, once the file is in WAL mode at this
  // schema: reads never queue behind a run being stored.
  if (auto s = store->db_->OpenReaders(kReadConnections); !s.ok()) return s;
  return store;
}

Store::Store(std::unique_ptr<Database> db)
    : db_(std::move(db)),
      jobs_(db_.get()),
      runs_(db_.get()),
      hosts_(db_.get()),
      schedules_(db_.get()),
      models_(db_.get()) {}

Store::~Store() {
  // Refreshes the planner's statistics where they went stale (cheap; the
  // SQLite documentation's advice for long-lived connections at close).
  db_->Write([](Connection& c) { return c.Exec("PRAGMA optimize"); }).IgnoreError();
}

int Store::schema_version() {
  int version = -1;
  db_->Write([&](Connection& c) -> absl::Status {
       auto v = SchemaVersion(c);
       if (v.ok()) version = *v;
       return v.status();
     })
      .IgnoreError();
  return version;
}

absl::StatusOr<std::string> Store::IntegrityCheck() {
  std::string verdict;
  auto status = db_->Write([&](Connection& c) -> absl::Status {
    auto v = IntegrityCheckOn(c);
    if (!v.ok()) return v.status();
    verdict = std::move(*v);
    return absl::OkStatus();
  });
  if (!status.ok()) return status;
  return verdict;
}

absl::Status Store::CanWrite(int64_t bytes) {
  return db_->Write([&](Connection& c) -> absl::Status {
    if (auto s = c.Exec("BEGIN IMMEDIATE"); !s.ok()) return s;
    absl::Status status;
    {
      Statement s(c, "write probe",
                  "INSERT INTO hosts(host_id, record) VALUES('\x01probe', zeroblob(?))");
      s.Int(1, bytes);
      status = s.Run();
    }
    c.Exec("ROLLBACK").IgnoreError();
    return status;
  });
}

}  // namespace gpubench::storage
