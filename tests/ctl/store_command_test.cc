// heapwatchctl store against a real QueryServer and store over gRPC loopback
// (tests/daemon/query_fixture.h): the store's use per kind of data (GetStoreStats).
#include <iostream>
#include <sstream>

#include "ctl/ctl.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"
#include "heapwatch/v1/heapwatch.pb.h"
#include "tests/daemon/query_fixture.h"

namespace heapwatch::ctl {
namespace {

using ::testing::HasSubstr;
using ::testing::MatchesRegex;

class StoreCommandTest : public heapwatch::testing::QueryFixture {
 protected:
  struct Result {
    int code;
    std::string out, err;
  };
  Result Run(std::vector<std::string> args) {
    args.insert(args.begin(), {"heapwatchctl", "--server", address_});
    std::vector<const char*> argv;
    for (const auto& a : args) argv.push_back(a.c_str());
    std::ostringstream out, err;
    int code = RunCtl(static_cast<int>(argv.size()), argv.data(), out, err);
    return {code, out.str(), err.str()};
  }
};

TEST_F(StoreCommandTest, ShowsEveryKindWithItsRecordsAndBytes) {
  ASSERT_TRUE(store_->PutRecord("xdump", "host-1-a/20231114T221320.000000Z", "d").ok());
  for (const char* c : {"Leak", "Cache", "Other"}) {
    ASSERT_TRUE(store_
                    ->PutRecord("xreport",
                                std::string("host-1-a/") + c + "/20231114T221320.000000Z",
                                std::string(5000, 'r'))
                    .ok());
  }
  ASSERT_TRUE(store_->PutRecord("xsummary", "host-1-a/20231114T221320.000000Z", "s").ok());
  ASSERT_TRUE(store_->PutRecord("agent_delivery", "host-1-a", "7").ok());  // the agent gateway's

  Result r = Run({"store", "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  v1::GetStoreStatsResponse response;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(r.out, &response).ok()) << r.out;
  std::map<std::string, v1::StoreKindUsage> kinds;
  uint64_t sum = 0;
  for (const auto& k : response.kinds()) {
    kinds[k.kind()] = k;
    sum += k.bytes();
  }
  ASSERT_EQ(response.kinds_size(), 11);
  EXPECT_EQ(response.kinds(0).kind(), "snapshots");
  EXPECT_EQ(kinds["snapshots"].records(), 5u);  // the fixture's snapshots of two agents
  EXPECT_EQ(kinds["agents"].records(), 2u);
  EXPECT_EQ(kinds["dump_records"].records(), 1u);
  EXPECT_EQ(kinds["reports"].records(), 3u);
  EXPECT_EQ(kinds["summaries"].records(), 1u);
  EXPECT_EQ(kinds["other_records"].records(), 0u);
  EXPECT_EQ(kinds["class_loading"].records(), 0u);  // a kind of its own, not other_records
  EXPECT_EQ(kinds["string_table"].records(), 0u);   // so is the interned-string series
  EXPECT_EQ(response.kinds(9).kind(), "string_table");
  EXPECT_EQ(kinds["agent_delivery"].records(), 1u);  // a kind of its own too
  EXPECT_EQ(response.kinds(10).kind(), "agent_delivery");
  // Reports hold most of the record bytes; the kinds sum to the live data.
  EXPECT_GT(kinds["reports"].bytes(), kinds["summaries"].bytes());
  EXPECT_EQ(sum, response.used_bytes());
  EXPECT_EQ(response.used_bytes(), *store_->UsedBytes());
  EXPECT_EQ(response.max_bytes(), store_->options().retention_bytes);

  r = Run({"store"});
  ASSERT_EQ(r.code, 0) << r.err;
  std::cout << r.out;
  EXPECT_THAT(r.out, HasSubstr("of 1.0 GiB (retention.max_bytes"));
  EXPECT_THAT(r.out, MatchesRegex("(.|\n)*\nreports +3 +[0-9.]+ KiB +[0-9.]+%\n(.|\n)*"));
  EXPECT_THAT(r.out, MatchesRegex("(.|\n)*\nsnapshots +5 +(.|\n)*"));
  EXPECT_THAT(r.out, HasSubstr("kept raw dumps: 0 B"));
}

}  // namespace
}  // namespace heapwatch::ctl
