// Helpers shared by the end-to-end tests (e2e_test.cc, escalation_e2e_test.cc): temporary
// directories, polling, the daemon's port files, JSON from heapwatchctl, Prometheus text lines.
//
// Thread-safety: every function is reentrant; none keeps state.
#ifndef HEAPWATCH_TESTS_E2E_E2E_SUPPORT_H_
#define HEAPWATCH_TESTS_E2E_E2E_SUPPORT_H_

#include <functional>
#include <optional>
#include <string>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "google/protobuf/struct.pb.h"

namespace heapwatch::testing {

// Creates a fresh directory "<gtest temp dir>/<prefix>-XXXXXX" and returns its path. Aborts
// (HW_CHECK) when it cannot be created.
std::string MakeTempDir(absl::string_view prefix);

// Calls `done` every `poll` until it returns true or `timeout` has passed; the result of the last
// call.
bool WaitFor(absl::Duration timeout, const std::function<bool()>& done,
             absl::Duration poll = absl::Milliseconds(200));

// Copies `<jar_dir>/<program>.jar` (built by tests/e2e/CMakeLists.txt) into `dir` and returns the
// copy's path. Started with `java -jar <copy>`, the JVM's main class as heapwatchd sees it is that
// path, so a test that copies its programs into its own temporary directory can watch exactly its own
// JVMs with OwnJarsWatchConfig(dir). Aborts (HW_CHECK) when the copy fails.
std::string CopyJar(const std::string& jar_dir, const std::string& program, const std::string& dir);

// heapwatchd YAML that watches only the JVMs started from jars directly in `dir` (see CopyJar):
// "watch:\n  agents:\n    include: ['<dir>/*.jar']\n", with the glob characters of `dir` escaped.
// Other JVMs, including other tests' runs of the same programs, are never attached to.
std::string OwnJarsWatchConfig(const std::string& dir);

// The port number heapwatchd wrote to `path` (--grpc-port-file / --metrics-port-file), or nullopt
// while the file is missing, empty or not a positive number.
std::optional<int> ReadPort(const std::string& path);

// Parses a JSON object (e.g. `heapwatchctl ... --json` output); a parse failure is a test failure
// (EXPECT) and yields an empty Struct.
google::protobuf::Struct ParseJson(const std::string& text);

// The string or number value of `key` in `s` as text ("" when absent or of another type).
std::string Field(const google::protobuf::Struct& s, const std::string& key);

// The value of the sample whose line starts with `series` followed by a space in Prometheus text
// exposition `metrics`, e.g. series = `heapwatch_extended_dumps_total{agent="a",result="ok"}`;
// nullopt when there is no such line or its value does not parse. O(size of metrics).
std::optional<double> MetricValue(absl::string_view metrics, absl::string_view series);

}  // namespace heapwatch::testing

#endif  // HEAPWATCH_TESTS_E2E_E2E_SUPPORT_H_
