// Internal: RAII owners of LMDB's MDB_env, MDB_txn and MDB_cursor, and the mapping of LMDB return
// codes to absl::Status. Source: lmdb.h of LMDB 0.9.24 (Debian liblmdb-dev), whose rules these
// classes enforce:
//  - "A transaction and its cursors must only be used by a single thread" (mdb_txn_begin); with
//    MDB_NOTLS a read-only transaction may be used by another thread if the user synchronizes its
//    use.
//  - "A cursor in a write-transaction can be closed before its transaction ends, and will otherwise
//    be closed when its transaction ends. A cursor in a read-only transaction must be closed
//    explicitly" (mdb_cursor_open). LmdbCursor therefore always closes itself, and LmdbTxn
//    HW_CHECKs that no cursor is open when it commits or aborts (closing a write cursor after its
//    txn ended is a use-after-free).
//  - "Values returned from the database are valid only until a subsequent update operation, or the
//    end of the transaction" (MDB_val): the string_views returned here carry the same lifetime.
//  - mdb_env_set_mapsize "may be called at later times if no transactions are active in this
//    process": every LmdbTxn holds a shared lock on the store's map lock, the resizer takes it
//    exclusively.
#ifndef HEAPWATCH_STORAGE_DETAIL_LMDB_HANDLES_H_
#define HEAPWATCH_STORAGE_DETAIL_LMDB_HANDLES_H_

#include <lmdb.h>

#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string_view>

#include "common/status.h"

namespace heapwatch::storage::detail {

// Maps an LMDB or errno return code (non-zero) to a Status whose message names `what`:
//   MDB_NOTFOUND -> NotFound; MDB_MAP_FULL, MDB_READERS_FULL, MDB_TXN_FULL, MDB_CURSOR_FULL,
//   ENOSPC, EDQUOT, EFBIG, ENOMEM -> ResourceExhausted; MDB_CORRUPTED, MDB_PAGE_NOTFOUND,
//   MDB_INVALID, MDB_VERSION_MISMATCH -> DataLoss; EACCES, EPERM, EROFS, EAGAIN ->
//   FailedPrecondition; anything else (MDB_PANIC, EIO, EINVAL, ...) -> Internal.
Status LmdbStatus(int rc, std::string_view what);

// Owns an MDB_env (mdb_env_close on destruction). Move-only.
class LmdbEnv {
 public:
  LmdbEnv() = default;
  explicit LmdbEnv(MDB_env* env) : env_(env) {}
  ~LmdbEnv();
  LmdbEnv(LmdbEnv&& other) noexcept : env_(other.env_) { other.env_ = nullptr; }
  LmdbEnv& operator=(LmdbEnv&& other) noexcept;
  LmdbEnv(const LmdbEnv&) = delete;
  LmdbEnv& operator=(const LmdbEnv&) = delete;
  MDB_env* get() const { return env_; }

 private:
  MDB_env* env_ = nullptr;
};

// Owns one transaction: aborted on destruction unless committed. Move-only; must not be moved while
// a cursor is open on it. Not thread-safe (one thread at a time).
class LmdbTxn {
 public:
  // Begins a transaction on `env` (read-only when `read_only`). `map_lock` is a shared lock on the
  // store's map lock, held until the transaction ends. Errors: see LmdbStatus (e.g.
  // ResourceExhausted when the reader table is full).
  static StatusOr<LmdbTxn> Begin(MDB_env* env, bool read_only,
                                 std::shared_lock<std::shared_mutex> map_lock);

  LmdbTxn() = default;
  ~LmdbTxn() { Abort(); }
  LmdbTxn(LmdbTxn&& other) noexcept;
  LmdbTxn& operator=(LmdbTxn&& other) noexcept;
  LmdbTxn(const LmdbTxn&) = delete;
  LmdbTxn& operator=(const LmdbTxn&) = delete;

  MDB_txn* get() const { return txn_; }
  bool read_only() const { return read_only_; }
  // True once an operation of this transaction failed with MDB_MAP_FULL. The transaction is then
  // unusable; the caller aborts it, grows the map (mdb_env_set_mapsize) and retries from the start.
  bool map_full() const { return map_full_; }
  // The LMDB / errno code of the last failed operation, 0 if none.
  int last_error() const { return last_error_; }

  // Commits (for write transactions this writes and fsyncs the data, then the meta page: durable on
  // OK, since the environment is opened without MDB_NOSYNC / MDB_NOMETASYNC). The transaction is
  // over either way. Errors: ResourceExhausted (MDB_MAP_FULL, ENOSPC, EFBIG...), Internal (EIO...).
  Status Commit();
  // Aborts the transaction if it is active; no-op otherwise.
  void Abort();

  // Reads `key`; nullopt when absent. The view is valid until the next update or the end of the
  // txn.
  StatusOr<std::optional<std::string_view>> Get(MDB_dbi dbi, std::string_view key);
  // mdb_put with `flags` (0 = insert or overwrite).
  Status Put(MDB_dbi dbi, std::string_view key, std::string_view value, unsigned flags = 0);
  // mdb_del; false when the key was absent.
  StatusOr<bool> Del(MDB_dbi dbi, std::string_view key);
  // mdb_stat of one table.
  StatusOr<MDB_stat> Stat(MDB_dbi dbi);

 private:
  friend class LmdbCursor;
  // Maps rc, remembering MDB_MAP_FULL.
  Status Check(int rc, std::string_view what);

  MDB_txn* txn_ = nullptr;
  bool read_only_ = true;
  bool map_full_ = false;
  int last_error_ = 0;
  int open_cursors_ = 0;
  std::shared_lock<std::shared_mutex> map_lock_;
};

// Owns a cursor on one table of one transaction; closed on destruction, which must happen before
// the transaction ends. Move-only. Positions return false at MDB_NOTFOUND; on true the key/value
// views are valid until the next update or the end of the transaction.
class LmdbCursor {
 public:
  static StatusOr<LmdbCursor> Open(LmdbTxn* txn, MDB_dbi dbi);
  ~LmdbCursor();
  LmdbCursor(LmdbCursor&& other) noexcept : txn_(other.txn_), cursor_(other.cursor_) {
    other.cursor_ = nullptr;
  }
  LmdbCursor& operator=(LmdbCursor&&) = delete;
  LmdbCursor(const LmdbCursor&) = delete;
  LmdbCursor& operator=(const LmdbCursor&) = delete;

  // MDB_SET_RANGE: the first key >= `key`.
  StatusOr<bool> Seek(std::string_view key, std::string_view* k, std::string_view* v);
  // MDB_SET_KEY: exactly `key`.
  StatusOr<bool> SeekExact(std::string_view key, std::string_view* v);
  // MDB_FIRST, MDB_LAST, MDB_NEXT, MDB_PREV, MDB_GET_CURRENT.
  StatusOr<bool> Move(MDB_cursor_op op, std::string_view* k, std::string_view* v);

 private:
  LmdbCursor(LmdbTxn* txn, MDB_cursor* cursor) : txn_(txn), cursor_(cursor) {}
  StatusOr<bool> Get(MDB_val* key, MDB_val* value, MDB_cursor_op op, std::string_view* k,
                     std::string_view* v);

  LmdbTxn* txn_;
  MDB_cursor* cursor_;
};

inline MDB_val ToVal(std::string_view s) { return MDB_val{s.size(), const_cast<char*>(s.data())}; }
inline std::string_view FromVal(const MDB_val& v) {
  return std::string_view(static_cast<const char*>(v.mv_data), v.mv_size);
}

}  // namespace heapwatch::storage::detail

#endif  // HEAPWATCH_STORAGE_DETAIL_LMDB_HANDLES_H_
