// PerfData (hsperfdata) parsing: synthetic regions in both byte orders, corrupt regions, and the
// file of a real running JVM.
#include "collectors/perf_data.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
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

// The counters of Sample() in region order, with their kinds: the first n of them are what a region
// with num_entries = n holds.
struct SampleCounter {
  const char* name;
  bool is_long;
};
constexpr SampleCounter kSampleCounters[] = {{"sun.rt.createVmBeginTime", true},
                                             {"sun.rt.javaCommand", false},
                                             {"sun.os.hrt.frequency", true},
                                             {"java.property.java.vm.version", false},
                                             {"negative", true}};

// The offset that a DataLoss message of PerfData::Parse names ("... at offset N"), or -1.
int64_t OffsetIn(const absl::Status& status) {
  const std::string message(status.message());
  const std::string key = "at offset ";
  const size_t at = message.rfind(key);
  if (at == std::string::npos) return -1;
  int64_t offset = -1;
  if (!absl::SimpleAtoi(message.substr(at + key.size()), &offset)) return -1;
  return offset;
}

// Random corruption of a valid region must never crash or read out of bounds (the sanitized copy of
// this test binary, heapwatch_perf_data_sanitized_test, runs it under ASan and UBSan), and each kind
// of damage must get the result that PerfData::Parse documents for it:
//  0. bytes changed after `used` (capacity the JVM has not written yet): parsed, same counters;
//  1. cut short: below the 32-byte prologue, DataLoss at offset 0; below `used`, DataLoss at offset
//     8 (the `used` field); otherwise parsed, same counters;
//  2. one prologue byte: magic -> DataLoss "bad magic"; byte order > 1 -> DataLoss at offset 4;
//     major version != 2 -> Unimplemented; accessible = 0 -> Unavailable;
//  3. num_entries = n: n <= 5 parses exactly the first n counters; more is DataLoss at offset
//     `used` (the next entry header would start past the used region);
//  4. used = u: outside [32, buffer size] DataLoss at offset 8; at or past the last entry's end,
//     parsed with the same counters; otherwise DataLoss at the start of the entry that u cuts;
//  5. 1-4 bytes changed within the entries: either parsed with every counter of the entries before
//     the first changed byte intact, or DataLoss at an offset at or after the start of the entry
//     holding that byte; no other code.
TEST(PerfDataTest, RandomCorruptionNeverCrashes) {
  constexpr int kKinds = 6;
  constexpr int kRounds = 24000;
  std::mt19937 rng(12345);
  int rounds_of_kind[kKinds] = {};
  int damaged_entries_parsed = 0, damaged_entries_rejected = 0;
  for (int round = 0; round < kRounds; ++round) {
    const bool big_endian = round % 2 == 1;
    const std::string good = Sample(big_endian).Build();
    auto u4 = [&](const std::string& b, size_t offset) {
      uint32_t v = 0;
      for (size_t i = 0; i < 4; ++i) {
        const uint32_t byte = static_cast<uint8_t>(b[offset + i]);
        v |= big_endian ? byte << (8 * (3 - i)) : byte << (8 * i);
      }
      return v;
    };
    auto put_u4 = [&](std::string* b, size_t offset, uint32_t v) {
      for (size_t i = 0; i < 4; ++i) {
        (*b)[offset + i] = static_cast<char>(v >> (8 * (big_endian ? 3 - i : i)));
      }
    };
    const StatusOr<PerfData> original = PerfData::Parse(good);
    ASSERT_TRUE(original.ok()) << original.status();
    const size_t used = u4(good, 8);
    ASSERT_EQ(used + 64, good.size());
    // Entry boundaries: starts[k] is where entry k begins; starts[5] == used.
    std::vector<size_t> starts{u4(good, 24)};
    for (int k = 0; k < 5; ++k) starts.push_back(starts.back() + u4(good, starts.back()));
    ASSERT_EQ(starts.back(), used);
    // The start of the entry holding byte `offset` (or that `offset` falls at).
    auto entry_of = [&](size_t offset) {
      size_t start = starts[0];
      for (size_t s : starts) {
        if (s <= offset) start = s;
      }
      return start;
    };

    const int kind = static_cast<int>(rng() % kKinds);
    ++rounds_of_kind[kind];
    std::string b = good;
    // What Parse must return: an error code with the offset its message must name (-1: any offset
    // that the kind allows, checked below), or OK with the first `counters` counters of the sample.
    absl::StatusCode want = absl::StatusCode::kOk;
    int64_t want_offset = -1;
    size_t counters = 5;
    size_t first_damage = 0;
    switch (kind) {
      case 0:
        for (int i = 0, n = 1 + static_cast<int>(rng() % 4); i < n; ++i) {
          b[used + rng() % (b.size() - used)] = static_cast<char>(rng());
        }
        break;
      case 1: {
        const size_t len = rng() % b.size();
        b.resize(len);
        if (len < 32) {
          want = absl::StatusCode::kDataLoss;
          want_offset = 0;
        } else if (len < used) {
          want = absl::StatusCode::kDataLoss;
          want_offset = 8;
        }
        break;
      }
      case 2:
        switch (rng() % 4) {
          case 0:
            b[rng() % 4] ^= static_cast<char>(1 + rng() % 255);
            want = absl::StatusCode::kDataLoss;
            want_offset = 0;
            break;
          case 1:
            b[4] = static_cast<char>(2 + rng() % 254);
            want = absl::StatusCode::kDataLoss;
            want_offset = 4;
            break;
          case 2: {
            const uint32_t version = rng() % 255;
            b[5] = static_cast<char>(version >= 2 ? version + 1 : version);  // 0..255 but 2
            want = absl::StatusCode::kUnimplemented;
            break;
          }
          default:
            b[7] = 0;
            want = absl::StatusCode::kUnavailable;
        }
        break;
      case 3: {
        const uint32_t n = rng() % 11;
        put_u4(&b, 28, n);
        if (n <= 5) {
          counters = n;
        } else {
          want = absl::StatusCode::kDataLoss;
          want_offset = static_cast<int64_t>(used);
        }
        break;
      }
      case 4: {
        const uint32_t u = rng() % (b.size() + 65);
        put_u4(&b, 8, u);
        if (u < 32 || u > b.size()) {
          want = absl::StatusCode::kDataLoss;
          want_offset = 8;
        } else if (u < used) {
          want = absl::StatusCode::kDataLoss;
          want_offset = static_cast<int64_t>(entry_of(u));
        }
        break;
      }
      default: {
        first_damage = used;
        for (int i = 0, n = 1 + static_cast<int>(rng() % 4); i < n; ++i) {
          const size_t at = starts[0] + rng() % (used - starts[0]);
          const char was = b[at];
          b[at] = static_cast<char>(rng());
          if (b[at] != was) first_damage = std::min(first_damage, at);
        }
      }
    }

    SCOPED_TRACE(::testing::Message() << "round " << round << ", kind " << kind
                                      << (big_endian ? ", big-endian" : ", little-endian"));
    const StatusOr<PerfData> perf = PerfData::Parse(b);
    if (kind == 5) {
      if (perf.ok()) {
        ++damaged_entries_parsed;
        // The entries that end before the first changed byte are read as they were.
        for (size_t k = 0; k < 5 && starts[k + 1] <= first_damage; ++k) {
          const SampleCounter& c = kSampleCounters[k];
          if (c.is_long) {
            EXPECT_EQ(perf->GetLong(c.name), original->GetLong(c.name)) << c.name;
          } else {
            EXPECT_EQ(perf->GetString(c.name), original->GetString(c.name)) << c.name;
          }
        }
      } else {
        ++damaged_entries_rejected;
        EXPECT_EQ(perf.status().code(), absl::StatusCode::kDataLoss) << perf.status();
        EXPECT_GE(OffsetIn(perf.status()), static_cast<int64_t>(entry_of(first_damage)))
            << perf.status() << " (first changed byte at " << first_damage << ")";
        EXPECT_LE(OffsetIn(perf.status()), static_cast<int64_t>(used)) << perf.status();
      }
      continue;
    }
    ASSERT_EQ(perf.status().code(), want) << perf.status();
    if (want != absl::StatusCode::kOk) {
      if (want == absl::StatusCode::kDataLoss) {
        EXPECT_EQ(OffsetIn(perf.status()), want_offset) << perf.status();
        if (kind == 2 && want_offset == 0) {
          EXPECT_THAT(std::string(perf.status().message()), HasSubstr("bad magic"));
        }
      }
      continue;
    }
    EXPECT_EQ(perf->size(), counters);
    for (size_t k = 0; k < 5; ++k) {
      const SampleCounter& c = kSampleCounters[k];
      if (c.is_long) {
        EXPECT_EQ(perf->GetLong(c.name), k < counters ? original->GetLong(c.name) : std::nullopt)
            << c.name;
      } else {
        EXPECT_EQ(perf->GetString(c.name),
                  k < counters ? original->GetString(c.name) : std::nullopt)
            << c.name;
      }
    }
  }
  // Every kind ran often, and damaged entries led to both outcomes (a parser that rejected, or
  // accepted, every damaged region would not exercise the checks above).
  for (int kind = 0; kind < kKinds; ++kind) {
    EXPECT_GT(rounds_of_kind[kind], kRounds / kKinds / 2) << "kind " << kind;
  }
  EXPECT_GT(damaged_entries_parsed, 100);
  EXPECT_GT(damaged_entries_rejected, 100);
  std::cout << "damaged entries: " << damaged_entries_parsed << " parsed, "
            << damaged_entries_rejected << " rejected" << std::endl;
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
