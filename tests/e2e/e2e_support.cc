#include "tests/e2e/e2e_support.h"

#include <stdlib.h>

#include <cstdio>
#include <filesystem>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "common/status.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"
#include "tests/e2e/subprocess.h"

namespace heapwatch::testing {

std::string MakeTempDir(absl::string_view prefix) {
  std::string base = ::testing::TempDir();
  if (base.empty() || base.back() != '/') base += '/';
  std::string tmpl = absl::StrCat(base, prefix, "-XXXXXX");
  HW_CHECK(mkdtemp(tmpl.data()) != nullptr);
  return tmpl;
}

std::string CopyJar(const std::string& jar_dir, const std::string& program, const std::string& dir) {
  const std::string from = absl::StrCat(jar_dir, "/", program, ".jar");
  const std::string to = absl::StrCat(dir, "/", program, ".jar");
  std::error_code ec;
  std::filesystem::copy_file(from, to, std::filesystem::copy_options::overwrite_existing, ec);
  if (ec) {
    // HW_CHECK names only its condition: say first which jar, from where to where, and why.
    std::error_code exists_ec;
    const char* hint = std::filesystem::exists(from, exists_ec)
                           ? ""
                           : "; no such jar: is the heapwatch_e2e_java target built?";
    std::fprintf(stderr,
                 "CopyJar: cannot copy the jar of test program %s from %s to %s: %s (errno %d)%s\n",
                 program.c_str(), from.c_str(), to.c_str(), ec.message().c_str(), ec.value(), hint);
  }
  HW_CHECK(!ec);
  return to;
}

std::string OwnJarsWatchConfig(const std::string& dir) {
  // fnmatch(3) without FNM_NOESCAPE: a backslash makes the next character literal. In YAML single
  // quotes a backslash is literal and a quote is doubled.
  std::string pattern;
  for (char c : dir) {
    if (c == '*' || c == '?' || c == '[' || c == ']' || c == '\\') pattern += '\\';
    pattern += c;
  }
  pattern += "/*.jar";
  std::string quoted;
  for (char c : pattern) {
    quoted += c;
    if (c == '\'') quoted += '\'';
  }
  return absl::StrCat("watch:\n  agents:\n    include: ['", quoted, "']\n");
}

bool WaitFor(absl::Duration timeout, const std::function<bool()>& done, absl::Duration poll) {
  absl::Time deadline = absl::Now() + timeout;
  while (absl::Now() < deadline) {
    if (done()) return true;
    absl::SleepFor(poll);
  }
  return done();
}

std::optional<int> ReadPort(const std::string& path) {
  int port = 0;
  std::string text(absl::StripAsciiWhitespace(ReadFile(path)));
  if (!text.empty() && absl::SimpleAtoi(text, &port) && port > 0) return port;
  return std::nullopt;
}

google::protobuf::Struct ParseJson(const std::string& text) {
  google::protobuf::Struct s;
  auto status = google::protobuf::util::JsonStringToMessage(text, &s);
  EXPECT_TRUE(status.ok()) << status.ToString() << "\n" << text;
  return s;
}

std::string Field(const google::protobuf::Struct& s, const std::string& key) {
  auto it = s.fields().find(key);
  if (it == s.fields().end()) return "";
  if (it->second.has_string_value()) return it->second.string_value();
  if (it->second.has_number_value()) return absl::StrCat(it->second.number_value());
  return "";
}

std::optional<double> MetricValue(absl::string_view metrics, absl::string_view series) {
  for (absl::string_view line : absl::StrSplit(metrics, '\n')) {
    if (!absl::ConsumePrefix(&line, series) || !absl::ConsumePrefix(&line, " ")) continue;
    // "<value>" or "<value> <timestamp>".
    absl::string_view value = line.substr(0, line.find(' '));
    double v = 0;
    if (absl::SimpleAtod(value, &v)) return v;
    return std::nullopt;
  }
  return std::nullopt;
}

}  // namespace heapwatch::testing
