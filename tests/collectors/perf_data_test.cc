// PerfData (hsperfdata) parsing: synthetic regions in both byte orders, corrupt regions, and the
// file of a real running JVM.
#include "collectors/perf_data.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <random>
#include <string>

#include "absl/time/clock.h"
#include "tests/collectors/test_process.h"

namespace heapwatch::collectors {
namespace {

using ::testing::HasSubstr;

// Builds a PerfData region (format 2.0) the way HotSpot lays it out.
class RegionBuilder {
 public:
  explicit RegionBuilder(bool big_endian) : big_endian_(big_endian) { bytes_.assign(32, '\0'); }

  RegionBuilder& Long(const std::string& name, int64_t value) {
    return Entry(name, 'J', 0, Encode(static_cast<uint64_t>(value), 8));
  }
  RegionBuilder& String(const std::string& name, const std::string& value, size_t capacity) {
    std::string data = value;
    data.resize(capacity, '\0');
    return Entry(name, 'B', static_cast<int32_t>(capacity), data);
  }

  std::string Build(uint8_t accessible = 1, uint8_t major = 2) const {
    std::string out = bytes_;
    const std::string magic = "\xca\xfe\xc0\xc0";
    out.replace(0, 4, magic);
    out[4] = big_endian_ ? 0 : 1;
    out[5] = static_cast<char>(major);
    out[6] = 0;
    out[7] = static_cast<char>(accessible);
    out.replace(8, 4, Encode(out.size(), 4));  // used
    out.replace(24, 4, Encode(32, 4));         // entry_offset
    out.replace(28, 4, Encode(entries_, 4));   // num_entries
    out.resize(out.size() + 64, '\0');         // unused capacity after `used`
    return out;
  }

 private:
  std::string Encode(uint64_t v, size_t width) const {
    std::string s(width, '\0');
    for (size_t i = 0; i < width; ++i) {
      const char b = static_cast<char>((v >> (8 * i)) & 0xff);
      s[big_endian_ ? width - 1 - i : i] = b;
    }
    return s;
  }

  RegionBuilder& Entry(const std::string& name, char type, int32_t vector_length,
                       const std::string& data) {
    const size_t name_offset = 20;
    size_t data_offset = name_offset + name.size() + 1;
    data_offset = (data_offset + 7) / 8 * 8;
    size_t length = data_offset + data.size();
    length = (length + 7) / 8 * 8;
    std::string e(length, '\0');
    e.replace(0, 4, Encode(length, 4));
    e.replace(4, 4, Encode(name_offset, 4));
    e.replace(8, 4, Encode(static_cast<uint32_t>(vector_length), 4));
    e[12] = type;
    e[13] = 0;
    e[14] = type == 'B' ? 5 : 4;  // U_String / U_Ticks-ish, unused by the reader
    e[15] = 1;
    e.replace(16, 4, Encode(data_offset, 4));
    e.replace(name_offset, name.size(), name);
    e.replace(data_offset, data.size(), data);
    bytes_ += e;
    ++entries_;
    return *this;
  }

  bool big_endian_;
  std::string bytes_;
  uint32_t entries_ = 0;
};

RegionBuilder Sample(bool big_endian) {
  RegionBuilder b(big_endian);
  b.Long("sun.rt.createVmBeginTime", 1'763'000'000'123)
      .String("sun.rt.javaCommand", "com.example.Main --port 8080", 256)
      .Long("sun.os.hrt.frequency", 1'000'000'000)
      .String("java.property.java.vm.version", "17.0.15+6-Debian-1deb12u1", 64)
      .Long("negative", -42);
  return b;
}

TEST(PerfDataTest, ParsesBothByteOrders) {
  for (bool big_endian : {false, true}) {
    SCOPED_TRACE(big_endian ? "big-endian" : "little-endian");
    auto perf = PerfData::Parse(Sample(big_endian).Build());
    ASSERT_TRUE(perf.ok()) << perf.status();
    EXPECT_EQ(perf->size(), 5u);
    EXPECT_EQ(perf->GetLong("sun.rt.createVmBeginTime"), 1'763'000'000'123);
    EXPECT_EQ(perf->GetLong("sun.os.hrt.frequency"), 1'000'000'000);
    EXPECT_EQ(perf->GetLong("negative"), -42);
    EXPECT_EQ(perf->GetString("sun.rt.javaCommand"), "com.example.Main --port 8080");
    EXPECT_EQ(perf->GetString("java.property.java.vm.version"), "17.0.15+6-Debian-1deb12u1");
    EXPECT_EQ(perf->GetLong("sun.rt.javaCommand"), std::nullopt);  // wrong kind
    EXPECT_EQ(perf->GetString("missing"), std::nullopt);
  }
}

TEST(PerfDataTest, RejectsBadPrologue) {
  const std::string good = Sample(false).Build();
  auto code = [](const std::string& bytes) { return PerfData::Parse(bytes).status().code(); };
  EXPECT_EQ(code(""), absl::StatusCode::kDataLoss);
  EXPECT_EQ(code(good.substr(0, 31)), absl::StatusCode::kDataLoss);
  std::string bad_magic = good;
  bad_magic[0] = 'X';
  auto s = PerfData::Parse(bad_magic);
  EXPECT_EQ(s.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(std::string(s.status().message()), HasSubstr("bad magic"));
  std::string bad_order = good;
  bad_order[4] = 7;
  EXPECT_EQ(code(bad_order), absl::StatusCode::kDataLoss);
  EXPECT_EQ(code(Sample(false).Build(1, 1)), absl::StatusCode::kUnimplemented);
  EXPECT_EQ(code(Sample(false).Build(0)), absl::StatusCode::kUnavailable);
  // `used` larger than the buffer (a region cut short).
  EXPECT_EQ(code(good.substr(0, good.size() - 100)), absl::StatusCode::kDataLoss);
}

TEST(PerfDataTest, RejectsEntriesPointingOutside) {
  const std::string good = Sample(true).Build();
  // First entry starts at 32: entry_length, name_offset, vector_length, ..., data_offset
  // (big-endian).
  auto with = [&](size_t offset, uint32_t v) {
    std::string b = good;
    for (int i = 0; i < 4; ++i) b[offset + i] = static_cast<char>(v >> (8 * (3 - i)));
    return PerfData::Parse(b).status();
  };
  EXPECT_EQ(with(32, 0xffff).code(), absl::StatusCode::kDataLoss);  // entry_length too long
  EXPECT_EQ(with(32, 4).code(), absl::StatusCode::kDataLoss);       // shorter than the header
  EXPECT_EQ(with(36, 10000).code(), absl::StatusCode::kDataLoss);   // name_offset outside
  EXPECT_EQ(with(48, 100000).code(), absl::StatusCode::kDataLoss);  // data_offset outside
  EXPECT_EQ(with(28, 1000).code(), absl::StatusCode::kDataLoss);    // too many entries
  std::string unterminated = good;
  const size_t name = good.find("sun.rt.createVmBeginTime");
  for (size_t i = name; i < 32 + 56; ++i) unterminated[i] = 'x';  // name, padding and data
  EXPECT_EQ(PerfData::Parse(unterminated).status().code(), absl::StatusCode::kDataLoss);
}

// Random corruption of a valid region must never crash or read out of bounds (run under ASan to be
// thorough); results are either an error or a parse.
TEST(PerfDataTest, RandomCorruptionNeverCrashes) {
  const std::string good = Sample(false).Build();
  std::mt19937 rng(12345);
  for (int round = 0; round < 20000; ++round) {
    std::string b = good;
    const int flips = 1 + static_cast<int>(rng() % 4);
    for (int i = 0; i < flips; ++i) b[rng() % b.size()] = static_cast<char>(rng());
    if (rng() % 8 == 0) b.resize(rng() % b.size());
    (void)PerfData::Parse(b);
  }
}

TEST(PerfDataTest, RealJvmFile) {
  const absl::Time before = absl::Now();
  testing::TestJvm jvm({});
  ASSERT_EQ(jvm.error(), "");
  const absl::Time after = absl::Now();
  auto local = jvm.Discover();
  ASSERT_TRUE(local.has_value());
  auto perf = PerfData::ReadFile(local->perfdata_path);
  ASSERT_TRUE(perf.ok()) << perf.status();
  EXPECT_GT(perf->size(), 100u);  // a JVM exports hundreds of counters
  EXPECT_EQ(perf->GetString("sun.rt.javaCommand"), "HwTestApp");
  auto begin = perf->GetLong("sun.rt.createVmBeginTime");
  ASSERT_TRUE(begin.has_value());
  const absl::Time start = absl::FromUnixMillis(*begin);
  EXPECT_GE(start, before - absl::Seconds(1));
  EXPECT_LE(start, after);
  EXPECT_THAT(perf->GetString("java.property.java.vm.version").value_or(""), HasSubstr("17."));
  EXPECT_EQ(perf->GetString("sun.rt.jvmCapabilities").value_or("").substr(0, 1), "1");

  // Every truncation of the real file is handled without a crash.
  const std::string bytes = testing::ReadFileOrDie(local->perfdata_path);
  for (size_t len = 0; len < bytes.size(); len += 7) (void)PerfData::Parse(bytes.substr(0, len));
}

}  // namespace
}  // namespace heapwatch::collectors
