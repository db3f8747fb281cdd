// Group commit of SnapshotStore::Append (storage/detail/store_impl.h, "Group commit"): many
// agents' Appends share one LMDB write transaction, so one fsync of the data pages and one of the
// meta page serve a whole batch, and every Append still returns only after its own snapshot and
// delivery records are durable.
#include <algorithm>
#include <iterator>

#include "storage/detail/store_impl.h"
#include "storage/snapshot_store.h"

namespace heapwatch::storage {

namespace {

// At most this many Appends per transaction: bounds a transaction's dirty pages (LMDB keeps them
// in memory until the commit) and the latency the last Append of a batch adds to the first.
constexpr size_t kMaxBatch = 128;

}  // namespace

Status SnapshotStore::Impl::Write(absl::FunctionRef<Status(detail::LmdbTxn&)> body) {
  // The caller holds write_mu (a lock_guard of its own); wait on it without taking it over.
  std::unique_lock<std::mutex> lock(write_mu, std::adopt_lock);
  ++writers_waiting;  // no new Append starts meanwhile (AwaitAppendTurn), so this cannot starve
  commit_cv.wait(lock, [&] { return appending.empty(); });
  --writers_waiting;
  lock.release();
  if (writers_waiting == 0) commit_cv.notify_all();
  return WriteNow(body);
}

void SnapshotStore::Impl::AwaitAppendTurn(std::unique_lock<std::mutex>& lock,
                                          const AgentId& agent) {
  commit_cv.wait(lock, [&] { return writers_waiting == 0 && !appending.contains(agent); });
}

Status SnapshotStore::Impl::CommitGrouped(std::unique_lock<std::mutex>& lock,
                                          detail::PendingAppend* pending) {
  appending.insert(pending->agent);
  commit_queue.push_back(pending);
  while (!pending->done) {
    if (committing) {
      commit_cv.wait(lock);
      continue;
    }
    // Lead: commit a batch from the front of the queue (ours is in it, or was in an earlier one
    // that has finished: then pending->done is already set and we do not get here).
    committing = true;
    const size_t n = std::min(commit_queue.size(), kMaxBatch);
    std::vector<detail::PendingAppend*> batch(commit_queue.begin(), commit_queue.begin() + n);
    commit_queue.erase(commit_queue.begin(), commit_queue.begin() + n);
    lock.unlock();
    Status together = WriteNow([&](detail::LmdbTxn& txn) -> Status {
      for (detail::PendingAppend* p : batch) HW_RETURN_IF_ERROR(p->body(txn));
      return absl::OkStatus();
    });
    if (together.ok() || batch.size() == 1) {
      for (detail::PendingAppend* p : batch) p->status = together;
    } else {
      // One Append's failure (AlreadyExists, a full disk, ...) must not fail the others: nothing
      // of the batch was committed, so run each in its own transaction.
      for (detail::PendingAppend* p : batch) p->status = WriteNow(p->body);
    }
    lock.lock();
    for (detail::PendingAppend* p : batch) p->done = true;
    committing = false;
    commit_cv.notify_all();
  }
  return pending->status;
}

void SnapshotStore::Impl::FinishAppend(const AgentId& agent) {
  appending.erase(agent);
  commit_cv.notify_all();
}

uint64_t SnapshotStore::Commits() const { return impl_->commits.load(std::memory_order_relaxed); }

}  // namespace heapwatch::storage
