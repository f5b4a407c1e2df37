#include "c_call_args.hpp"

#include <cmath>
#include <stdexcept>

#include "aiter_compat/shim/errors.hpp"

namespace aiter_compat::capi {
namespace {

[[noreturn]] void bad(const std::string& arg, const std::string& found, const std::string& needed) {
  throw ArgumentError(arg, found, needed);
}

void need(const char* name, const void* p) {
  if (!p) bad(name, "NULL", "a tensor");
}

template <typename T>
void need_struct(const T* a, const char* type) {
  if (!a) bad("args", "NULL", std::string("a pointer to ") + type);
}

}  // namespace

CCallArgs::CCallArgs(OpId op, void* stream) : sig_(aiter_compat::signature(op)), stream_(stream) {}

void CCallArgs::set(const char* param, CValue v) {
  const int i = sig_.index_of(param);
  if (i < 0) throw std::logic_error(std::string("the C API sets ") + param + ", which " + sig_.name + " lacks");
  values_[i] = v;
}

bool CCallArgs::given(int i) const { return i >= 0 && values_[i].kind != CValue::absent && !(values_[i].kind == CValue::tensor && !values_[i].t); }

bool CCallArgs::neutral(int i) const {
  if (i < 0 || !given(i)) return true;
  const CValue& v = values_[i];
  switch (sig_.params[static_cast<size_t>(i)].default_kind) {
    case DefaultKind::value: return false;
    case DefaultKind::none: return v.kind == CValue::tensor ? v.t == nullptr : false;
    case DefaultKind::false_: return v.kind == CValue::flag ? !v.b : v.kind == CValue::integer && v.i == 0;
    case DefaultKind::zero: return v.kind == CValue::number ? v.d == 0.0 : v.kind == CValue::integer && v.i == 0;
    case DefaultKind::window: return v.w.left < 0 && v.w.right < 0 && v.w.sink_size == 0;
    case DefaultKind::other: return false;
  }
  return false;
}

TensorMeta CCallArgs::meta(int i, bool batch_layout) const {
  const std::string& name = sig_.params[static_cast<size_t>(i)].name;
  if (!given(i)) bad(name, "NULL", "a tensor");
  TensorView v;
  std::string why;
  if (!view_from_dltensor(*values_[i].t, &v, &why)) bad(name, why, "a tensor of up to 8 dimensions");
  TensorMeta m;
  m.dtype = v.dtype;
  m.device = v.device;
  m.device_id = v.device_id;
  m.ndim = v.ndim;
  for (int d = 0; d < v.ndim; ++d) m.shape[d] = v.shape[d];
  if (batch_layout && v.ndim >= 2 && v.shape[0] > 1) m.batch_contiguous = v.strides[0] == v.shape[1] * v.strides[1];
  return m;
}

DType CCallArgs::dtype(int i) const { return meta(i, false).dtype; }

double CCallArgs::number(int i) const {
  if (i < 0) return 0.0;
  const CValue& v = values_[i];
  return v.kind == CValue::number ? v.d : v.kind == CValue::integer ? static_cast<double>(v.i) : 0.0;
}

int64_t CCallArgs::integer(int i, int64_t otherwise) const {
  if (i < 0 || values_[i].kind == CValue::absent) return otherwise;
  return values_[i].kind == CValue::integer ? values_[i].i : static_cast<int64_t>(values_[i].d);
}

bool CCallArgs::flag(int i) const { return i >= 0 && values_[i].kind == CValue::flag && values_[i].b; }

WindowValue CCallArgs::window(int i) const {
  return i >= 0 && values_[i].kind == CValue::window ? values_[i].w : WindowValue{};
}

TensorView CCallArgs::view(int i) {
  if (!given(i)) return {};
  TensorView v;
  std::string why;
  if (!view_from_dltensor(*values_[i].t, &v, &why))
    bad(sig_.params[static_cast<size_t>(i)].name, why, "a tensor of up to 8 dimensions");
  return v;
}

TensorView CCallArgs::output(int, const std::vector<int64_t>& shape, DType, Role role) {
  // Every C struct requires `out`, and an LSE is computed only where the caller gave one (or, as
  // pa_decode_bf16_asm's split rows, needs one: then it names the scratch it needs).
  const DLTensor* t = role == Role::return_lse ? lse_ : out_;
  if (!t && role == Role::return_lse) {
    std::string dims;
    for (int64_t d : shape) dims += (dims.empty() ? "" : ", ") + std::to_string(d);
    bad("lse", "NULL", "a float32 [" + dims + "] buffer for this call's LSE (the C API allocates nothing)");
  }
  if (!t) throw std::logic_error("the C API has no memory of its own for an output");
  TensorView v;
  std::string why;
  if (!view_from_dltensor(*t, &v, &why)) bad(role == Role::return_lse ? "lse" : "out", why, "a tensor of up to 8 dimensions");
  return v;
}

std::vector<KeywordArg> CCallArgs::aiter_keywords(const Route& route) const {
  std::vector<KeywordArg> out;
  for (size_t k = 0; k < route.aiter_params.size(); ++k) {
    const int i = route.aiter_params[k];
    const CValue& v = values_[i];
    const std::string& name = sig_.params[static_cast<size_t>(i)].name;
    switch (v.kind) {
      case CValue::tensor:
      case CValue::absent: out.push_back({name, v.t}); break;
      case CValue::number: out.push_back({name, v.d}); break;
      case CValue::integer: out.push_back({name, v.i}); break;
      case CValue::flag: out.push_back({name, v.b}); break;
      case CValue::window: {
        const int arity = static_cast<int>(k) == route.window_param ? route.window_arity : v.w.arity;
        out.push_back({name, Window2{v.w.left, v.w.right, v.w.sink_size, arity}});
        break;
      }
    }
  }
  return out;
}

namespace {

// The varlen and batch structs' fields, for CK's names and Triton's (whose sink is `sink`, and
// whose varlen function has no soft cap).
CCallArgs varlen_call(OpId op, const aiter_compat_varlen_args* a, void* stream, const char* sink, bool softcap) {
  need_struct(a, "aiter_compat_varlen_args");
  need("q", a->q), need("k", a->k), need("v", a->v), need("out", a->out);
  need("cu_seqlens_q", a->cu_seqlens_q), need("cu_seqlens_k", a->cu_seqlens_k);
  if (!softcap && a->softcap != 0)
    bad("softcap", std::to_string(a->softcap), "0: AITer's Triton flash_attn_varlen_func has no soft cap");
  CCallArgs c(op, stream);
  c.tensor("q", a->q), c.tensor("k", a->k), c.tensor("v", a->v);
  c.tensor("cu_seqlens_q", a->cu_seqlens_q), c.tensor("cu_seqlens_k", a->cu_seqlens_k);
  c.integer("max_seqlen_q", a->max_seqlen_q), c.integer("max_seqlen_k", a->max_seqlen_k);
  if (a->softmax_scale != 0) c.number("softmax_scale", a->softmax_scale);
  if (softcap) c.number("logits_soft_cap", a->softcap);
  c.flag("causal", a->causal != 0);
  c.window("window_size", a->window_left, a->window_right);
  c.flag("return_lse", a->lse != nullptr);
  c.set_lse(a->lse);
  c.tensor("out", a->out), c.tensor(sink, a->sinks);
  return c;
}

CCallArgs batch_call(OpId op, const aiter_compat_batch_args* a, void* stream, const char* sink) {
  need_struct(a, "aiter_compat_batch_args");
  need("q", a->q), need("k", a->k), need("v", a->v), need("out", a->out);
  CCallArgs c(op, stream);
  c.tensor("q", a->q), c.tensor("k", a->k), c.tensor("v", a->v);
  if (a->softmax_scale != 0) c.number("softmax_scale", a->softmax_scale);
  c.flag("causal", a->causal != 0);
  c.window("window_size", a->window_left, a->window_right);
  c.flag("return_lse", a->lse != nullptr);
  c.set_lse(a->lse);
  c.tensor(sink, a->sinks);
  c.set_out(a->out);
  return c;
}

}  // namespace

CCallArgs call_of(const aiter_compat_varlen_args* a, void* stream) {
  return varlen_call(OpId::flash_attn_varlen_func, a, stream, "sink_ptr", true);
}
CCallArgs call_of(const aiter_compat_batch_args* a, void* stream) {
  return batch_call(OpId::flash_attn_func, a, stream, "sink_ptr");
}
CCallArgs triton_call_of(const aiter_compat_varlen_args* a, void* stream) {
  return varlen_call(OpId::triton_flash_attn_varlen_func, a, stream, "sink", false);
}
CCallArgs triton_call_of(const aiter_compat_batch_args* a, void* stream) {
  return batch_call(OpId::triton_flash_attn_func, a, stream, "sink");
}

CCallArgs call_of(const aiter_compat_paged_args* a, void* stream) {
  need_struct(a, "aiter_compat_paged_args");
  need("q", a->q), need("k_cache", a->k_cache), need("v_cache", a->v_cache), need("out", a->out);
  need("cu_seqlens_q", a->cu_seqlens_q), need("seqused_k", a->seqused_k), need("block_table", a->block_table);
  CCallArgs c(OpId::unified_attention, stream);
  c.tensor("q", a->q), c.tensor("k", a->k_cache), c.tensor("v", a->v_cache), c.tensor("out", a->out);
  c.tensor("cu_seqlens_q", a->cu_seqlens_q), c.integer("max_seqlen_q", a->max_seqlen_q);
  c.tensor("seqused_k", a->seqused_k), c.integer("max_seqlen_k", a->max_seqlen_k);
  // unified_attention takes the scale as a required float: 0 becomes 1/sqrt(D) here.
  const double d = a->q->ndim > 0 && a->q->shape ? static_cast<double>(a->q->shape[a->q->ndim - 1]) : 1.0;
  c.number("softmax_scale", a->softmax_scale != 0 ? a->softmax_scale : 1.0 / std::sqrt(d > 0 ? d : 1.0));
  c.flag("causal", a->causal != 0);
  c.window("window_size", a->window_left, a->window_right);
  c.tensor("block_table", a->block_table);
  c.number("softcap", a->softcap);
  c.tensor("q_descale", a->q_descale), c.tensor("k_descale", a->k_descale), c.tensor("v_descale", a->v_descale);
  c.tensor("output_scale", a->output_scale);
  c.tensor("sinks", a->sinks);
  c.flag("shuffled_kv_cache", a->shuffled_kv_cache != 0);
  c.set_lse(a->lse);  // the fallbacks only: AITer's unified_attention returns no LSE
  return c;
}

CCallArgs call_of(const aiter_compat_decode_args* a, void* stream) {
  need_struct(a, "aiter_compat_decode_args");
  need("q", a->q), need("k_cache", a->k_cache), need("v_cache", a->v_cache), need("out", a->out);
  need("seqused_k", a->seqused_k), need("block_table", a->block_table);
  CCallArgs c(OpId::paged_attention_decode, stream);
  c.tensor("q", a->q), c.tensor("k_cache", a->k_cache), c.tensor("v_cache", a->v_cache);
  c.tensor("block_table", a->block_table), c.tensor("seqused_k", a->seqused_k);
  if (a->softmax_scale != 0) c.number("softmax_scale", a->softmax_scale);
  c.window("window_size", a->window_left, a->window_right);
  c.tensor("sinks", a->sinks), c.tensor("out", a->out);
  c.flag("return_lse", a->lse != nullptr);
  c.set_lse(a->lse);
  c.tensor("cu_seqlens_q", a->cu_seqlens_q);
  c.tensor("q_descale", a->q_descale), c.tensor("k_descale", a->k_descale), c.tensor("v_descale", a->v_descale);
  c.tensor("output_scale", a->output_scale);
  return c;
}

CCallArgs call_of(const aiter_compat_merge_args* a, void* stream) {
  need_struct(a, "aiter_compat_merge_args");
  need("output", a->output), need("prefix_output", a->prefix_output), need("prefix_lse", a->prefix_lse);
  need("suffix_output", a->suffix_output), need("suffix_lse", a->suffix_lse);
  CCallArgs c(OpId::merge_attn_states, stream);
  c.tensor("output", a->output), c.tensor("prefix_output", a->prefix_output), c.tensor("prefix_lse", a->prefix_lse);
  c.tensor("suffix_output", a->suffix_output), c.tensor("suffix_lse", a->suffix_lse);
  c.tensor("output_lse", a->output_lse), c.tensor("sinks", a->sinks);
  return c;
}

CCallArgs call_of(const aiter_compat_batch_prefill_args* a, void* stream) {
  need_struct(a, "aiter_compat_batch_prefill_args");
  need("q", a->q), need("k", a->k), need("v", a->v), need("out", a->out), need("cu_seqlens_q", a->cu_seqlens_q);
  need("kv_indptr", a->kv_indptr), need("kv_page_indices", a->kv_page_indices);
  CCallArgs c(OpId::mha_batch_prefill_func, stream);
  c.tensor("q", a->q), c.tensor("k", a->k), c.tensor("v", a->v), c.tensor("cu_seqlens_q", a->cu_seqlens_q);
  c.tensor("kv_indptr", a->kv_indptr), c.tensor("kv_page_indices", a->kv_page_indices);
  c.integer("max_seqlen_q", a->max_seqlen_q), c.integer("max_seqlen_k", a->max_seqlen_k);
  if (a->softmax_scale != 0) c.number("softmax_scale", a->softmax_scale);
  c.number("logits_soft_cap", a->softcap);
  c.flag("causal", a->causal != 0);
  c.window("window_size", a->window_left, a->window_right);
  c.flag("return_lse", a->lse != nullptr);
  c.set_lse(a->lse);
  c.tensor("out", a->out);
  c.tensor("kv_last_page_lens", a->kv_last_page_lens), c.tensor("block_table", a->block_table);
  c.tensor("seqlen_k", a->seqlen_k);
  c.tensor("q_descale", a->q_descale), c.tensor("k_descale", a->k_descale), c.tensor("v_descale", a->v_descale);
  c.tensor("sink_ptr", a->sinks);
  return c;
}

CCallArgs call_of(const aiter_compat_fp8_pertensor_args* a, void* stream) {
  need_struct(a, "aiter_compat_fp8_pertensor_args");
  need("q", a->q), need("k", a->k), need("v", a->v), need("out", a->out);
  need("q_descale", a->q_descale), need("k_descale", a->k_descale), need("v_descale", a->v_descale);
  const bool varlen = a->cu_seqlens_q != nullptr;
  if (varlen) need("cu_seqlens_k", a->cu_seqlens_k);
  CCallArgs c(varlen ? OpId::flash_attn_varlen_fp8_pertensor_func : OpId::flash_attn_fp8_pertensor_func, stream);
  c.tensor("q", a->q), c.tensor("k", a->k), c.tensor("v", a->v);
  c.tensor("q_descale", a->q_descale), c.tensor("k_descale", a->k_descale), c.tensor("v_descale", a->v_descale);
  if (varlen) {
    c.tensor("cu_seqlens_q", a->cu_seqlens_q), c.tensor("cu_seqlens_k", a->cu_seqlens_k);
    c.integer("max_seqlen_q", a->max_seqlen_q), c.integer("max_seqlen_k", a->max_seqlen_k);
  }
  if (a->softmax_scale != 0) c.number("softmax_scale", a->softmax_scale);
  c.flag("causal", a->causal != 0);
  c.window("window_size", a->window_left, a->window_right);
  c.tensor("sink_ptr", a->sinks);
  c.set_out(a->out);
  return c;
}

CCallArgs call_of(const aiter_compat_gluon_decode_args* a, void* stream) {
  need_struct(a, "aiter_compat_gluon_decode_args");
  need("output", a->output), need("query", a->query), need("key_cache", a->key_cache);
  need("value_cache", a->value_cache), need("context_lengths", a->context_lengths), need("block_tables", a->block_tables);
  CCallArgs c(OpId::pa_decode_gluon, stream);
  c.tensor("output", a->output), c.tensor("query", a->query), c.tensor("key_cache", a->key_cache);
  c.tensor("value_cache", a->value_cache), c.tensor("context_lengths", a->context_lengths);
  c.tensor("block_tables", a->block_tables);
  // AITer takes the scale as a required float: 0 becomes 1/sqrt(D) here.
  const double d = a->query->ndim > 0 && a->query->shape ? static_cast<double>(a->query->shape[a->query->ndim - 1]) : 1.0;
  c.number("softmax_scale", a->softmax_scale != 0 ? a->softmax_scale : 1.0 / std::sqrt(d > 0 ? d : 1.0));
  c.integer("query_length", a->query_length), c.integer("max_context_partition_num", a->max_context_partition_num);
  if (a->context_partition_size != 0) c.integer("context_partition_size", a->context_partition_size);
  c.tensor("query_scale", a->query_scale), c.tensor("key_scale", a->key_scale), c.tensor("value_scale", a->value_scale);
  c.tensor("exp_sums", a->exp_sums), c.tensor("max_logits", a->max_logits);
  c.tensor("temporary_output", a->temporary_output);
  c.tensor("sinks", a->sinks), c.integer("sliding_window", a->sliding_window);
  return c;
}

CCallArgs call_of(const aiter_compat_asm_decode_args* a, void* stream) {
  need_struct(a, "aiter_compat_asm_decode_args");
  need("Q", a->Q), need("K", a->K), need("V", a->V), need("kv_indices", a->kv_indices);
  need("context_lens", a->context_lens), need("kv_indptr", a->kv_indptr), need("out", a->out);
  CCallArgs c(OpId::pa_decode_bf16_asm, stream);
  c.tensor("Q", a->Q), c.tensor("K", a->K), c.tensor("V", a->V), c.tensor("kv_indices", a->kv_indices);
  c.tensor("context_lens", a->context_lens), c.tensor("kv_indptr", a->kv_indptr);
  const double d = a->Q->ndim > 0 && a->Q->shape ? static_cast<double>(a->Q->shape[a->Q->ndim - 1]) : 1.0;
  c.number("softmax_scale", a->softmax_scale != 0 ? a->softmax_scale : 1.0 / std::sqrt(d > 0 ? d : 1.0));
  c.integer("gqa", a->gqa), c.integer("mtp", a->mtp);
  c.tensor("query_scale", a->query_scale), c.tensor("key_scale", a->key_scale), c.tensor("value_scale", a->value_scale);
  c.tensor("work_indptr", a->work_indptr), c.tensor("work_info", a->work_info);
  c.tensor("split_o", a->split_o), c.tensor("split_lse", a->split_lse);
  c.tensor("sink", a->sink), c.tensor("out", a->out);
  c.set_scratch_lse(a->lse);  // the split rows' scratch (fallback routes only)
  return c;
}

}  // namespace aiter_compat::capi
