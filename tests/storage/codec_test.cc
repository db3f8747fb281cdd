// The byte encodings of docs/storage-format.md: varints, keys, agent / class / snapshot values, and
// that every malformed value is DataLoss (never a crash).
#include "storage/detail/codec.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <random>

namespace heapwatch::storage::detail {
namespace {

TEST(VarintTest, RoundTripsEdgeValues) {
  for (uint64_t v : {uint64_t{0}, uint64_t{1}, uint64_t{127}, uint64_t{128}, uint64_t{16383},
                     uint64_t{16384}, uint64_t{1} << 32, ~uint64_t{0} - 1, ~uint64_t{0}}) {
    std::string s;
    PutVarint64(&s, v);
    std::string_view in = s;
    uint64_t out = 0;
    ASSERT_TRUE(GetVarint64(&in, &out)) << v;
    EXPECT_EQ(out, v);
    EXPECT_TRUE(in.empty());
  }
  std::string s;
  PutVarint64(&s, 300);
  EXPECT_EQ(s, std::string("\xac\x02", 2));  // LEB128, low group first
}

TEST(VarintTest, RejectsTruncatedAndOverlong) {
  std::string s;
  PutVarint64(&s, ~uint64_t{0});
  ASSERT_EQ(s.size(), 10u);
  uint64_t v;
  for (size_t n = 0; n < s.size(); ++n) {
    std::string_view in(s.data(), n);
    EXPECT_FALSE(GetVarint64(&in, &v)) << n;
  }
  std::string overflow(9, '\xff');
  overflow.push_back('\x02');  // a 10th byte above 1 overflows 64 bits
  std::string_view in = overflow;
  EXPECT_FALSE(GetVarint64(&in, &v));
  std::string eleven(10, '\x80');
  eleven.push_back('\x00');
  in = eleven;
  EXPECT_FALSE(GetVarint64(&in, &v));
}

TEST(ZigZagTest, RoundTrips) {
  for (int64_t v : {int64_t{0}, int64_t{-1}, int64_t{1}, int64_t{-64}, int64_t{63},
                    std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max()}) {
    EXPECT_EQ(UnZigZag(ZigZag(v)), v);
  }
  EXPECT_EQ(ZigZag(-1), 1u);
  EXPECT_EQ(ZigZag(1), 2u);
}

TEST(KeyTest, SnapshotKeysSortByAgentThenTime) {
  std::vector<std::pair<uint32_t, int64_t>> order = {
      {0, -5'000'000}, {0, -1}, {0, 0},  {0, 1}, {0, 1'700'000'000'000'000},
      {1, -9},         {1, 3},  {256, 0}};
  for (size_t i = 1; i < order.size(); ++i) {
    std::string a = SnapshotKey(AgentNo{order[i - 1].first}, order[i - 1].second);
    std::string b = SnapshotKey(AgentNo{order[i].first}, order[i].second);
    EXPECT_LT(a, b) << i;  // std::string compares bytes as unsigned char, like LMDB's memcmp
  }
  AgentNo agent;
  int64_t t;
  ASSERT_TRUE(ParseSnapshotKey(SnapshotKey(AgentNo{7}, -42), &agent, &t));
  EXPECT_EQ(agent.value, 7u);
  EXPECT_EQ(t, -42);
  EXPECT_EQ(SnapshotKey(AgentNo{1}, 0), std::string("\0\0\0\x01\x80\0\0\0\0\0\0\0", 12));
  EXPECT_FALSE(ParseSnapshotKey("short", &agent, &t));
}

TEST(KeyTest, RecordKeysOfDifferentTablesNeverMix) {
  // "ab" + "c" and "a" + "bc" must differ: the table is length-prefixed.
  EXPECT_NE(RecordKey("ab", "c"), RecordKey("a", "bc"));
  EXPECT_EQ(RecordKey("t", "k"), std::string("\x01tk", 3));
}

TEST(ClassNameHashTest, IsFnv1a64) {
  EXPECT_EQ(ClassNameHash(""), 0xcbf29ce484222325ull);
  EXPECT_EQ(ClassNameHash("a"), 0xaf63dc4c8601ec8cull);  // published FNV-1a test vector
}

TEST(AgentRecordTest, RoundTripsWithAndWithoutInfo) {
  AgentRecord r;
  r.agent_no = AgentNo{42};
  r.next_class = ClassNo{3000};
  r.updated_micros = -17;
  r.info.id = AgentId("host-1:1234:abc");
  std::string v = EncodeAgentRecord(r);
  auto bare = DecodeAgentRecord(v, r.info.id);
  ASSERT_TRUE(bare.ok()) << bare.status();
  EXPECT_EQ(bare->agent_no.value, 42u);
  EXPECT_EQ(bare->next_class.value, 3000u);
  EXPECT_EQ(bare->updated_micros, -17);
  EXPECT_FALSE(bare->has_info);
  EXPECT_EQ(bare->info.id, r.info.id);

  r.has_info = true;
  r.info.kind = AgentKind::kRegistered;
  r.info.host = "db-7";
  r.info.pid = 99123;
  r.info.main_class = "com.example.Main";
  r.info.jvm_version = "17.0.15+6-Debian-1deb12u1";
  r.info.uid = 1000;
  r.info.gid = 4294967295u;
  for (absl::Time start : {absl::InfinitePast(), absl::InfiniteFuture(),
                           absl::FromUnixMicros(1'700'000'000'123'456)}) {
    r.info.start_time = start;
    auto got = DecodeAgentRecord(EncodeAgentRecord(r), r.info.id);
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_TRUE(got->has_info);
    EXPECT_EQ(got->info, r.info);
  }
}

TEST(ClassEntryTest, RoundTrips) {
  ClassEntry e{"java.util.HashMap$Node", "java.base@17.0.15", 2};
  auto got = DecodeClassEntry(EncodeClassEntry(e), "classes[x]");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(*got, e);
}

NumberedHistogram RandomHistogram(std::mt19937_64& rng, uint32_t universe, double presence) {
  NumberedHistogram h;
  std::uniform_real_distribution<double> u(0, 1);
  for (uint32_t c = 0; c < universe; ++c) {
    if (u(rng) >= presence) continue;
    uint64_t inst = rng() % 100000;
    uint64_t size = 16 + 8 * (rng() % 8);
    uint64_t bytes = (rng() % 4 == 0) ? rng() % 10'000'000 : inst * size;  // arrays vs fixed size
    h.rows.push_back(NumberedRow{ClassNo{c * 3 + (c % 2)}, inst, bytes});
    h.total_instances += inst;
    h.total_bytes += bytes;
  }
  return h;
}

// Drifts a histogram: some rows change, some vanish, some new ones appear.
NumberedHistogram Drift(std::mt19937_64& rng, const NumberedHistogram& base) {
  NumberedHistogram next;
  for (const NumberedRow& r : base.rows) {
    int action = rng() % 10;
    if (action == 0) continue;  // vanished
    NumberedRow n = r;
    if (action < 4) {
      n.instances += rng() % 100;
      n.bytes = n.instances * 24;
    }
    if (action == 4) n.instances = n.instances > 5 ? n.instances - 5 : 0;
    next.rows.push_back(n);
  }
  for (int i = 0; i < 5; ++i) {
    uint32_t c = static_cast<uint32_t>(rng() % 20000);
    auto it = std::lower_bound(next.rows.begin(), next.rows.end(), ClassNo{c},
                               [](const NumberedRow& r, ClassNo x) { return r.cls < x; });
    if (it == next.rows.end() || it->cls.value != c)
      next.rows.insert(it, NumberedRow{ClassNo{c}, 1, 16});
  }
  next.total_instances = base.total_instances + 17;
  next.total_bytes = base.total_bytes - 3;  // totals may move either way
  return next;
}

StatusOr<NumberedHistogram> Decode(const std::string& value, const NumberedHistogram& base) {
  HW_ASSIGN_OR_RETURN(SnapshotValue sv, ParseSnapshotValue(value, "snapshots[test]"));
  NumberedHistogram h = base;
  DecodeScratch scratch;
  HW_RETURN_IF_ERROR(ApplySnapshotValue(sv, "snapshots[test]", &h, &scratch));
  return h;
}

class SnapshotValueTest : public ::testing::TestWithParam<bool> {
 protected:
  bool compress() const { return GetParam(); }
};
INSTANTIATE_TEST_SUITE_P(PlainAndDeflated, SnapshotValueTest, ::testing::Bool());

TEST_P(SnapshotValueTest, FullAndDeltaRoundTrip) {
  std::mt19937_64 rng(1);
  NumberedHistogram h = RandomHistogram(rng, 3000, 0.9);
  std::string full = EncodeFullSnapshot(h, compress());
  EXPECT_EQ(ParseSnapshotValue(full, "x")->compressed, compress());
  auto got = Decode(full, NumberedHistogram());
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(*got, h);
  for (int step = 1; step <= 50; ++step) {
    NumberedHistogram next = Drift(rng, h);
    std::string delta = EncodeDeltaSnapshot(h, next, 60'000'000, step, compress());
    auto sv = ParseSnapshotValue(delta, "x");
    ASSERT_TRUE(sv.ok());
    EXPECT_EQ(sv->kind, SnapshotKind::kDelta);
    if (!compress()) {
      EXPECT_FALSE(sv->compressed);  // (with compression on, random drift may not be worth it)
    }
    EXPECT_EQ(sv->base_gap_micros, 60'000'000);
    EXPECT_EQ(sv->depth, static_cast<uint32_t>(step));
    auto decoded = Decode(delta, h);
    ASSERT_TRUE(decoded.ok()) << decoded.status();
    ASSERT_EQ(*decoded, next) << "step " << step;
    h = next;
  }
}

TEST_P(SnapshotValueTest, DeltaOfUnchangedHistogramIsTiny) {
  std::mt19937_64 rng(2);
  NumberedHistogram h = RandomHistogram(rng, 3000, 1.0);
  std::string delta = EncodeDeltaSnapshot(h, h, 1, 1, compress());
  EXPECT_LT(delta.size(), 16u);  // crc, tag, gap, depth, two zero totals, two empty lists
  EXPECT_FALSE(ParseSnapshotValue(delta, "x")->compressed);  // not worth it
}

TEST(SnapshotValueDeflateTest, CompressesRepetitiveBodies) {
  std::mt19937_64 rng(5);
  NumberedHistogram h = RandomHistogram(rng, 3000, 1.0);
  EXPECT_LT(EncodeFullSnapshot(h, true).size(), EncodeFullSnapshot(h, false).size());
}

TEST(SnapshotValueDeflateTest, ImplausibleInflatedSizeIsDataLoss) {
  std::string payload;
  payload.push_back(static_cast<char>(SnapshotTag::kFullDeflate));
  PutVarint64(&payload, uint64_t{1} << 40);  // 1 TiB from a few bytes
  payload += "xyz";
  std::string v;
  PutFixed32BE(&v, Crc32(payload));
  v += payload;
  auto sv = ParseSnapshotValue(v, "snapshots[test]");
  ASSERT_TRUE(sv.ok());
  NumberedHistogram h;
  DecodeScratch scratch;
  Status st = ApplySnapshotValue(*sv, "snapshots[test]", &h, &scratch);
  EXPECT_EQ(st.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(st.message(), testing::HasSubstr("implausible inflated size"));
}

TEST(SnapshotValuePlainTest, FixedSizeClassesCostOneByteForBytes) {
  // Growth of a fixed-size class: the byte count is predicted from the base's bytes per instance.
  NumberedHistogram a, b;
  a.rows = {{ClassNo{5}, 1000, 24000}};
  b.rows = {{ClassNo{5}, 1100, 26400}};
  std::string delta = EncodeDeltaSnapshot(a, b, 1, 1, false);
  // crc(4) tag gap depth dti dtb removed_count changed_count (1 each) + class gap(1) + di(2) +
  // residual(1)
  EXPECT_EQ(delta.size(), 4u + 7u + 1u + 2u + 1u);
  auto got = Decode(delta, a);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(*got, b);
}

TEST_P(SnapshotValueTest, ExtremeCountsWrapCorrectly) {
  NumberedHistogram a, b;
  a.rows = {{ClassNo{0}, ~uint64_t{0}, 1}, {ClassNo{UINT32_MAX}, 0, ~uint64_t{0}}};
  b.rows = {{ClassNo{0}, 0, ~uint64_t{0}}, {ClassNo{UINT32_MAX}, ~uint64_t{0}, 0}};
  a.total_bytes = ~uint64_t{0};
  auto got = Decode(EncodeDeltaSnapshot(a, b, 1, 1, compress()), a);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(*got, b);
  auto full = Decode(EncodeFullSnapshot(b, compress()), NumberedHistogram());
  ASSERT_TRUE(full.ok());
  EXPECT_EQ(*full, b);
}

// Replaces the checksum so that the body itself reaches the decoder.
std::string Resealed(std::string_view payload) {
  std::string v;
  PutFixed32BE(&v, Crc32(payload));
  v.append(payload);
  return v;
}

TEST_P(SnapshotValueTest, EveryCorruptionIsDataLoss) {
  std::mt19937_64 rng(3);
  // Regular counts, so that both values are worth compressing when compression is on.
  NumberedHistogram base, next;
  for (uint32_t c = 0; c < 200; ++c) {
    base.rows.push_back({ClassNo{c}, 100 + c % 7, (100 + c % 7) * 24});
    if (c % 9 != 4) next.rows.push_back({ClassNo{c}, 101 + c % 7, (101 + c % 7) * 24});
  }
  for (const std::string& value :
       {EncodeFullSnapshot(base, compress()), EncodeDeltaSnapshot(base, next, 5, 1, compress())}) {
    ASSERT_EQ(ParseSnapshotValue(value, "x")->compressed, compress());
    // Any flipped byte: the checksum catches it.
    for (size_t i = 0; i < value.size(); i += 7) {
      std::string bad = value;
      bad[i] ^= 0x20;
      auto got = Decode(bad, base);
      ASSERT_FALSE(got.ok());
      EXPECT_EQ(got.status().code(), absl::StatusCode::kDataLoss);
      EXPECT_THAT(got.status().message(), testing::HasSubstr("snapshots[test]"));
    }
    // Every truncation, resealed: the parser catches it.
    std::string_view payload = std::string_view(value).substr(4);
    for (size_t n = 0; n < payload.size(); ++n) {
      auto got = Decode(Resealed(payload.substr(0, n)), base);
      ASSERT_FALSE(got.ok()) << n;
      EXPECT_EQ(got.status().code(), absl::StatusCode::kDataLoss) << got.status();
    }
    // Random garbage, resealed: never a crash, and DataLoss unless it happens to parse.
    for (int trial = 0; trial < 2000; ++trial) {
      std::string p(payload);
      for (int k = 0; k < 3; ++k) p[rng() % p.size()] = static_cast<char>(rng());
      auto got = Decode(Resealed(p), base);
      if (!got.ok()) {
        EXPECT_EQ(got.status().code(), absl::StatusCode::kDataLoss);
      }
    }
  }
}

TEST_P(SnapshotValueTest, UnknownTagAndBadDeltaAreDataLoss) {
  std::string p("\x07", 1);
  auto got = Decode(Resealed(p), NumberedHistogram());
  ASSERT_FALSE(got.ok());
  EXPECT_THAT(got.status().message(), testing::HasSubstr("unknown snapshot tag 7"));

  // A delta that removes class 9 from a base that lacks it.
  NumberedHistogram base;
  base.rows = {{ClassNo{9}, 1, 1}};
  base.rows.push_back({ClassNo{100}, 5, 5});  // enough rows for compression to apply
  for (uint32_t c = 200; c < 400; ++c) base.rows.push_back({ClassNo{c}, c, c});
  std::string delta = EncodeDeltaSnapshot(base, NumberedHistogram(), 1, 1, compress());
  got = Decode(delta, NumberedHistogram());
  ASSERT_FALSE(got.ok());
  EXPECT_THAT(got.status().message(), testing::HasSubstr("removes class 9"));
}

}  // namespace
}  // namespace heapwatch::storage::detail
