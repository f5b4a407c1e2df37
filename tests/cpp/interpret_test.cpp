#include <gtest/gtest.h>

#include "aiter_compat/probe/probe.hpp"
#include "test_readings.hpp"

using namespace aiter_compat;
using namespace aiter_compat::testing_support;

TEST(InterpretOp, SinksFollowTheParameterList) {
  auto with = interpret_op("flash_attn_varlen_func",
                           present_op("aiter.ops.mha", {"q", "k", "v", "window_size", "sink_ptr"}, "(-1, -1, 0)"),
                           Channel::static_ast);
  EXPECT_EQ(with.sinks, Support::supported);
  EXPECT_EQ(with.window_arity, 3);
  EXPECT_EQ(with.q_scales, Support::unsupported);

  auto without = interpret_op("flash_attn_varlen_func", present_op("aiter.ops.mha", {"q", "k", "v", "window_size"}),
                              Channel::static_ast);
  EXPECT_EQ(without.sinks, Support::unsupported);
  EXPECT_NE(without.sinks_reason.find("TypeError"), std::string::npos);
  EXPECT_EQ(without.window_arity, 2);

  auto kwargs = interpret_op("flash_attn_varlen_func", present_op("aiter.ops.mha", {"q", "**kwargs"}), Channel::live_import);
  EXPECT_EQ(kwargs.sinks, Support::unknown);
  EXPECT_EQ(kwargs.read_by, "live");
}

TEST(InterpretOp, UnifiedAttentionUsesSinksAndQScales) {
  auto ua = interpret_op("unified_attention",
                         present_op("aiter.ops.triton.attention.unified_attention", {"q", "q_scales", "sinks"}),
                         Channel::static_ast);
  EXPECT_EQ(ua.sinks, Support::supported);
  EXPECT_EQ(ua.q_scales, Support::supported);
  EXPECT_FALSE(ua.window_arity);  // window_size has no default there
}

TEST(InterpretOp, PagedDecodeNeverTakesSinks) {
  auto pa = interpret_op("pa_fwd_asm", present_op("aiter.ops.attention", {"Q", "K", "V", "**kw"}), Channel::live_import);
  EXPECT_EQ(pa.sinks, Support::unsupported);
  EXPECT_NE(pa.sinks_reason.find("never"), std::string::npos);
}

TEST(InterpretOp, AbsentUnreadableAndBrokenAreDistinct) {
  auto absent = interpret_op("flash_attn_func", OpReading{}, Channel::static_ast);
  EXPECT_EQ(absent.sinks, Support::unsupported);
  OpReading broken;
  broken.errors.push_back({"aiter/ops/mha.py", "SyntaxError: invalid syntax (line 3)"});
  auto b = interpret_op("flash_attn_func", broken, Channel::static_ast);
  EXPECT_EQ(b.sinks, Support::unknown);
  EXPECT_NE(b.sinks_reason.find("SyntaxError"), std::string::npos);
  OpReading unreadable;
  unreadable.present = true;
  auto u = interpret_op("flash_attn_func", unreadable, Channel::static_ast);
  EXPECT_EQ(u.sinks, Support::unknown);
}

TEST(InterpretInstall, VersionSourcesAndTrust) {
  InstallReading r;
  r.found = true;
  r.metadata_version = "0.1.12+rocm7.2.manylinux_2_28";
  r.file_version = "0.1.12+rocm7.2.manylinux_2_28";
  auto a = interpret_install(r);
  EXPECT_EQ(a.version_source, "distribution metadata");
  EXPECT_TRUE(a.version_trusted);

  r.metadata_version.clear();
  r.file_version = "0.1.0";
  auto b = interpret_install(r);
  EXPECT_EQ(b.version_source, "aiter/_version.py");
  EXPECT_FALSE(b.version_trusted);
  EXPECT_NE(b.version_note.find("fallback"), std::string::npos);

  r.file_version.clear();
  auto c = interpret_install(r);
  EXPECT_EQ(c.version_source, "unknown");
  EXPECT_FALSE(c.version_trusted);

  r.metadata_version = "0.1.11";
  r.file_version = "0.1.9";
  auto d = interpret_install(r);
  EXPECT_FALSE(d.version_trusted);
  EXPECT_NE(d.version_note.find("0.1.9"), std::string::npos);

  r.copies = {"/a/aiter", "/b/aiter"};
  auto e = interpret_install(r);
  ASSERT_FALSE(e.errors.empty());
  EXPECT_NE(e.errors.back().error.find("/b/aiter"), std::string::npos);
}

// Defined and readable, but a package above its module fails to compile: importing it fails
// first, so nothing it takes can be relied on (the reason names the file and the error).
TEST(InterpretOp, AnEntryPointWhoseImportFailsServesNothing) {
  OpReading r = present_op("aiter.ops.triton.attention.unified_attention", {"q", "sinks"});
  const ProbeError e{"/site/aiter/__init__.py",
                     "SyntaxError: invalid syntax (line 9); importing aiter.ops.triton.attention.unified_attention "
                     "runs this file first"};
  r.import_error = e;
  r.errors.push_back(e);
  auto op = interpret_op("unified_attention", r, Channel::static_ast);
  EXPECT_TRUE(op.present);
  EXPECT_EQ(op.sinks, Support::unknown);
  EXPECT_EQ(op.q_scales, Support::unknown);
  EXPECT_EQ(op.sinks_reason, "cannot be imported: " + e.where + ": " + e.error);
  ASSERT_TRUE(op.import_error);
  EXPECT_EQ(op.import_error->where, e.where);
}
