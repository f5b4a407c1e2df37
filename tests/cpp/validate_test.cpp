// Every bad argument is named, with what was found and what is needed.
#include <gtest/gtest.h>

#include <functional>

#include "aiter_compat/shim/errors.hpp"
#include "aiter_compat/shim/validate.hpp"
#include "host_tensor.hpp"

using namespace aiter_compat;
using namespace aiter_compat::testing_support;

namespace {

struct VarlenFixture {
  HostTensor q{DType::bf16, {6, 8, 64}}, k{DType::bf16, {6, 2, 64}}, v{DType::bf16, {6, 2, 64}},
      out{DType::bf16, {6, 8, 64}}, lse{DType::f32, {8, 6}}, sinks{DType::f32, {8}};
  HostTensor cu = i32_tensor({0, 2, 6});
  VarlenArgs args() {
    VarlenArgs a;
    a.q = q.view, a.k = k.view, a.v = v.view, a.out = out.view, a.lse = lse.view, a.sinks = sinks.view;
    a.cu_seqlens_q = a.cu_seqlens_k = cu.view;
    a.max_seqlen_q = a.max_seqlen_k = 4;
    a.causal = true;
    return a;
  }
};

ArgumentError error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const ArgumentError& e) {
    return e;
  }
  return ArgumentError("(none)", "no error", "an error");
}

}  // namespace

TEST(Validate, AcceptsAGoodCall) {
  VarlenFixture f;
  EXPECT_NO_THROW(validate_varlen(f.args(), true));
}

TEST(Validate, NamesEachBadArgument) {
  struct Case {
    const char* what;
    std::function<void(VarlenFixture&, VarlenArgs&)> spoil;
    std::string argument, found_part, needed_part;
  };
  const std::vector<Case> cases = {
      {"int8 q", [](VarlenFixture&, VarlenArgs& a) { a.q.dtype = DType::i32; }, "q", "int32", "float16, bfloat16"},
      {"k of other dtype", [](VarlenFixture&, VarlenArgs& a) { a.k.dtype = DType::f16; }, "k", "float16", "bfloat16"},
      {"q 2-D", [](VarlenFixture&, VarlenArgs& a) { a.q.ndim = 2; }, "q", "2 dimensions", "3 dimensions"},
      {"head ratio", [](VarlenFixture&, VarlenArgs& a) { a.k.shape[1] = a.v.shape[1] = 3; }, "k", "3 heads", "divisor"},
      {"head dim", [](VarlenFixture&, VarlenArgs& a) { a.k.shape[2] = 32; }, "k", "[6, 2, 32]", "64"},
      {"stride", [](VarlenFixture&, VarlenArgs& a) { a.v.strides[2] = 2; }, "v", "stride 2", "1"},
      {"device", [](VarlenFixture&, VarlenArgs& a) { a.v.device = DeviceKind::cuda; }, "v", "cuda", "cpu"},
      {"int64 cu_seqlens", [](VarlenFixture&, VarlenArgs& a) { a.cu_seqlens_q.dtype = DType::i64; }, "cu_seqlens_q",
       "int64", "int32"},
      {"non-monotonic", [](VarlenFixture& f, VarlenArgs&) { f.cu.set(1, 5); f.cu.set(2, 3); }, "cu_seqlens_q",
       "entry 2 = 3 after 5", "non-decreasing"},
      {"beyond the tokens", [](VarlenFixture& f, VarlenArgs&) { f.cu.set(2, 9); }, "cu_seqlens_q", "last entry 9",
       "at most 6"},
      {"max_seqlen too small", [](VarlenFixture&, VarlenArgs& a) { a.max_seqlen_q = 2; }, "max_seqlen_q", "2",
       "at least 4"},
      {"NaN sink", [](VarlenFixture& f, VarlenArgs&) { f.sinks.set(3, NAN); }, "sinks", "NaN at head 3", "finite"},
      {"+inf sink", [](VarlenFixture& f, VarlenArgs&) { f.sinks.set(0, INFINITY); }, "sinks", "+inf", "-inf for no sink"},
      {"sinks length", [](VarlenFixture&, VarlenArgs& a) { a.sinks.shape[0] = 4; }, "sinks", "[4]", "size 8"},
      {"fp8 sinks", [](VarlenFixture&, VarlenArgs& a) { a.sinks.dtype = DType::f8_e4m3fn; }, "sinks", "float8_e4m3fn",
       "float32, bfloat16 or float16"},
      {"integer sinks", [](VarlenFixture&, VarlenArgs& a) { a.sinks.dtype = DType::i32; }, "sinks", "int32", "float32"},
      {"unknown sinks dtype",
       [](VarlenFixture&, VarlenArgs& a) { a.sinks.dtype = DType::unsupported, a.sinks.raw_dtype = {99, 8, 1}; },
       "sinks", "DLPack type code 99 of 8 bits", "float32"},
      {"out aliasing q", [](VarlenFixture&, VarlenArgs& a) { a.out.data = a.q.data; }, "out", "overlapping q", "its own"},
      {"out shape", [](VarlenFixture&, VarlenArgs& a) { a.out.shape[1] = 4; }, "out", "[6, 4, 64]", "size 8"},
      {"lse dtype", [](VarlenFixture&, VarlenArgs& a) { a.lse.dtype = DType::bf16; }, "lse", "bfloat16", "float32"},
      {"dropout", [](VarlenFixture&, VarlenArgs& a) { a.dropout_p = 1.5; }, "dropout_p", "1.5", "0 <= p < 1"},
      {"window", [](VarlenFixture&, VarlenArgs& a) { a.window.left = -7; }, "window_size[0]", "-7", "-1"},
      {"scale", [](VarlenFixture&, VarlenArgs& a) { a.softmax_scale = NAN; }, "softmax_scale", "nan", "finite"},
  };
  for (const auto& c : cases) {
    VarlenFixture f;
    VarlenArgs a = f.args();
    c.spoil(f, a);
    ArgumentError e = error_of([&] { validate_varlen(a, true); });
    EXPECT_EQ(e.argument, c.argument) << c.what << ": " << e.what();
    EXPECT_NE(e.found.find(c.found_part), std::string::npos) << c.what << ": " << e.what();
    EXPECT_NE(e.needed.find(c.needed_part), std::string::npos) << c.what << ": " << e.what();
  }
}

// GPT-OSS keeps its sinks in bfloat16: 16-bit sinks are taken, and their contents checked in
// their own dtype.
TEST(Validate, SixteenBitSinksAreTakenAndTheirContentsChecked) {
  for (DType t : {DType::bf16, DType::f16}) {
    VarlenFixture f;
    f.sinks = HostTensor(t, {8});
    for (int h = 0; h < 8; ++h) f.sinks.set(h, 0.5 * h - 2);
    EXPECT_NO_THROW(validate_varlen(f.args(), true)) << to_string(t);
    f.sinks.set(5, NAN);
    ArgumentError e = error_of([&] { validate_varlen(f.args(), true); });
    EXPECT_EQ(e.argument, "sinks") << to_string(t);
    EXPECT_EQ(e.found, "NaN at head 5") << to_string(t);
    f.sinks.set(5, INFINITY);
    EXPECT_EQ(error_of([&] { validate_varlen(f.args(), true); }).found, "+inf at head 5") << to_string(t);
  }
}

TEST(Validate, PagedBlockTableAndLengths) {
  HostTensor q(DType::f16, {3, 4, 16}), kc(DType::f16, {5, 16, 2, 16}), vc(DType::f16, {5, 16, 2, 16});
  HostTensor cu = i32_tensor({0, 1, 3}), used = i32_tensor({20, 2}), bt = i32_tensor({0, 4, 1, 0}, {2, 2});
  auto args = [&] {
    PagedArgs p;
    p.q = q.view, p.k_cache = kc.view, p.v_cache = vc.view, p.cu_seqlens_q = cu.view, p.seqused_k = used.view;
    p.block_table = bt.view, p.max_seqlen_q = 2, p.max_seqlen_k = 20;
    return p;
  };
  EXPECT_NO_THROW(validate_paged(args(), true));
  bt.set(1, 5);
  ArgumentError e = error_of([&] { validate_paged(args(), true); });
  EXPECT_EQ(e.argument, "block_table[0, 1]");
  EXPECT_EQ(e.needed, "a block index in [0, 5)");
  bt.set(1, 4);
  used.set(0, 40);
  e = error_of([&] { validate_paged(args(), true); });
  EXPECT_EQ(e.argument, "seqused_k[0]");
  EXPECT_NE(e.needed.find("at most 32"), std::string::npos);
  used.set(0, 20);
  used.set(1, 1);
  e = error_of([&] { validate_paged(args(), true); });
  EXPECT_EQ(e.argument, "seqused_k[1]");
  EXPECT_NE(e.needed.find("2 new query tokens"), std::string::npos);
}
