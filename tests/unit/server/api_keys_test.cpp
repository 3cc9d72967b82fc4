#include "server/common/api_keys.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

namespace llmserve {
namespace {

TEST(ConstantTimeEquals, ComparesBytes) {
  EXPECT_TRUE(constant_time_equals("", ""));
  EXPECT_TRUE(constant_time_equals("sk-abc", "sk-abc"));
  EXPECT_FALSE(constant_time_equals("sk-abc", "sk-abd"));
  EXPECT_FALSE(constant_time_equals("sk-abc", "sk-ab"));
  EXPECT_FALSE(constant_time_equals("sk-ab", "sk-abc"));
  EXPECT_FALSE(constant_time_equals("", "x"));
  EXPECT_FALSE(constant_time_equals(std::string_view("a\0b", 3), std::string_view("a\0c", 3)));
  EXPECT_TRUE(constant_time_equals(std::string_view("a\0b", 3), std::string_view("a\0b", 3)));
}

TEST(ApiKeys, DisabledAcceptsAnything) {
  ApiKeys keys({});
  EXPECT_FALSE(keys.enabled());
  EXPECT_TRUE(keys.authorize(""));
  EXPECT_TRUE(keys.authorize("Bearer whatever"));
}

TEST(ApiKeys, BearerTokenMustMatchOneKey) {
  ApiKeys keys({"key-one", "key-two", ""});
  EXPECT_TRUE(keys.enabled());
  EXPECT_TRUE(keys.authorize("Bearer key-one"));
  EXPECT_TRUE(keys.authorize("Bearer key-two"));
  EXPECT_TRUE(keys.authorize("bearer key-two"));
  EXPECT_FALSE(keys.authorize("Bearer key-three"));
  EXPECT_FALSE(keys.authorize("Bearer "));
  EXPECT_FALSE(keys.authorize("Bearer"));
  EXPECT_FALSE(keys.authorize("key-one"));
  EXPECT_FALSE(keys.authorize("Basic key-one"));
  EXPECT_FALSE(keys.authorize("Bearer key-on"));
  EXPECT_FALSE(keys.authorize(""));
}

TEST(ApiKeys, KeyFileSkipsCommentsAndBlanks) {
  const std::string path = ::testing::TempDir() + "/llmserve_keys.txt";
  {
    std::ofstream out(path);
    out << "# keys\n\n  alpha  \nbeta # trailing comment\n";
  }
  bool ok = false;
  auto keys = read_api_key_file(path, &ok);
  EXPECT_TRUE(ok);
  ASSERT_EQ(keys.size(), 2u);
  EXPECT_EQ(keys[0], "alpha");
  EXPECT_EQ(keys[1], "beta");
  std::remove(path.c_str());
  read_api_key_file(path + ".missing", &ok);
  EXPECT_FALSE(ok);
}

}  // namespace
}  // namespace llmserve
