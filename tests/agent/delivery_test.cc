#include "agent/delivery.h"

#include "gtest/gtest.h"

namespace heapwatch::agent {
namespace {

HistogramDelivery Histo(std::vector<ClassHistogramRow> rows) {
  HistogramDelivery d;
  d.time = absl::FromUnixSeconds(1700000000);
  d.mode = v1::HISTOGRAM_MODE_ALL;
  for (const auto& r : rows) {
    d.histogram.total_instances += r.instances;
    d.histogram.total_bytes += r.bytes;
  }
  d.histogram.rows = std::move(rows);
  return d;
}

TEST(DeliveryBufferTest, SequencesAcksAndDropsOldest) {
  DeliveryBuffer buffer(3);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(buffer.Add(v1::LiveSet()), static_cast<uint64_t>(i + 1));
  EXPECT_EQ(buffer.size(), 3u);
  EXPECT_EQ(buffer.dropped(), 2u);
  ASSERT_NE(buffer.NextAfter(0), nullptr);
  EXPECT_EQ(buffer.NextAfter(0)->sequence, 3u);
  EXPECT_EQ(buffer.NextAfter(3)->sequence, 4u);
  EXPECT_EQ(buffer.NextAfter(5), nullptr);
  buffer.AckThrough(4);
  EXPECT_EQ(buffer.size(), 1u);
  EXPECT_EQ(buffer.NextAfter(0)->sequence, 5u);
  buffer.AckThrough(100);
  EXPECT_EQ(buffer.size(), 0u);
  EXPECT_EQ(buffer.next_sequence(), 6u);
}

TEST(StreamEncoderTest, DefinesEachClassOncePerStream) {
  DeliveryBuffer buffer(10);
  buffer.Add(Histo({{"byte[]", "java.base@17", 10, 400}, {"Foo", "", 2, 32}}));
  buffer.Add(Histo({{"Foo", "", 3, 48}, {"Bar$1", "", 1, 16}}));
  StreamEncoder encoder;
  v1::AgentMessage first = encoder.Encode(*buffer.NextAfter(0));
  v1::AgentMessage second = encoder.Encode(*buffer.NextAfter(1));
  ASSERT_TRUE(first.has_histogram());
  EXPECT_EQ(first.histogram().sequence(), 1u);
  EXPECT_EQ(first.histogram().new_classes_size(), 2);
  EXPECT_EQ(first.histogram().new_classes(0).class_name(), "byte[]");
  EXPECT_EQ(first.histogram().new_classes(0).module(), "java.base@17");
  EXPECT_EQ(first.histogram().class_refs_size(), 2);
  EXPECT_EQ(first.histogram().total_bytes(), 432u);
  // The second histogram only defines the class it adds, and reuses Foo's ref.
  ASSERT_EQ(second.histogram().new_classes_size(), 1);
  EXPECT_EQ(second.histogram().new_classes(0).class_name(), "Bar$1");
  EXPECT_EQ(second.histogram().class_refs(0), first.histogram().class_refs(1));
  EXPECT_EQ(second.histogram().instances(0), 3u);
  // A new stream starts a new dictionary.
  StreamEncoder fresh;
  EXPECT_EQ(fresh.Encode(*buffer.NextAfter(1)).histogram().new_classes_size(), 2);
}

TEST(StreamEncoderTest, LeavesOutNamesTheDaemonRefuses) {
  DeliveryBuffer buffer(10);
  buffer.Add(Histo({{"Good", "", 1, 16},
                    {"Bad\x01", "", 2, 32},
                    {std::string(5000, 'x'), "", 3, 48},
                    {"Bad\xc3", "", 4, 64}}));
  v1::AgentMessage m = StreamEncoder().Encode(*buffer.NextAfter(0));
  EXPECT_EQ(m.histogram().class_refs_size(), 1);
  EXPECT_EQ(m.histogram().total_instances(), 1u);
  EXPECT_EQ(m.histogram().total_bytes(), 16u);
}

TEST(StreamEncoderTest, AcceptableClassText) {
  EXPECT_TRUE(IsAcceptableClassText("java.util.HashMap$Node", false));
  EXPECT_TRUE(IsAcceptableClassText("caf\xc3\xa9", false));
  EXPECT_FALSE(IsAcceptableClassText("", false));
  EXPECT_TRUE(IsAcceptableClassText("", true));
  EXPECT_FALSE(IsAcceptableClassText("a\x7f", false));
  EXPECT_FALSE(IsAcceptableClassText("\xc0\x80", false));      // overlong
  EXPECT_FALSE(IsAcceptableClassText("\xed\xa0\x80", false));  // surrogate
  EXPECT_FALSE(IsAcceptableClassText("\xe2\x82", false));      // truncated
}

}  // namespace
}  // namespace heapwatch::agent
