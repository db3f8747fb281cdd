#include "storage/detail/lmdb_handles.h"

#include <cerrno>
#include <utility>

#include "absl/strings/str_format.h"

namespace heapwatch::storage::detail {

Status LmdbStatus(int rc, std::string_view what) {
  HW_CHECK(rc != 0);
  std::string msg = absl::StrFormat("LMDB %s: %s (code %d)", what, mdb_strerror(rc), rc);
  switch (rc) {
    case MDB_NOTFOUND:
      return absl::NotFoundError(msg);
    case MDB_MAP_FULL:
    case MDB_READERS_FULL:
    case MDB_TXN_FULL:
    case MDB_CURSOR_FULL:
    case ENOSPC:
    case EDQUOT:
    case EFBIG:
    case ENOMEM:
      return absl::ResourceExhaustedError(msg);
    case MDB_CORRUPTED:
    case MDB_PAGE_NOTFOUND:
    case MDB_INVALID:
    case MDB_VERSION_MISMATCH:
      return absl::DataLossError(msg);
    case EACCES:
    case EPERM:
    case EROFS:
    case EAGAIN:
      return absl::FailedPreconditionError(msg);
    default:
      return absl::InternalError(msg);
  }
}

LmdbEnv::~LmdbEnv() {
  if (env_ != nullptr) mdb_env_close(env_);
}

LmdbEnv& LmdbEnv::operator=(LmdbEnv&& other) noexcept {
  if (this != &other) {
    if (env_ != nullptr) mdb_env_close(env_);
    env_ = std::exchange(other.env_, nullptr);
  }
  return *this;
}

StatusOr<LmdbTxn> LmdbTxn::Begin(MDB_env* env, bool read_only,
                                 std::shared_lock<std::shared_mutex> map_lock) {
  MDB_txn* txn = nullptr;
  int rc = mdb_txn_begin(env, nullptr, read_only ? MDB_RDONLY : 0, &txn);
  if (rc != 0) return LmdbStatus(rc, read_only ? "begin read txn" : "begin write txn");
  LmdbTxn t;
  t.txn_ = txn;
  t.read_only_ = read_only;
  t.map_lock_ = std::move(map_lock);
  return t;
}

LmdbTxn::LmdbTxn(LmdbTxn&& other) noexcept
    : txn_(std::exchange(other.txn_, nullptr)),
      read_only_(other.read_only_),
      map_full_(other.map_full_),
      last_error_(other.last_error_),
      open_cursors_(other.open_cursors_),
      map_lock_(std::move(other.map_lock_)) {
  HW_CHECK(open_cursors_ == 0);
}

LmdbTxn& LmdbTxn::operator=(LmdbTxn&& other) noexcept {
  if (this != &other) {
    Abort();
    HW_CHECK(other.open_cursors_ == 0);
    txn_ = std::exchange(other.txn_, nullptr);
    read_only_ = other.read_only_;
    map_full_ = other.map_full_;
    last_error_ = other.last_error_;
    map_lock_ = std::move(other.map_lock_);
  }
  return *this;
}

Status LmdbTxn::Commit() {
  HW_CHECK(txn_ != nullptr);
  HW_CHECK(open_cursors_ == 0);
  int rc = mdb_txn_commit(std::exchange(txn_, nullptr));  // frees the txn even on failure
  if (map_lock_.owns_lock()) map_lock_.unlock();
  if (rc != 0) return Check(rc, "commit");
  return absl::OkStatus();
}

void LmdbTxn::Abort() {
  if (txn_ == nullptr) return;
  HW_CHECK(open_cursors_ == 0);
  mdb_txn_abort(std::exchange(txn_, nullptr));
  if (map_lock_.owns_lock()) map_lock_.unlock();
}

Status LmdbTxn::Check(int rc, std::string_view what) {
  if (rc == 0) return absl::OkStatus();
  if (rc == MDB_MAP_FULL) map_full_ = true;
  last_error_ = rc;
  return LmdbStatus(rc, what);
}

StatusOr<std::optional<std::string_view>> LmdbTxn::Get(MDB_dbi dbi, std::string_view key) {
  MDB_val k = ToVal(key), v;
  int rc = mdb_get(txn_, dbi, &k, &v);
  if (rc == MDB_NOTFOUND) return std::optional<std::string_view>();
  HW_RETURN_IF_ERROR(Check(rc, "get"));
  return std::optional<std::string_view>(FromVal(v));
}

Status LmdbTxn::Put(MDB_dbi dbi, std::string_view key, std::string_view value, unsigned flags) {
  MDB_val k = ToVal(key), v = ToVal(value);
  return Check(mdb_put(txn_, dbi, &k, &v, flags), "put");
}

StatusOr<bool> LmdbTxn::Del(MDB_dbi dbi, std::string_view key) {
  MDB_val k = ToVal(key);
  int rc = mdb_del(txn_, dbi, &k, nullptr);
  if (rc == MDB_NOTFOUND) return false;
  HW_RETURN_IF_ERROR(Check(rc, "del"));
  return true;
}

StatusOr<MDB_stat> LmdbTxn::Stat(MDB_dbi dbi) {
  MDB_stat st;
  HW_RETURN_IF_ERROR(Check(mdb_stat(txn_, dbi, &st), "stat"));
  return st;
}

StatusOr<LmdbCursor> LmdbCursor::Open(LmdbTxn* txn, MDB_dbi dbi) {
  MDB_cursor* c = nullptr;
  HW_RETURN_IF_ERROR(txn->Check(mdb_cursor_open(txn->txn_, dbi, &c), "cursor open"));
  ++txn->open_cursors_;
  return LmdbCursor(txn, c);
}

LmdbCursor::~LmdbCursor() {
  if (cursor_ == nullptr) return;
  mdb_cursor_close(cursor_);
  --txn_->open_cursors_;
}

StatusOr<bool> LmdbCursor::Get(MDB_val* key, MDB_val* value, MDB_cursor_op op, std::string_view* k,
                               std::string_view* v) {
  int rc = mdb_cursor_get(cursor_, key, value, op);
  if (rc == MDB_NOTFOUND) return false;
  HW_RETURN_IF_ERROR(txn_->Check(rc, "cursor get"));
  if (k != nullptr) *k = FromVal(*key);
  if (v != nullptr) *v = FromVal(*value);
  return true;
}

StatusOr<bool> LmdbCursor::Seek(std::string_view key, std::string_view* k, std::string_view* v) {
  MDB_val mk = ToVal(key), mv;
  return Get(&mk, &mv, MDB_SET_RANGE, k, v);
}

StatusOr<bool> LmdbCursor::SeekExact(std::string_view key, std::string_view* v) {
  MDB_val mk = ToVal(key), mv;
  return Get(&mk, &mv, MDB_SET_KEY, nullptr, v);
}

StatusOr<bool> LmdbCursor::Move(MDB_cursor_op op, std::string_view* k, std::string_view* v) {
  MDB_val mk{0, nullptr}, mv{0, nullptr};
  return Get(&mk, &mv, op, k, v);
}

}  // namespace heapwatch::storage::detail
