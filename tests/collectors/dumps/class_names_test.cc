#include "collectors/dumps/class_names.h"

#include "gtest/gtest.h"

namespace heapwatch::dumps {
namespace {

using analysis::FieldType;
using analysis::ObjectKind;

TEST(ClassNamesTest, HotSpotInternalNames) {
  EXPECT_EQ(ParseClassName("java/lang/String").source_name, "java.lang.String");
  EXPECT_EQ(ParseClassName("java/util/HashMap$Node").source_name, "java.util.HashMap$Node");
  EXPECT_EQ(ParseClassName("java/lang/String").kind, ObjectKind::kInstance);
}

TEST(ClassNamesTest, ArrayDescriptors) {
  ClassName b = ParseClassName("[B");
  EXPECT_EQ(b.source_name, "byte[]");
  EXPECT_EQ(b.kind, ObjectKind::kPrimitiveArray);
  EXPECT_EQ(b.element, FieldType::kByte);
  EXPECT_EQ(ParseClassName("[Z").element, FieldType::kBoolean);
  EXPECT_EQ(ParseClassName("[J").source_name, "long[]");
  ClassName ii = ParseClassName("[[I");
  EXPECT_EQ(ii.source_name, "int[][]");
  EXPECT_EQ(ii.kind, ObjectKind::kObjectArray);
  ClassName objs = ParseClassName("[[Ljava/lang/Object;");
  EXPECT_EQ(objs.source_name, "java.lang.Object[][]");
  EXPECT_EQ(objs.kind, ObjectKind::kObjectArray);
  // jmap -histo prints dots inside descriptors.
  EXPECT_EQ(ParseClassName("[Ljava.lang.String;").source_name, "java.lang.String[]");
}

TEST(ClassNamesTest, SourceFormNamesFromAndroidAndAgents) {
  ClassName ints = ParseClassName("int[]");
  EXPECT_EQ(ints.source_name, "int[]");
  EXPECT_EQ(ints.kind, ObjectKind::kPrimitiveArray);
  EXPECT_EQ(ints.element, FieldType::kInt);
  ClassName strings = ParseClassName("java.lang.String[]");
  EXPECT_EQ(strings.kind, ObjectKind::kObjectArray);
  EXPECT_EQ(ParseClassName("int[][]").kind, ObjectKind::kObjectArray);
  EXPECT_EQ(ParseClassName("java.lang.Object[][]").source_name, "java.lang.Object[][]");
}

TEST(ClassNamesTest, HiddenClassesGetTheirStableNames) {
  // common/stable_class_name.h: the run-specific counter and address go.
  EXPECT_EQ(ParseClassName("HprofDumpApp$$Lambda$14+0x0000000800c03000").source_name,
            "HprofDumpApp$$Lambda");
  EXPECT_EQ(ParseClassName("java/lang/invoke/LambdaForm$MH+0x00007fbb20002c68").source_name,
            "java.lang.invoke.LambdaForm$MH");
  EXPECT_EQ(ParseClassName("[Lcom/acme/Foo$$Lambda$3+0x0000000800c03000;").source_name,
            "com.acme.Foo$$Lambda[]");
  EXPECT_EQ(ParseClassName("jdk/proxy2/$Proxy17").source_name, "jdk.proxy.$Proxy");
}

}  // namespace
}  // namespace heapwatch::dumps
