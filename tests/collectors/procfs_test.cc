#include "collectors/procfs.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

namespace heapwatch::collectors::procfs {
namespace {

// Shape of /proc/<pid>/status of a JVM in a container (trimmed), as printed by Linux 6.x.
constexpr char kStatus[] =
    "Name:\tjava\n"
    "Umask:\t0022\n"
    "State:\tS (sleeping)\n"
    "Tgid:\t4242\n"
    "Pid:\t4242\n"
    "Uid:\t1000\t1001\t1001\t1001\n"
    "Gid:\t2000\t2001\t2001\t2001\n"
    "NSpid:\t4242\t17\t1\n"
    "SigBlk:\t0000000000000000\n"
    "SigIgn:\t0000000000000002\n"
    "SigCgt:\t0000000101005ccd\n";

TEST(ProcfsTest, ParsesStatus) {
  auto st = ParseProcStatus(kStatus, 99);
  ASSERT_TRUE(st.ok()) << st.status();
  EXPECT_EQ(st->euid, 1001u);
  EXPECT_EQ(st->egid, 2001u);
  EXPECT_EQ(st->ns_pids, (std::vector<int64_t>{4242, 17, 1}));
  EXPECT_EQ(st->innermost_pid(), 1);
  EXPECT_TRUE(st->catches(SIGQUIT));  // bit 2 of 0x...5ccd
  EXPECT_TRUE(st->catches(SIGHUP));
  EXPECT_FALSE(st->catches(SIGINT));  // caught? no: bit 1 is clear in SigCgt, set in SigIgn
  EXPECT_FALSE(st->catches(SIGKILL));
  EXPECT_FALSE(st->catches(0));
  EXPECT_FALSE(st->catches(65));
}

TEST(ProcfsTest, QuitCaughtButIgnoredDoesNotCount) {
  std::string text = kStatus;
  text.replace(text.find("SigIgn:\t0000000000000002"), 24, "SigIgn:\t0000000000000004");
  auto st = ParseProcStatus(text, 1);
  ASSERT_TRUE(st.ok());
  EXPECT_FALSE(st->catches(SIGQUIT));
}

TEST(ProcfsTest, MissingNsPidFallsBack) {
  auto st = ParseProcStatus("Uid:\t0\t0\t0\t0\nGid:\t0\t0\t0\t0\nSigCgt:\t0\n", 77);
  ASSERT_TRUE(st.ok()) << st.status();
  EXPECT_EQ(st->ns_pids, (std::vector<int64_t>{77}));
  EXPECT_FALSE(st->catches(SIGQUIT));
}

TEST(ProcfsTest, MalformedStatus) {
  EXPECT_EQ(ParseProcStatus("", 1).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_FALSE(ParseProcStatus("Uid:\tx\nGid:\t0 0\nSigCgt:\t0\n", 1).ok());
  EXPECT_FALSE(ParseProcStatus("Uid:\t0 0\nGid:\t0 0\nSigCgt:\tzz\n", 1).ok());
  EXPECT_FALSE(ParseProcStatus("Uid:\t0 0\nGid:\t0 0\nSigCgt:\t0\nNSpid:\t1 x\n", 1).ok());
  EXPECT_FALSE(ParseProcStatus("Uid:\t0 0\nGid:\t0 0\n", 1).ok());
}

TEST(ProcfsTest, StartTicksWithHostileCommandName) {
  // comm may hold spaces and ')' : parse from the last ')'.
  const std::string stat =
      "4242 (my (evil) java) S 1 4242 4242 0 -1 4194560 100 0 0 0 5 3 0 0 20 0 30 0 "
      "123456789 4096 100 18446744073709551615 1 1 0 0 0 0 0 4096 17575 0 0 0 17 1 0 0\n";
  auto ticks = ParseStartTicks(stat);
  ASSERT_TRUE(ticks.ok()) << ticks.status();
  EXPECT_EQ(*ticks, 123456789u);
  EXPECT_FALSE(ParseStartTicks("4242 (java S 1 2 3").ok());
  EXPECT_FALSE(ParseStartTicks("4242 (java) S 1 2 3\n").ok());
}

TEST(ProcfsTest, OwnProcess) {
  auto st = ReadProcStatus("/proc", ::getpid());
  ASSERT_TRUE(st.ok()) << st.status();
  EXPECT_EQ(st->euid, ::geteuid());
  auto a = ReadStartTicks("/proc", ::getpid());
  auto b = ReadStartTicks("/proc", ::getpid());
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(*a, *b);
  EXPECT_EQ(ReadProcStatus("/proc", 999999999).status().code(), absl::StatusCode::kUnavailable);
}

TEST(ProcfsTest, MapsMatchDeviceAndInode) {
  const std::string maps =
      "55d0c0a00000-55d0c0a01000 r--p 00000000 fe:00 1234                       /usr/bin/java\n"
      "7fc4061f7000-7fc4061ff000 rw-s 00000000 fe:00 10960898                   "
      "/tmp/hsperfdata_root/7581\n"
      "7fc406200000-7fc406201000 rw-p 00000000 00:00 0 \n";
  EXPECT_TRUE(MapsContainFile(maps, 0xfe, 0, 10960898));
  EXPECT_FALSE(MapsContainFile(maps, 0xfe, 1, 10960898));  // same inode, other device
  EXPECT_FALSE(MapsContainFile(maps, 0xfe, 0, 1096089));
  EXPECT_FALSE(MapsContainFile("", 0xfe, 0, 1));
  EXPECT_FALSE(MapsContainFile("garbage\n\n x y z w v", 0, 0, 0));
}

}  // namespace
}  // namespace heapwatch::collectors::procfs
