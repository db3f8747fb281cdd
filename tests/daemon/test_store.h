// Shared by the daemon tests (and the tests that reuse tests/daemon/query_fixture.h): a fresh
// temporary directory and a real SnapshotStore in it, opened the way these tests need it.
#ifndef HEAPWATCH_TESTS_DAEMON_TEST_STORE_H_
#define HEAPWATCH_TESTS_DAEMON_TEST_STORE_H_

#include <stdlib.h>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/agent.h"
#include "common/status.h"
#include "gtest/gtest.h"
#include "storage/snapshot_store.h"

namespace heapwatch::testing {

// Creates "<gtest TempDir>/heapwatch-<name>-XXXXXX" (mkdtemp, mode 0700) and returns its path; ""
// when it cannot be created. The caller removes it.
inline std::string MakeTestDir(std::string_view name) {
  std::string tmpl = ::testing::TempDir() + "/heapwatch-" + std::string(name) + "-XXXXXX";
  if (::mkdtemp(tmpl.data()) == nullptr) return "";
  return tmpl;
}

// Opens a real SnapshotStore in `dir`/data (created if missing) with no background retention
// thread (the tests that need retention run it themselves) and stores `agents` in it. Errors:
// those of SnapshotStore::Open and SnapshotStore::PutAgent.
inline StatusOr<std::unique_ptr<storage::SnapshotStore>> OpenTestStore(
    const std::string& dir, const std::vector<AgentInfo>& agents = {}) {
  storage::StoreOptions options;
  options.dir = dir + "/data";
  options.background_retention = false;
  HW_ASSIGN_OR_RETURN(std::unique_ptr<storage::SnapshotStore> store,
                      storage::SnapshotStore::Open(options));
  for (const AgentInfo& info : agents) HW_RETURN_IF_ERROR(store->PutAgent(info));
  return store;
}

}  // namespace heapwatch::testing

#endif  // HEAPWATCH_TESTS_DAEMON_TEST_STORE_H_
