#include <gtest/gtest.h>

#include "aiter_compat/probe/version.hpp"

using aiter_compat::Version;
using aiter_compat::VersionSpec;

namespace {
Version v(const char* s) {
  auto parsed = Version::parse(s);
  EXPECT_TRUE(parsed) << s;
  return parsed.value_or(Version{});
}
}  // namespace

TEST(Version, ParsesAiterStyles) {
  EXPECT_EQ(v("0.1.12+rocm7.2.manylinux_2_28").release, (std::vector<int>{0, 1, 12}));
  EXPECT_EQ(v("0.1.12+rocm7.2.manylinux_2_28").local, "rocm7.2.manylinux_2_28");
  EXPECT_EQ(v("0.1.7.post2.dev18").post, 2);
  EXPECT_EQ(v("0.1.7.post2.dev18").dev, 18);
  EXPECT_EQ(v("v0.1.13-rc2").pre, 2);
  EXPECT_TRUE(v("main").is_main);
  EXPECT_FALSE(Version::parse("banana"));
  EXPECT_FALSE(Version::parse("0.1.x"));
  EXPECT_FALSE(Version::parse(""));
  EXPECT_FALSE(Version::parse("0.1.12junk"));
}

TEST(Version, OrdersAsPep440) {
  EXPECT_LT(v("0.1.9"), v("0.1.10"));
  EXPECT_LT(v("0.1.7.post2.dev18"), v("0.1.7.post2"));
  EXPECT_LT(v("0.1.7.post1"), v("0.1.7.post2.dev18"));
  EXPECT_LT(v("0.1.13.dev0"), v("0.1.13rc1"));
  EXPECT_LT(v("0.1.13rc5"), v("0.1.13"));
  EXPECT_LT(v("0.1.13"), v("0.1.13.post1"));
  EXPECT_LT(v("0.1.20.post1"), v("main"));
  EXPECT_EQ(v("0.1.12+rocm7.2"), v("0.1.12"));  // local labels do not order
  EXPECT_TRUE(v("0.1.12+rocm7.2").same_release(v("0.1.12")));
  EXPECT_FALSE(v("0.1.12.post1").same_release(v("0.1.12")));
}

TEST(VersionSpec, SelectsRanges) {
  auto spec = VersionSpec::parse(">=0.1.10,<0.1.18");
  ASSERT_TRUE(spec);
  EXPECT_FALSE(spec->contains(v("0.1.9.post1")));
  EXPECT_TRUE(spec->contains(v("0.1.10")));
  EXPECT_TRUE(spec->contains(v("0.1.17")));
  EXPECT_FALSE(spec->contains(v("0.1.18")));
  EXPECT_TRUE(VersionSpec::parse(">=0.1.10")->contains(v("main")));
  EXPECT_TRUE(VersionSpec::parse("")->contains(v("0.0.1")));
  std::string error;
  EXPECT_FALSE(VersionSpec::parse("0.1.10", &error));
  EXPECT_NE(error.find("no operator"), std::string::npos);
  EXPECT_FALSE(VersionSpec::parse(">=zz", &error));
}

// Release numbers of unequal length compare as if padded with zeros (PEP 440): 1.0 is 1.0.0, and
// 0.1.10 is older than 0.1.10.1. Every expectation here but one is packaging.version's (checked
// with it): two local labels of one release are equal here, where packaging orders them, on
// purpose: a wheel's build label (+rocm7.2.manylinux_2_28) is not a release of its own.
TEST(Version, UnequalLengthsAndLocalLabelsOrderAsPep440) {
  EXPECT_EQ(v("1.0"), v("1.0.0"));
  EXPECT_LT(v("1.0"), v("1.0.1"));
  EXPECT_LT(v("0.1.10"), v("0.1.10.1"));
  EXPECT_GT(v("0.1.10.1"), v("0.1.10.post5"));  // a fourth release number beats any .post
  EXPECT_LT(v("0.1.9.9.9"), v("0.1.10"));
  EXPECT_EQ(v("0.1.12+rocm7.2.manylinux_2_28"), v("0.1.12+rocm7.1"));
  EXPECT_LT(v("0.1.12+rocm7.2"), v("0.1.12.post1"));
  EXPECT_LT(v("0.1.12.dev3+rocm7.2"), v("0.1.12"));
  EXPECT_TRUE(VersionSpec::parse(">=0.1.10")->contains(v("0.1.10.0")));
  EXPECT_FALSE(VersionSpec::parse("<0.1.10")->contains(v("0.1.10.0")));
  EXPECT_TRUE(VersionSpec::parse("<0.1.10.1")->contains(v("0.1.10")));
  EXPECT_TRUE(VersionSpec::parse("==0.1.12")->contains(v("0.1.12+rocm7.2")));
}
