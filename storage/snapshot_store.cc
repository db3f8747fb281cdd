// SnapshotStore: opening, transactions and map growth, agents, records, reads of snapshots, sizes
// and the retention thread. Append lives in append.cc, retention and deletion in retention.cc,
// delta-chain decoding in read_path.cc.
#include "storage/snapshot_store.h"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "storage/detail/store_impl.h"

namespace heapwatch::storage {

using detail::AgentNo;
using detail::AgentRecord;
using detail::LmdbCursor;
using detail::LmdbStatus;
using detail::LmdbTxn;
using detail::NumberedHistogram;
using detail::ValidateAgentId;
using detail::ValidateRecordKey;

namespace detail {

UniqueFd::~UniqueFd() {
  if (fd_ >= 0) ::close(fd_);
}

UniqueFd& UniqueFd::operator=(UniqueFd&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(o.fd_, -1);
  }
  return *this;
}

Status ValidateAgentId(const AgentId& id) {
  if (id.value.empty() || id.value.size() > kMaxAgentIdBytes) {
    return absl::InvalidArgumentError(
        absl::StrFormat("agent id must be 1..%d bytes, got %d", kMaxAgentIdBytes, id.value.size()));
  }
  for (char c : id.value) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_' || c == ':' || c == '-';
    if (!ok) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "agent id %s has a character outside [A-Za-z0-9._:-]", absl::CHexEscape(id.value)));
    }
  }
  return absl::OkStatus();
}

Status ValidateRecordKey(std::string_view table, std::string_view key) {
  if (table.empty() || table.size() > 255) {
    return absl::InvalidArgumentError(
        absl::StrFormat("record table name must be 1..255 bytes, got %d", table.size()));
  }
  if (1 + table.size() + key.size() > kMaxLmdbKeyBytes) {
    return absl::InvalidArgumentError(
        absl::StrFormat("record table + key must be at most %d bytes, got %d", kMaxLmdbKeyBytes - 1,
                        table.size() + key.size()));
  }
  return absl::OkStatus();
}

StatusOr<int64_t> StorableMicros(absl::Time t, std::string_view what) {
  if (t == absl::InfinitePast() || t == absl::InfiniteFuture()) {
    return absl::InvalidArgumentError(absl::StrCat(std::string(what), " time is infinite"));
  }
  const int64_t micros = absl::ToUnixMicros(t);
  if (micros <= -kMaxAbsMicros || micros >= kMaxAbsMicros) {
    return absl::InvalidArgumentError(absl::StrCat(std::string(what), " time is out of range (|t| >= 2^62 us)"));
  }
  return micros;
}

StatusOr<AgentNo> AllocateAgentNo(LmdbTxn& txn, MDB_dbi meta) {
  static constexpr std::string_view kNextAgentNoKey = "next_agent_no";
  HW_ASSIGN_OR_RETURN(auto v, txn.Get(meta, kNextAgentNoKey));
  uint32_t next = 0;
  if (v.has_value()) {
    if (v->size() != 4)
      return absl::DataLossError("heapwatch store: corrupt value at meta/next_agent_no");
    next = DecodeFixed32BE(v->data());
  }
  if (next == UINT32_MAX) {
    return absl::ResourceExhaustedError("heapwatch store: agent numbers exhausted (2^32-1 agents)");
  }
  std::string nv;
  PutFixed32BE(&nv, next + 1);
  HW_RETURN_IF_ERROR(txn.Put(meta, kNextAgentNoKey, nv));
  return AgentNo{next};
}

}  // namespace detail

namespace {

constexpr std::string_view kFormatVersionKey = "format_version";
constexpr size_t kMaxDbs = 10;

Status ErrnoStatus(int err, std::string_view what) {
  std::string msg = absl::StrFormat("heapwatch store: %s: %s", what, std::strerror(err));
  if (err == ENOSPC || err == EDQUOT) return absl::ResourceExhaustedError(msg);
  return absl::FailedPreconditionError(msg);
}

// Checks the header of an existing LMDB data file (<dir>/data.mdb) before LMDB maps it, reading it
// only: both meta pages must be intact (LMDB's own check) and the file must hold every page the
// newer meta page counts. A truncated file would otherwise be mapped and fault (SIGBUS) on the
// first read of a missing page, and LMDB's next commit would write into it. Layout of LMDB 0.9
// (lmdb's mdb.c: MDB_page, MDB_meta; 64-bit): two meta pages at offsets 0 and page size; a page
// starts with a 16-byte header (flags at byte 10, P_META = 0x08); the meta follows: magic
// 0xBEEFC0DE (4 bytes), data version 1 (4), address (8), map size (8), two MDB_db of 48 bytes each
// (the first one's leading 4 bytes hold the page size), last page number (8), txn id (8).
// A missing or empty file is a new store (LMDB initialises it). DataLoss names the file and what
// is wrong; FailedPrecondition when it cannot be read.
Status CheckDataFileHeader(const std::string& dir) {
  const std::string path = dir + "/data.mdb";
  detail::UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) {
    if (errno == ENOENT) return absl::OkStatus();
    return ErrnoStatus(errno, "open " + path);
  }
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) return ErrnoStatus(errno, "stat " + path);
  if (!S_ISREG(st.st_mode)) {
    return absl::FailedPreconditionError(absl::StrFormat("%s is not a regular file", path));
  }
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  if (size == 0) return absl::OkStatus();
  auto corrupt = [&](std::string_view why) {
    return absl::DataLossError(absl::StrFormat(
        "heapwatch store %s: the data file %s (%d bytes) is corrupt or truncated: %s; heapwatch "
        "will not open or repair it (restore it from a backup, or move it away to start an empty "
        "store)",
        dir, path, size, why));
  };
  constexpr size_t kPageHeader = 16, kMetaBytes = 136;
  constexpr uint32_t kMagic = 0xBEEFC0DE, kDataVersion = 1;
  constexpr uint16_t kMetaFlag = 0x08;
  struct Meta {
    uint32_t page_size = 0;
    uint64_t last_page = 0;
    uint64_t txn_id = 0;
  };
  auto read_meta = [&](uint64_t offset, int which, Meta* meta) -> Status {
    unsigned char b[kPageHeader + kMetaBytes];
    ssize_t n = ::pread(fd.get(), b, sizeof b, static_cast<off_t>(offset));
    if (n < 0) return ErrnoStatus(errno, "read " + path);
    if (static_cast<size_t>(n) < sizeof b) {
      return corrupt(absl::StrFormat("meta page %d is cut off", which));
    }
    auto u16 = [&](size_t at) {
      uint16_t v;
      std::memcpy(&v, b + at, 2);
      return v;
    };
    auto u32 = [&](size_t at) {
      uint32_t v;
      std::memcpy(&v, b + at, 4);
      return v;
    };
    auto u64 = [&](size_t at) {
      uint64_t v;
      std::memcpy(&v, b + at, 8);
      return v;
    };
    if ((u16(10) & kMetaFlag) == 0 || u32(kPageHeader) != kMagic ||
        u32(kPageHeader + 4) != kDataVersion) {
      return corrupt(absl::StrFormat("meta page %d is not an LMDB meta page", which));
    }
    meta->page_size = u32(kPageHeader + 24);
    meta->last_page = u64(kPageHeader + 120);
    meta->txn_id = u64(kPageHeader + 128);
    if (meta->page_size < 512 || meta->page_size > 65536 ||
        (meta->page_size & (meta->page_size - 1)) != 0) {
      return corrupt(absl::StrFormat("meta page %d has page size %d", which, meta->page_size));
    }
    return absl::OkStatus();
  };
  Meta m0, m1;
  HW_RETURN_IF_ERROR(read_meta(0, 0, &m0));
  HW_RETURN_IF_ERROR(read_meta(m0.page_size, 1, &m1));
  if (m1.page_size != m0.page_size) return corrupt("the meta pages disagree on the page size");
  const Meta& newer = m1.txn_id > m0.txn_id ? m1 : m0;
  if (newer.last_page > (uint64_t{1} << 40)) {
    return corrupt(absl::StrFormat("the last page number %d is impossible", newer.last_page));
  }
  const uint64_t needed = (newer.last_page + 1) * newer.page_size;
  if (size < needed) {
    return corrupt(absl::StrFormat("transaction %d uses %d pages (%d bytes), the file ends before",
                                   newer.txn_id, newer.last_page + 1, needed));
  }
  return absl::OkStatus();
}

// Creates `dir` (mode 0700) and its parents.
Status MakeDataDir(const std::string& dir) {
  std::error_code ec;
  std::filesystem::path p(dir);
  if (p.has_parent_path() && !p.parent_path().empty()) {
    std::filesystem::create_directories(p.parent_path(), ec);
    if (ec) return ErrnoStatus(ec.value(), "create parent of " + dir);
  }
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) return ErrnoStatus(errno, "mkdir " + dir);
  struct stat st;
  if (::stat(dir.c_str(), &st) != 0) return ErrnoStatus(errno, "stat " + dir);
  if (!S_ISDIR(st.st_mode)) return absl::FailedPreconditionError(dir + " is not a directory");
  return absl::OkStatus();
}

AgentInfo InfoOf(const AgentRecord& r) {
  if (r.has_info) return r.info;
  AgentInfo bare;
  bare.id = r.info.id;
  return bare;
}

int64_t Micros(absl::Time t) { return absl::ToUnixMicros(t); }

}  // namespace

void SortRowsCanonically(std::vector<ClassHistogramRow>* rows) {
  std::sort(rows->begin(), rows->end(), [](const ClassHistogramRow& a, const ClassHistogramRow& b) {
    if (a.bytes != b.bytes) return a.bytes > b.bytes;
    if (int c = a.class_name.compare(b.class_name); c != 0) return c < 0;
    if (int c = a.module.compare(b.module); c != 0) return c < 0;
    return a.instances < b.instances;
  });
}

// ---- Transactions and map growth.

StatusOr<LmdbTxn> SnapshotStore::Impl::BeginRead() const {
  return LmdbTxn::Begin(env.get(), /*read_only=*/true, std::shared_lock<std::shared_mutex>(map_mu));
}

Status SnapshotStore::Impl::WriteNow(absl::FunctionRef<Status(LmdbTxn&)> body) {
  for (;;) {
    {
      HW_ASSIGN_OR_RETURN(LmdbTxn txn, LmdbTxn::Begin(env.get(), /*read_only=*/false,
                                                      std::shared_lock<std::shared_mutex>(map_mu)));
      Status s = body(txn);
      if (s.ok() && !txn.map_full()) s = txn.Commit();
      if (txn.last_error() == EIO) return ExplainIoError(s);
      if (s.ok() && !txn.map_full()) commits.fetch_add(1, std::memory_order_relaxed);
      if (!txn.map_full()) return s;
    }  // the transaction is aborted (or was freed by the failed commit) here
    HW_RETURN_IF_ERROR(GrowMap());
  }
}

Status SnapshotStore::Impl::ExplainIoError(const Status& s) const {
  // LMDB reports a short write as EIO ("short write, filesystem full?" in mdb_page_flush): when the
  // file system (or RLIMIT_FSIZE) is out of space, say so. The transaction was aborted; nothing
  // changed.
  struct statvfs vfs;
  if (::statvfs(dir.c_str(), &vfs) == 0) {
    uint64_t avail = static_cast<uint64_t>(vfs.f_bavail) * vfs.f_frsize;
    if (avail < kNearlyFullBytes) {
      return absl::ResourceExhaustedError(absl::StrFormat(
          "heapwatch store %s: disk full (%d bytes available): %s", dir, avail, s.message()));
    }
  }
  struct rlimit lim;
  struct stat st;
  if (::getrlimit(RLIMIT_FSIZE, &lim) == 0 && lim.rlim_cur != RLIM_INFINITY &&
      ::stat((dir + "/data.mdb").c_str(), &st) == 0 &&
      static_cast<uint64_t>(st.st_size) + kNearlyFullBytes > lim.rlim_cur) {
    return absl::ResourceExhaustedError(
        absl::StrFormat("heapwatch store %s: file size limit reached (RLIMIT_FSIZE %d bytes): %s",
                        dir, static_cast<uint64_t>(lim.rlim_cur), s.message()));
  }
  return s;
}

Status SnapshotStore::Impl::GrowMap() {
  std::unique_lock<std::shared_mutex> exclusive(map_mu);  // waits for running read transactions
  MDB_envinfo info;
  if (int rc = mdb_env_info(env.get(), &info); rc != 0) return LmdbStatus(rc, "env info");
  uint64_t current = info.me_mapsize;
  if (current >= options.max_map_bytes) {
    return absl::ResourceExhaustedError(
        absl::StrFormat("heapwatch store %s: LMDB map is full at max_map_bytes (%d bytes)", dir,
                        options.max_map_bytes));
  }
  uint64_t next = std::min<uint64_t>(std::max<uint64_t>(current * 2, current + (1 << 20)),
                                     options.max_map_bytes);
  if (int rc = mdb_env_set_mapsize(env.get(), next); rc != 0) return LmdbStatus(rc, "set mapsize");
  spdlog::info("heapwatch store {}: LMDB map full, grew it from {} to {} bytes", dir, current,
               next);
  return absl::OkStatus();
}

// ---- Open and close.

SnapshotStore::SnapshotStore(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

SnapshotStore::~SnapshotStore() {
  {
    std::lock_guard<std::mutex> l(stop_mu_);
    stop_ = true;
  }
  stop_cv_.notify_all();
  if (retention_thread_.joinable()) retention_thread_.join();
}

StatusOr<std::unique_ptr<SnapshotStore>> SnapshotStore::Open(const StoreOptions& options) {
  if (options.dir.empty()) return absl::InvalidArgumentError("StoreOptions.dir is empty");
  if (options.keyframe_interval == 0)
    return absl::InvalidArgumentError("keyframe_interval must be >= 1");
  if (options.max_map_bytes < options.initial_map_bytes) {
    return absl::InvalidArgumentError("max_map_bytes < initial_map_bytes");
  }
  if (options.background_retention && options.retention_interval <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("retention_interval must be positive");
  }
  if (options.clock == nullptr) return absl::InvalidArgumentError("StoreOptions.clock is null");

  auto impl = std::make_unique<Impl>();
  impl->options = options;
  impl->dir = options.dir;
  HW_RETURN_IF_ERROR(MakeDataDir(options.dir));

  // One store per directory: LMDB itself would let a second process in, but the Append cache
  // assumes it is the only writer.
  std::string lock_path = options.dir + "/heapwatch.lock";
  impl->lock_fd = detail::UniqueFd(::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600));
  if (impl->lock_fd.get() < 0) return ErrnoStatus(errno, "open " + lock_path);
  if (::flock(impl->lock_fd.get(), LOCK_EX | LOCK_NB) != 0) {
    if (errno == EWOULDBLOCK) {
      return absl::FailedPreconditionError(absl::StrFormat(
          "heapwatch store %s is in use by another open store (this or another process)",
          options.dir));
    }
    return ErrnoStatus(errno, "flock " + lock_path);
  }

  // Under the lock (no other heapwatch store writes it meanwhile), before LMDB maps the file.
  HW_RETURN_IF_ERROR(CheckDataFileHeader(options.dir));

  MDB_env* raw = nullptr;
  if (int rc = mdb_env_create(&raw); rc != 0) return LmdbStatus(rc, "env create");
  impl->env = detail::LmdbEnv(raw);
  if (int rc = mdb_env_set_maxdbs(raw, kMaxDbs); rc != 0) return LmdbStatus(rc, "set maxdbs");
  long page = ::sysconf(_SC_PAGESIZE);
  uint64_t map = (options.initial_map_bytes + page - 1) / page * page;
  if (int rc = mdb_env_set_mapsize(raw, map); rc != 0) return LmdbStatus(rc, "set mapsize");
  // No MDB_NOSYNC / MDB_NOMETASYNC / MDB_WRITEMAP: commits are durable (see the header). MDB_NOTLS:
  // read transactions are owned by their LmdbTxn object, not by the thread (lmdb.h, mdb_env_open).
  if (int rc = mdb_env_open(raw, options.dir.c_str(), MDB_NOTLS, 0600); rc != 0) {
    return LmdbStatus(rc, "open " + options.dir);
  }
  int dead = 0;
  if (int rc = mdb_reader_check(raw, &dead); rc != 0) return LmdbStatus(rc, "reader check");
  if (dead > 0)
    spdlog::info("heapwatch store {}: cleared {} stale LMDB reader slots", options.dir, dead);

  Impl& s = *impl;
  std::lock_guard<std::mutex> lock(s.write_mu);
  HW_RETURN_IF_ERROR(s.Write([&](LmdbTxn& txn) -> Status {
    struct Table {
      const char* name;
      MDB_dbi* dbi;
    };
    for (Table t :
         {Table{"meta", &s.meta}, Table{"agents", &s.agents}, Table{"classes", &s.classes},
          Table{"class_names", &s.class_names}, Table{"snapshots", &s.snapshots},
          Table{"records", &s.records}, Table{"costs", &s.costs}, Table{"live_set", &s.live_set},
          Table{"class_loading", &s.class_loading}, Table{"string_table", &s.string_table}}) {
      if (int rc = mdb_dbi_open(txn.get(), t.name, MDB_CREATE, t.dbi); rc != 0) {
        if (rc == MDB_INCOMPATIBLE) {
          return absl::DataLossError(
              absl::StrFormat("heapwatch store %s: LMDB environment is not a heapwatch store (%s)",
                              options.dir, t.name));
        }
        return LmdbStatus(rc, std::string("open table ") + t.name);
      }
    }
    HW_ASSIGN_OR_RETURN(auto version, txn.Get(s.meta, kFormatVersionKey));
    if (!version.has_value()) {
      for (MDB_dbi dbi : {s.agents, s.classes, s.class_names, s.snapshots, s.records, s.costs,
                          s.live_set, s.class_loading, s.string_table}) {
        HW_ASSIGN_OR_RETURN(MDB_stat st, txn.Stat(dbi));
        if (st.ms_entries != 0) {
          return absl::DataLossError(absl::StrFormat(
              "heapwatch store %s: data without a meta/format_version record", options.dir));
        }
      }
      std::string v;
      detail::PutFixed32BE(&v, detail::kFormatVersion);
      return txn.Put(s.meta, kFormatVersionKey, v);
    }
    if (version->size() != 4) {
      return absl::DataLossError(
          absl::StrFormat("heapwatch store %s: corrupt value at meta/format_version", options.dir));
    }
    uint32_t v = detail::DecodeFixed32BE(version->data());
    if (v != detail::kFormatVersion) {
      return absl::DataLossError(
          absl::StrFormat("heapwatch store %s: meta/format_version is %d, this build reads version "
                          "%d (written by a "
                          "newer heapwatch?)",
                          options.dir, v, detail::kFormatVersion));
    }
    return absl::OkStatus();
  }));

  std::unique_ptr<SnapshotStore> store(new SnapshotStore(std::move(impl)));
  if (options.background_retention) {
    store->retention_thread_ = std::thread([s = store.get()] { s->RetentionLoop(); });
  }
  return store;
}

void SnapshotStore::RetentionLoop() {
  std::unique_lock<std::mutex> l(stop_mu_);
  while (!stop_) {
    stop_cv_.wait_for(l, absl::ToChronoNanoseconds(impl_->options.retention_interval),
                      [this] { return stop_; });
    if (stop_) break;
    l.unlock();
    Status s = EnforceRetention();
    if (!s.ok()) spdlog::warn("heapwatch store {}: retention failed: {}", impl_->dir, s.ToString());
    l.lock();
  }
}

// ---- Agents.

StatusOr<std::optional<AgentRecord>> SnapshotStore::Impl::FindAgent(LmdbTxn& txn,
                                                                    const AgentId& id) const {
  HW_ASSIGN_OR_RETURN(auto v, txn.Get(agents, id.value));
  if (!v.has_value()) return std::optional<AgentRecord>();
  HW_ASSIGN_OR_RETURN(AgentRecord r, detail::DecodeAgentRecord(*v, id));
  return std::optional<AgentRecord>(std::move(r));
}

StatusOr<AgentRecord> SnapshotStore::Impl::RequireAgent(LmdbTxn& txn, const AgentId& id) const {
  HW_ASSIGN_OR_RETURN(auto r, FindAgent(txn, id));
  if (!r.has_value()) return absl::NotFoundError("heapwatch store: unknown agent " + id.value);
  return *std::move(r);
}

StatusOr<std::vector<AgentRecord>> SnapshotStore::Impl::AllAgents(LmdbTxn& txn) const {
  std::vector<AgentRecord> out;
  HW_ASSIGN_OR_RETURN(LmdbCursor c, LmdbCursor::Open(&txn, agents));
  std::string_view k, v;
  HW_ASSIGN_OR_RETURN(bool ok, c.Move(MDB_FIRST, &k, &v));
  while (ok) {
    HW_ASSIGN_OR_RETURN(AgentRecord r, detail::DecodeAgentRecord(v, AgentId(std::string(k))));
    out.push_back(std::move(r));
    HW_ASSIGN_OR_RETURN(ok, c.Move(MDB_NEXT, &k, &v));
  }
  return out;
}

Status SnapshotStore::PutAgent(const AgentInfo& info) {
  HW_RETURN_IF_ERROR(ValidateAgentId(info.id));
  Impl& s = *impl_;
  std::lock_guard<std::mutex> lock(s.write_mu);
  return s.Write([&](LmdbTxn& txn) -> Status {
    HW_ASSIGN_OR_RETURN(auto existing, s.FindAgent(txn, info.id));
    AgentRecord r;
    if (existing.has_value()) {
      r = *std::move(existing);
    } else {
      HW_ASSIGN_OR_RETURN(r.agent_no, detail::AllocateAgentNo(txn, s.meta));
    }
    r.has_info = true;
    r.info = info;
    r.updated_micros = Micros(s.options.clock->Now());
    return txn.Put(s.agents, info.id.value, detail::EncodeAgentRecord(r));
  });
}

StatusOr<std::vector<AgentInfo>> SnapshotStore::ListAgents() const {
  HW_ASSIGN_OR_RETURN(LmdbTxn txn, impl_->BeginRead());
  HW_ASSIGN_OR_RETURN(std::vector<AgentRecord> records, impl_->AllAgents(txn));
  std::vector<AgentInfo> out;
  out.reserve(records.size());
  for (const AgentRecord& r : records) out.push_back(InfoOf(r));
  return out;
}

StatusOr<AgentInfo> SnapshotStore::GetAgent(const AgentId& id) const {
  HW_RETURN_IF_ERROR(ValidateAgentId(id));
  HW_ASSIGN_OR_RETURN(LmdbTxn txn, impl_->BeginRead());
  HW_ASSIGN_OR_RETURN(AgentRecord r, impl_->RequireAgent(txn, id));
  return InfoOf(r);
}

// ---- Snapshot reads.

StatusOr<std::vector<absl::Time>> SnapshotStore::ListSnapshotTimes(const AgentId& agent,
                                                                   absl::Time from,
                                                                   absl::Time to) const {
  HW_RETURN_IF_ERROR(ValidateAgentId(agent));
  HW_ASSIGN_OR_RETURN(LmdbTxn txn, impl_->BeginRead());
  HW_ASSIGN_OR_RETURN(AgentRecord r, impl_->RequireAgent(txn, agent));
  std::vector<absl::Time> out;
  int64_t lo = Micros(from), hi = Micros(to);
  if (lo > hi) return out;
  HW_ASSIGN_OR_RETURN(LmdbCursor c, LmdbCursor::Open(&txn, impl_->snapshots));
  std::string_view k;
  HW_ASSIGN_OR_RETURN(bool ok, c.Seek(detail::SnapshotKey(r.agent_no, lo), &k, nullptr));
  while (ok) {
    AgentNo a;
    int64_t t;
    if (!detail::ParseSnapshotKey(k, &a, &t) || a != r.agent_no || t > hi) break;
    out.push_back(absl::FromUnixMicros(t));
    HW_ASSIGN_OR_RETURN(ok, c.Move(MDB_NEXT, &k, nullptr));
  }
  return out;
}

StatusOr<Snapshot> SnapshotStore::ReadSnapshot(const AgentId& agent, absl::Time time) const {
  HW_RETURN_IF_ERROR(ValidateAgentId(agent));
  HW_ASSIGN_OR_RETURN(LmdbTxn txn, impl_->BeginRead());
  HW_ASSIGN_OR_RETURN(AgentRecord r, impl_->RequireAgent(txn, agent));
  std::vector<std::pair<int64_t, NumberedHistogram>> hs(1);
  hs[0].first = Micros(time);
  HW_RETURN_IF_ERROR(impl_->DecodeAt(txn, agent, r.agent_no, hs[0].first, &hs[0].second));
  HW_ASSIGN_OR_RETURN(std::vector<Snapshot> out, impl_->Materialize(txn, agent, r.agent_no, hs));
  return std::move(out[0]);
}

StatusOr<std::optional<Snapshot>> SnapshotStore::ReadLatestAtOrBefore(const AgentId& agent,
                                                                      absl::Time t) const {
  HW_RETURN_IF_ERROR(ValidateAgentId(agent));
  HW_ASSIGN_OR_RETURN(LmdbTxn txn, impl_->BeginRead());
  HW_ASSIGN_OR_RETURN(AgentRecord r, impl_->RequireAgent(txn, agent));
  HW_ASSIGN_OR_RETURN(std::optional<int64_t> at,
                      impl_->LatestAtOrBefore(txn, r.agent_no, Micros(t)));
  if (!at.has_value()) return std::optional<Snapshot>();
  std::vector<std::pair<int64_t, NumberedHistogram>> hs(1);
  hs[0].first = *at;
  HW_RETURN_IF_ERROR(impl_->DecodeAt(txn, agent, r.agent_no, *at, &hs[0].second));
  HW_ASSIGN_OR_RETURN(std::vector<Snapshot> out, impl_->Materialize(txn, agent, r.agent_no, hs));
  return std::optional<Snapshot>(std::move(out[0]));
}

StatusOr<std::vector<Snapshot>> SnapshotStore::ReadSnapshots(const AgentId& agent, absl::Time from,
                                                             absl::Time to,
                                                             size_t max_count) const {
  HW_RETURN_IF_ERROR(ValidateAgentId(agent));
  HW_ASSIGN_OR_RETURN(LmdbTxn txn, impl_->BeginRead());
  HW_ASSIGN_OR_RETURN(AgentRecord r, impl_->RequireAgent(txn, agent));
  int64_t lo = Micros(from), hi = Micros(to);
  if (lo > hi) return std::vector<Snapshot>();
  if (max_count > 0) {
    // Walk back max_count snapshots from `to` to find where the result starts.
    HW_ASSIGN_OR_RETURN(std::optional<int64_t> last, impl_->LatestAtOrBefore(txn, r.agent_no, hi));
    if (!last.has_value() || *last < lo) return std::vector<Snapshot>();
    HW_ASSIGN_OR_RETURN(LmdbCursor c, LmdbCursor::Open(&txn, impl_->snapshots));
    std::string_view k;
    HW_ASSIGN_OR_RETURN(bool ok, c.Seek(detail::SnapshotKey(r.agent_no, *last), &k, nullptr));
    HW_CHECK(ok);
    int64_t start = *last;
    for (size_t n = 1; n < max_count; ++n) {
      HW_ASSIGN_OR_RETURN(ok, c.Move(MDB_PREV, &k, nullptr));
      AgentNo a;
      int64_t t;
      if (!ok || !detail::ParseSnapshotKey(k, &a, &t) || a != r.agent_no || t < lo) break;
      start = t;
    }
    lo = start;
  }
  std::vector<std::pair<int64_t, NumberedHistogram>> hs;
  HW_RETURN_IF_ERROR(impl_->ForEachSnapshot(txn, agent, r.agent_no, lo, hi,
                                            [&](int64_t t, const NumberedHistogram& h) -> Status {
                                              hs.emplace_back(t, h);
                                              return absl::OkStatus();
                                            }));
  return impl_->Materialize(txn, agent, r.agent_no, hs);
}

StatusOr<std::vector<ClassSample>> SnapshotStore::ClassHistory(const AgentId& agent,
                                                               std::string_view class_name,
                                                               absl::Time from,
                                                               absl::Time to) const {
  HW_RETURN_IF_ERROR(ValidateAgentId(agent));
  HW_ASSIGN_OR_RETURN(LmdbTxn txn, impl_->BeginRead());
  HW_ASSIGN_OR_RETURN(AgentRecord r, impl_->RequireAgent(txn, agent));
  // Every dictionary entry with this name (any module, any duplicate index), via the name-hash
  // index.
  std::vector<detail::ClassNo> targets;
  {
    uint64_t hash = detail::ClassNameHash(class_name);
    std::string prefix = detail::ClassNamePrefix(r.agent_no, hash);
    HW_ASSIGN_OR_RETURN(LmdbCursor c, LmdbCursor::Open(&txn, impl_->class_names));
    std::string_view k;
    HW_ASSIGN_OR_RETURN(bool ok, c.Seek(prefix, &k, nullptr));
    while (ok && k.substr(0, prefix.size()) == prefix) {
      AgentNo a;
      uint64_t h;
      detail::ClassNo cls;
      if (!detail::ParseClassNameKey(k, &a, &h, &cls)) {
        return absl::DataLossError("heapwatch store: malformed class_names key for agent " +
                                   agent.value);
      }
      std::string ck = detail::ClassKey(r.agent_no, cls);
      HW_ASSIGN_OR_RETURN(auto v, txn.Get(impl_->classes, ck));
      std::string what = absl::StrFormat("classes[%s #%d]", agent.value, cls.value);
      if (!v.has_value()) {
        return absl::DataLossError("heapwatch store: class_names refers to missing " + what);
      }
      HW_ASSIGN_OR_RETURN(detail::ClassEntry e, detail::DecodeClassEntry(*v, what));
      if (e.name == class_name) targets.push_back(cls);  // else: a hash collision
      HW_ASSIGN_OR_RETURN(ok, c.Move(MDB_NEXT, &k, nullptr));
    }
  }
  if (targets.empty()) {
    return absl::NotFoundError(absl::StrFormat("heapwatch store: agent %s has no class named %s",
                                               agent.value, class_name));
  }
  std::sort(targets.begin(), targets.end());
  std::vector<ClassSample> out;
  int64_t lo = Micros(from), hi = Micros(to);
  if (lo > hi) return out;
  HW_RETURN_IF_ERROR(impl_->ForEachSnapshot(
      txn, agent, r.agent_no, lo, hi, [&](int64_t t, const NumberedHistogram& h) -> Status {
        ClassSample sample{absl::FromUnixMicros(t), 0, 0, {}};
        HW_ASSIGN_OR_RETURN(auto cost, txn.Get(impl_->costs, detail::SnapshotKey(r.agent_no, t)));
        if (cost.has_value()) {
          HW_ASSIGN_OR_RETURN(sample.cost, detail::DecodeCollectionCost(
                                               *cost, "costs[" + detail::DescribeSnapshot(agent, t) + "]"));
        }
        auto it = h.rows.begin();
        for (detail::ClassNo cls : targets) {
          it = std::lower_bound(
              it, h.rows.end(), cls,
              [](const detail::NumberedRow& row, detail::ClassNo c) { return row.cls < c; });
          if (it == h.rows.end()) break;
          if (it->cls == cls) {
            sample.instances += it->instances;
            sample.bytes += it->bytes;
          }
        }
        out.push_back(sample);
        return absl::OkStatus();
      }));
  return out;
}

// ---- Records.

Status SnapshotStore::PutRecord(std::string_view table, std::string_view key,
                                std::string_view value) {
  HW_RETURN_IF_ERROR(ValidateRecordKey(table, key));
  if (value.size() > UINT32_MAX - 4) return absl::InvalidArgumentError("record value too large");
  Impl& s = *impl_;
  std::string v = detail::EncodeRecordValue(value);
  std::lock_guard<std::mutex> lock(s.write_mu);
  return s.Write(
      [&](LmdbTxn& txn) { return txn.Put(s.records, detail::RecordKey(table, key), v); });
}

StatusOr<std::string> SnapshotStore::GetRecord(std::string_view table, std::string_view key) const {
  HW_RETURN_IF_ERROR(ValidateRecordKey(table, key));
  HW_ASSIGN_OR_RETURN(LmdbTxn txn, impl_->BeginRead());
  HW_ASSIGN_OR_RETURN(auto v, txn.Get(impl_->records, detail::RecordKey(table, key)));
  if (!v.has_value()) {
    return absl::NotFoundError(absl::StrFormat("heapwatch store: no record %s/%s", table, key));
  }
  return detail::DecodeRecordValue(*v, absl::StrFormat("records[%s/%s]", table, key));
}

StatusOr<std::vector<std::pair<std::string, std::string>>> SnapshotStore::ListRecords(
    std::string_view table, std::string_view key_prefix) const {
  HW_RETURN_IF_ERROR(ValidateRecordKey(table, key_prefix));
  HW_ASSIGN_OR_RETURN(LmdbTxn txn, impl_->BeginRead());
  std::string prefix = detail::RecordKey(table, key_prefix);
  size_t table_part = 1 + table.size();
  std::vector<std::pair<std::string, std::string>> out;
  HW_ASSIGN_OR_RETURN(LmdbCursor c, LmdbCursor::Open(&txn, impl_->records));
  std::string_view k, v;
  HW_ASSIGN_OR_RETURN(bool ok, c.Seek(prefix, &k, &v));
  while (ok && k.substr(0, prefix.size()) == prefix) {
    std::string key(k.substr(table_part));
    HW_ASSIGN_OR_RETURN(std::string value, detail::DecodeRecordValue(
                                               v, absl::StrFormat("records[%s/%s]", table, key)));
    out.emplace_back(std::move(key), std::move(value));
    HW_ASSIGN_OR_RETURN(ok, c.Move(MDB_NEXT, &k, &v));
  }
  return out;
}

Status SnapshotStore::DeleteRecord(std::string_view table, std::string_view key) {
  HW_RETURN_IF_ERROR(ValidateRecordKey(table, key));
  Impl& s = *impl_;
  std::lock_guard<std::mutex> lock(s.write_mu);
  bool existed = false;
  HW_RETURN_IF_ERROR(s.Write([&](LmdbTxn& txn) -> Status {
    HW_ASSIGN_OR_RETURN(existed, txn.Del(s.records, detail::RecordKey(table, key)));
    return absl::OkStatus();
  }));
  if (!existed)
    return absl::NotFoundError(absl::StrFormat("heapwatch store: no record %s/%s", table, key));
  return absl::OkStatus();
}

// ---- Sizes.

StatusOr<uint64_t> SnapshotStore::Impl::UsedBytesIn(LmdbTxn& txn) const {
  uint64_t total = 0;
  for (MDB_dbi dbi :
       {meta, agents, classes, class_names, snapshots, records, costs, live_set, class_loading,
        string_table}) {
    HW_ASSIGN_OR_RETURN(MDB_stat st, txn.Stat(dbi));
    total += (st.ms_branch_pages + st.ms_leaf_pages + st.ms_overflow_pages) * uint64_t{st.ms_psize};
  }
  // The main table only holds the six table descriptors: one leaf page.
  MDB_stat main;
  if (int rc = mdb_env_stat(env.get(), &main); rc != 0) return LmdbStatus(rc, "env stat");
  total += (main.ms_branch_pages + main.ms_leaf_pages + main.ms_overflow_pages) *
           uint64_t{main.ms_psize};
  return total;
}

StatusOr<uint64_t> SnapshotStore::DiskBytes() const {
  std::string path = impl_->dir + "/data.mdb";
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    return absl::InternalError(absl::StrFormat("stat %s: %s", path, std::strerror(errno)));
  }
  return static_cast<uint64_t>(st.st_blocks) * 512;
}

StatusOr<uint64_t> SnapshotStore::UsedBytes() const {
  HW_ASSIGN_OR_RETURN(LmdbTxn txn, impl_->BeginRead());
  return impl_->UsedBytesIn(txn);
}

uint64_t SnapshotStore::MapBytes() const {
  std::shared_lock<std::shared_mutex> l(impl_->map_mu);
  MDB_envinfo info;
  HW_CHECK(mdb_env_info(impl_->env.get(), &info) == 0);
  return info.me_mapsize;
}

StatusOr<StoreStats> SnapshotStore::Stats() const {
  StoreStats stats;
  {
    HW_ASSIGN_OR_RETURN(LmdbTxn txn, impl_->BeginRead());
    HW_ASSIGN_OR_RETURN(MDB_stat a, txn.Stat(impl_->agents));
    HW_ASSIGN_OR_RETURN(MDB_stat c, txn.Stat(impl_->classes));
    HW_ASSIGN_OR_RETURN(MDB_stat s, txn.Stat(impl_->snapshots));
    HW_ASSIGN_OR_RETURN(MDB_stat n, txn.Stat(impl_->class_names));
    auto bytes = [](const MDB_stat& st) {
      return (st.ms_branch_pages + st.ms_leaf_pages + st.ms_overflow_pages) * uint64_t{st.ms_psize};
    };
    stats.agents = a.ms_entries;
    stats.classes = c.ms_entries;
    stats.snapshots = s.ms_entries;
    stats.snapshot_bytes = bytes(s);
    stats.dictionary_bytes = bytes(c) + bytes(n);
    HW_ASSIGN_OR_RETURN(MDB_stat l, txn.Stat(impl_->live_set));
    HW_ASSIGN_OR_RETURN(MDB_stat k, txn.Stat(impl_->costs));
    stats.live_set_points = l.ms_entries;
    stats.live_set_bytes = bytes(l) + bytes(k);
    HW_ASSIGN_OR_RETURN(MDB_stat cl, txn.Stat(impl_->class_loading));
    stats.class_loading_points = cl.ms_entries;
    stats.class_loading_bytes = bytes(cl);
    HW_ASSIGN_OR_RETURN(MDB_stat st, txn.Stat(impl_->string_table));
    stats.string_table_points = st.ms_entries;
    stats.string_table_bytes = bytes(st);
    HW_ASSIGN_OR_RETURN(stats.used_bytes, impl_->UsedBytesIn(txn));
  }
  HW_ASSIGN_OR_RETURN(stats.disk_bytes, DiskBytes());
  stats.map_bytes = MapBytes();
  return stats;
}

}  // namespace heapwatch::storage
