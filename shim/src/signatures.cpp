#include "aiter_compat/shim/signatures.hpp"

namespace aiter_compat {
namespace {

using D = DefaultKind;

ParamSpec R(const char* name, DefaultKind neutral = DefaultKind::value) { return {name, neutral, true, false}; }
ParamSpec O(const char* name, DefaultKind def, bool hint = false) { return {name, def, false, hint}; }

// AITer main's signatures (2026-08-22), which the fronts expose unchanged.
std::vector<OpSignature> make_signatures() {
  return {
      {OpId::flash_attn_varlen_func, "flash_attn_varlen_func", "flash_attn_varlen_func", "",
       {R("q"), R("k"), R("v"), R("cu_seqlens_q"),
        R("cu_seqlens_k"), R("max_seqlen_q"), R("max_seqlen_k"),
        O("min_seqlen_q", D::zero, true), O("dropout_p", D::zero), O("softmax_scale", D::none),
        O("logits_soft_cap", D::zero), O("causal", D::false_), O("window_size", D::window), O("bias", D::none),
        O("alibi_slopes", D::none), O("deterministic", D::false_, true), O("return_lse", D::false_),
        O("return_attn_probs", D::false_), O("how_v3_bf16_cvt", D::other, true), O("block_table", D::none),
        O("out", D::none), O("cu_seqlens_q_padded", D::none), O("cu_seqlens_k_padded", D::none),
        O("sink_ptr", D::none)}},
      {OpId::flash_attn_func, "flash_attn_func", "flash_attn_func", "",
       {R("q"), R("k"), R("v"), O("dropout_p", D::zero),
        O("softmax_scale", D::none), O("causal", D::false_), O("window_size", D::window), O("bias", D::none),
        O("alibi_slopes", D::none), O("deterministic", D::other, true), O("return_lse", D::false_),
        O("return_attn_probs", D::false_), O("how_v3_bf16_cvt", D::other, true), O("cu_seqlens_q", D::none),
        O("cu_seqlens_kv", D::none), O("sink_ptr", D::none), O("num_splits", D::zero, true)}},
      {OpId::unified_attention, "unified_attention", "unified_attention", "",
       {R("q"), R("k"), R("v"), R("out"),
        R("cu_seqlens_q"), R("max_seqlen_q"), R("seqused_k"),
        R("max_seqlen_k"), R("softmax_scale"), R("causal"),
        R("window_size", D::window), R("block_table"), R("softcap", D::zero),
        R("q_descale", D::none), R("k_descale", D::none), R("v_descale", D::none),
        O("q_scales", D::none), O("alibi_slopes", D::none), O("output_scale", D::none), O("qq_bias", D::none),
        O("sinks", D::none), O("shuffled_kv_cache", D::false_), O("skip_reduce", D::false_)}},
      // Ours: decode (and extend) over a paged cache with sinks, which no AITer kernel offers.
      {OpId::paged_attention_decode, "paged_attention_decode", "",
       "AITer has no entry point for this: its paged decode kernels (pa_fwd_asm, paged_attention_v1) take no "
       "sinks and a different calling convention",
       {R("q"), R("k_cache"), R("v_cache"), R("block_table"),
        R("seqused_k"), O("softmax_scale", D::none), O("window_size", D::window),
        O("sinks", D::none), O("out", D::none), O("return_lse", D::false_), O("cu_seqlens_q", D::none)}},
      // Ours, shaped as vLLM's merge_attn_states, plus sinks: merges two partial attention states
      // (chunked prefill) and adds the sink exactly once.
      {OpId::merge_attn_states, "merge_attn_states", "", "AITer has no sink-aware merge of attention states",
       {R("output"), R("prefix_output"), R("prefix_lse"), R("suffix_output"), R("suffix_lse"),
        O("output_lse", D::none), O("sinks", D::none)}},
  };
}

}  // namespace

int OpSignature::index_of(const std::string& param) const {
  for (size_t i = 0; i < params.size(); ++i)
    if (params[i].name == param) return static_cast<int>(i);
  return -1;
}

const std::vector<OpSignature>& all_signatures() {
  static const std::vector<OpSignature> s = make_signatures();
  return s;
}

const OpSignature& signature(OpId id) { return all_signatures()[static_cast<size_t>(id)]; }

std::string to_string(OpId id) { return signature(id).name; }

}  // namespace aiter_compat
