#pragma once
// One C API call as the dispatch core reads it (CallArgs): the fields of the op's argument
// struct placed by parameter of its signature. C callers own every output, so nothing is
// allocated here.
#include <dlpack/dlpack.h>

#include "aiter_call.hpp"
#include "aiter_compat.h"
#include "aiter_compat/shim/call_args.hpp"
#include "aiter_compat/shim/router.hpp"

namespace aiter_compat::capi {

struct CValue {
  enum Kind : uint8_t { absent, tensor, number, integer, flag, window } kind = absent;
  const DLTensor* t = nullptr;
  double d = 0;
  int64_t i = 0;
  bool b = false;
  WindowValue w;
};

class CCallArgs final : public CallArgs {
 public:
  CCallArgs(OpId op, void* stream);
  // The value of one parameter, by its name in the op's signature.
  void set(const char* param, CValue v);
  void tensor(const char* param, const DLTensor* t) { set(param, {CValue::tensor, t}); }
  void number(const char* param, double d) { set(param, {CValue::number, nullptr, d}); }
  void integer(const char* param, int64_t i) { set(param, {CValue::integer, nullptr, 0, i}); }
  void flag(const char* param, bool b) { set(param, {CValue::flag, nullptr, 0, 0, b}); }
  void window(const char* param, int64_t left, int64_t right) {
    set(param, {CValue::window, nullptr, 0, 0, false, WindowValue{2, left, right, 0}});
  }

  const OpSignature& signature() const override { return sig_; }
  bool given(int i) const override;
  bool neutral(int i) const override;
  TensorMeta meta(int i, bool batch_layout) const override;
  DType dtype(int i) const override;
  double number(int i) const override;
  int64_t integer(int i, int64_t otherwise) const override;
  bool flag(int i) const override;
  WindowValue window(int i) const override;
  TensorView view(int i) override;
  TensorView output(int like, const std::vector<int64_t>& shape, DType dtype, Role role) override;
  void* stream(int, const TensorView&) override { return stream_; }
  bool wants_lse() const override { return lse_ != nullptr && !lse_is_scratch_; }

  // The caller's LSE buffer (NULL: none asked for), and its out where the op's signature has no
  // parameter for it (flash_attn_func returns its output).
  void set_lse(const DLTensor* lse) { lse_ = lse; }
  // A buffer the fallback writes an LSE into for its own use (pa_decode_bf16_asm's split rows):
  // not an LSE the call asks for, so not a reason to keep the call from AITer.
  void set_scratch_lse(const DLTensor* lse) { lse_ = lse, lse_is_scratch_ = true; }
  void set_out(const DLTensor* out) { out_ = out; }
  const DLTensor* lse() const { return lse_; }

  // The keyword arguments of an AITer route, in the route's order.
  std::vector<KeywordArg> aiter_keywords(const Route& route) const;

 private:
  const OpSignature& sig_;
  void* stream_;
  CValue values_[kMaxParams];
  const DLTensor* lse_ = nullptr;
  bool lse_is_scratch_ = false;
  const DLTensor* out_ = nullptr;
};

// Each op's struct into a call; throws ArgumentError for a NULL struct or a missing required tensor.
CCallArgs call_of(const aiter_compat_varlen_args* a, void* stream);
CCallArgs call_of(const aiter_compat_batch_args* a, void* stream);
CCallArgs call_of(const aiter_compat_paged_args* a, void* stream);
CCallArgs call_of(const aiter_compat_decode_args* a, void* stream);
CCallArgs call_of(const aiter_compat_merge_args* a, void* stream);
CCallArgs call_of(const aiter_compat_batch_prefill_args* a, void* stream);
CCallArgs call_of(const aiter_compat_gluon_decode_args* a, void* stream);
CCallArgs call_of(const aiter_compat_asm_decode_args* a, void* stream);
CCallArgs call_of(const aiter_compat_fp8_pertensor_args* a, void* stream);
// AITer's Triton names over the structs of their CK namesakes.
CCallArgs triton_call_of(const aiter_compat_varlen_args* a, void* stream);
CCallArgs triton_call_of(const aiter_compat_batch_args* a, void* stream);

}  // namespace aiter_compat::capi
