// The tokens file parser (auth/tokens.h): the format, every error with its line number, hostile and
// random input (never a crash), SHA-256 against FIPS 180-4's test vectors, and matching.
#include "auth/tokens.h"

#include <fstream>
#include <random>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace heapwatch::auth {
namespace {

using ::testing::HasSubstr;

std::string HashOf(std::string_view secret) { return DigestHex(Sha256(secret)); }

std::string ToUpperHex(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

TEST(Sha256, MatchesFips180TestVectors) {
  // FIPS 180-4 / NIST CSRC examples: "abc" and the empty string.
  EXPECT_EQ(HashOf("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(HashOf(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(HashOf("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

TEST(Roles, AdminSatisfiesReadAgentOnlyAgent) {
  EXPECT_TRUE(RoleSatisfies(Role::kRead, Role::kRead));
  EXPECT_TRUE(RoleSatisfies(Role::kAdmin, Role::kRead));
  EXPECT_TRUE(RoleSatisfies(Role::kAdmin, Role::kAdmin));
  EXPECT_FALSE(RoleSatisfies(Role::kRead, Role::kAdmin));
  EXPECT_FALSE(RoleSatisfies(Role::kAgent, Role::kRead));
  EXPECT_FALSE(RoleSatisfies(Role::kAgent, Role::kAdmin));
  EXPECT_FALSE(RoleSatisfies(Role::kAdmin, Role::kAgent));
  EXPECT_FALSE(RoleSatisfies(Role::kRead, Role::kAgent));
  EXPECT_TRUE(RoleSatisfies(Role::kAgent, Role::kAgent));
  for (Role r : {Role::kAgent, Role::kRead, Role::kAdmin}) EXPECT_EQ(ParseRole(RoleName(r)), r);
  EXPECT_EQ(ParseRole("Admin"), std::nullopt);
}

TEST(TokenSet, ParsesCommentsBlanksTabsAndCrlf) {
  const std::string text =
      absl::StrCat("# heapwatch tokens\n\n   \t\n", "read   grafana\t", HashOf("s1"), "\r\n",
                   "  # indented comment\n", "admin ops@example.com ", ToUpperHex(HashOf("s2")),
                   "\n", "agent jvm-7.prod_1 ", HashOf("s3"));  // no final newline
  auto set = TokenSet::Parse(text, "t.txt");
  ASSERT_TRUE(set.ok()) << set.status();
  ASSERT_EQ(set->entries().size(), 3u);
  EXPECT_EQ(set->entries()[0].name, "grafana");
  EXPECT_EQ(set->entries()[0].role, Role::kRead);
  EXPECT_EQ(set->entries()[0].line, 4);
  EXPECT_EQ(set->entries()[1].role, Role::kAdmin);
  EXPECT_EQ(set->entries()[1].line, 6);
  EXPECT_EQ(set->entries()[2].name, "jvm-7.prod_1");

  const TokenEntry* e = set->Match("s2");
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->name, "ops@example.com");
  EXPECT_EQ(set->Match("s3")->role, Role::kAgent);
  EXPECT_EQ(set->Match("s4"), nullptr);
  EXPECT_EQ(set->Match(""), nullptr);
  EXPECT_EQ(set->Match(HashOf("s1")), nullptr);  // the hash is not the secret
}

// `openssl rand -hex 32 | tee secret | sha256sum` hashes the secret and the newline tee wrote; the
// client sends the secret without it.
TEST(TokenSet, MatchesTheHashOfTheSecretWithItsNewline) {
  auto set = TokenSet::Parse(absl::StrCat("read a ", HashOf("abc\n")), "t.txt");
  ASSERT_TRUE(set.ok()) << set.status();
  EXPECT_NE(set->Match("abc"), nullptr);
  EXPECT_EQ(set->Match("abc\n\n"), nullptr);
  EXPECT_EQ(set->Match("ab"), nullptr);
}

struct BadCase {
  std::string name;
  std::string text;
  std::string message;  // expected substring, including "t.txt:<line>:"
};

TEST(TokenSet, RejectsEveryMalformedLineWithItsNumber) {
  const std::string h1 = HashOf("one"), h2 = HashOf("two");
  const std::vector<BadCase> cases = {
      {"unknown role", "# c\nreader bob " + h1 + "\n", "t.txt:2: unknown role 'reader'"},
      {"upper-case role", "READ bob " + h1, "t.txt:1: unknown role 'READ'"},
      {"two fields", "read bob\n", "t.txt:1: expected 3 fields"},
      {"four fields", "read bob " + h1 + " # trailing comment", "t.txt:1: expected 3 fields"},
      {"short hash", "read bob " + h1.substr(1), "t.txt:1: the hash of 'bob' is not 64 hex"},
      {"non-hex hash", "read bob " + h1.substr(0, 63) + "g", "t.txt:1: the hash of 'bob' is not"},
      {"secret instead of hash", "read bob hunter2", "t.txt:1: the hash of 'bob' is not 64 hex"},
      {"duplicate name", "read bob " + h1 + "\nadmin bob " + h2,
       "t.txt:2: duplicate name 'bob' (first on line 1)"},
      {"duplicate secret", "read bob " + h1 + "\nadmin eve " + ToUpperHex(h1),
       "t.txt:2: 'eve' has the same secret as line 1"},
      {"bad name character", "read bo/b " + h1, "t.txt:1: name 'bo/b' has a character"},
      {"long name", "read " + std::string(65, 'n') + " " + h1, "t.txt:1: name is longer than 64"},
      {"long line", "read bob " + h1 + "\n# " + std::string(2000, 'x') + "\n",
       "t.txt:2: line is longer than 1024 bytes"},
      {"NUL byte", "read bob " + h1 + "\nread al" + std::string(1, '\0') + "ice " + h2,
       "t.txt:2: byte 0x00 at column 8 is not printable ASCII"},
      {"escape in comment", "# \x1b[31mred\n", "t.txt:1: byte 0x1b at column 3"},
      {"UTF-8 name",
       "read b\xc3\xb6"
       "b " +
           h1,
       "t.txt:1: byte 0xc3 at column 7"},
      {"lone CR inside", "read bob\r" + h1, "t.txt:1: byte 0x0d"},
      {"empty", "", "t.txt: tokens file holds no token"},
      {"only comments", "# a\n\n# b\n", "t.txt: tokens file holds no token"},
      {"too big", std::string(kMaxTokensFileBytes + 1, '\n'), "larger than 1048576 bytes"},
  };
  for (const BadCase& c : cases) {
    auto set = TokenSet::Parse(c.text, "t.txt");
    ASSERT_FALSE(set.ok()) << c.name;
    EXPECT_EQ(set.status().code(), absl::StatusCode::kInvalidArgument) << c.name;
    EXPECT_THAT(std::string(set.status().message()), HasSubstr(c.message)) << c.name;
    // Never quotes a hash field (it may be a secret pasted in the wrong place).
    EXPECT_THAT(std::string(set.status().message()), ::testing::Not(HasSubstr("hunter2")))
        << c.name;
  }
}

TEST(TokenSet, BoundsTheNumberOfTokens) {
  std::string text;
  for (size_t i = 0; i <= kMaxTokens; ++i) {
    absl::StrAppend(&text, "read n", i, " ", HashOf(absl::StrCat("secret", i)), "\n");
  }
  ASSERT_LE(text.size(), kMaxTokensFileBytes);
  auto set = TokenSet::Parse(text, "t.txt");
  ASSERT_FALSE(set.ok());
  EXPECT_THAT(std::string(set.status().message()),
              HasSubstr(absl::StrCat("t.txt:", kMaxTokens + 1, ": more than 10000 tokens")));
}

// Random bytes and random mutations of a valid file: Parse returns (ok or InvalidArgument), never
// crashes, and whatever it accepts holds only well-formed entries.
TEST(TokenSet, SurvivesRandomAndMutatedInput) {
  std::mt19937_64 rng(20261124);
  const std::string valid = absl::StrCat("read a ", HashOf("x"), "\nadmin b ", HashOf("y"), "\n");
  int accepted = 0;
  for (int iter = 0; iter < 20000; ++iter) {
    std::string text;
    if (iter % 2 == 0) {
      text.resize(rng() % 300);
      for (char& c : text) c = static_cast<char>(rng());
    } else {
      text = valid;
      for (int m = 0, n = 1 + rng() % 4; m < n; ++m) {
        size_t pos = rng() % (text.size() + 1);
        switch (rng() % 3) {
          case 0:
            text.insert(pos, 1, static_cast<char>(rng()));
            break;
          case 1:
            if (pos < text.size()) text.erase(pos, 1);
            break;
          default:
            if (pos < text.size()) text[pos] = static_cast<char>(rng());
        }
      }
    }
    auto set = TokenSet::Parse(text, "fuzz");
    if (!set.ok()) {
      EXPECT_EQ(set.status().code(), absl::StatusCode::kInvalidArgument);
      continue;
    }
    ++accepted;
    for (const TokenEntry& e : set->entries()) {
      EXPECT_FALSE(e.name.empty());
      EXPECT_LE(e.name.size(), kMaxTokenNameBytes);
    }
  }
  EXPECT_GT(accepted, 0);  // some mutations (e.g. in a hash digit's case) stay valid
}

TEST(TokenSet, LoadReportsUnreadableFiles) {
  auto missing = TokenSet::Load(::testing::TempDir() + "/no-such-tokens-file");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  auto dir = TokenSet::Load(::testing::TempDir());
  EXPECT_EQ(dir.status().code(), absl::StatusCode::kFailedPrecondition);
  const std::string path = ::testing::TempDir() + "/heapwatch-tokens-load.txt";
  {
    std::ofstream out(path);
    out << "admin root " << HashOf("topsecret") << "\n";
  }
  auto set = TokenSet::Load(path);
  ASSERT_TRUE(set.ok()) << set.status();
  EXPECT_EQ(set->Match("topsecret")->name, "root");
  {
    std::ofstream out(path);
    out << "admin root " << HashOf("topsecret") << "\nread\n";
  }
  auto bad = TokenSet::Load(path);
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr(path + ":2: expected 3 fields"));
}

}  // namespace
}  // namespace heapwatch::auth
