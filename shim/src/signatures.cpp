#include "aiter_compat/shim/signatures.hpp"

#include <stdexcept>

#include "aiter_compat/gpu_runtime/kernel_table.hpp"

namespace aiter_compat {
namespace {

using D = DefaultKind;
using R = Role;
namespace k = gpu;

ParamSpec P(const char* name, Role role = R::none) { return {name, D::value, true, false, role, 0}; }
ParamSpec P(const char* name, DefaultKind neutral, Role role, uint32_t features = 0) {
  return {name, neutral, true, false, role, features};
}
ParamSpec O(const char* name, DefaultKind def, Role role = R::none, uint32_t features = 0) {
  return {name, def, false, false, role, features};
}
ParamSpec hint(const char* name, DefaultKind def) { return {name, def, false, true, R::none, 0}; }

// AITer main's signatures (2026-08-22), which the fronts expose unchanged.
std::vector<OpSignature> make_signatures() {
  std::vector<OpSignature> s = {
      {OpId::flash_attn_varlen_func, OpKind::varlen, "flash_attn_varlen_func", "flash_attn_varlen_func", "",
       {P("q", R::q), P("k", R::k), P("v", R::v), P("cu_seqlens_q", R::cu_seqlens_q),
        P("cu_seqlens_k", R::cu_seqlens_k), P("max_seqlen_q", R::max_seqlen_q), P("max_seqlen_k", R::max_seqlen_k),
        hint("min_seqlen_q", D::zero), O("dropout_p", D::zero, R::dropout, k::kDropout),
        O("softmax_scale", D::none, R::softmax_scale), O("logits_soft_cap", D::zero, R::softcap, k::kSoftcap),
        O("causal", D::false_, R::causal), O("window_size", D::window, R::window), O("bias", D::none, R::bias, k::kBias),
        O("alibi_slopes", D::none, R::alibi, k::kAlibi), hint("deterministic", D::false_),
        O("return_lse", D::false_, R::return_lse), O("return_attn_probs", D::false_, R::return_attn_probs, k::kAttnProbs),
        hint("how_v3_bf16_cvt", D::other), O("block_table", D::none, R::block_table, k::kPagedVarlen),
        O("out", D::none, R::out), O("cu_seqlens_q_padded", D::none, R::none, k::kPaddedSeqlens),
        O("cu_seqlens_k_padded", D::none, R::none, k::kPaddedSeqlens), O("sink_ptr", D::none, R::sinks)}},
      {OpId::flash_attn_func, OpKind::batch, "flash_attn_func", "flash_attn_func", "",
       {P("q", R::q), P("k", R::k), P("v", R::v), O("dropout_p", D::zero, R::dropout, k::kDropout),
        O("softmax_scale", D::none, R::softmax_scale), O("causal", D::false_, R::causal),
        O("window_size", D::window, R::window), O("bias", D::none, R::bias, k::kBias),
        O("alibi_slopes", D::none, R::alibi, k::kAlibi), hint("deterministic", D::other),
        O("return_lse", D::false_, R::return_lse), O("return_attn_probs", D::false_, R::return_attn_probs, k::kAttnProbs),
        hint("how_v3_bf16_cvt", D::other), O("cu_seqlens_q", D::none, R::none, k::kBatchVarlen),
        O("cu_seqlens_kv", D::none, R::none, k::kBatchVarlen), O("sink_ptr", D::none, R::sinks),
        hint("num_splits", D::zero)}},
      {OpId::unified_attention, OpKind::paged, "unified_attention", "unified_attention", "",
       {P("q", R::q), P("k", R::k), P("v", R::v), P("out", R::out), P("cu_seqlens_q", R::cu_seqlens_q),
        P("max_seqlen_q", R::max_seqlen_q), P("seqused_k", R::seqused_k), P("max_seqlen_k", R::max_seqlen_k),
        P("softmax_scale", R::softmax_scale), P("causal", R::causal), P("window_size", D::window, R::window),
        P("block_table", R::block_table), P("softcap", D::zero, R::softcap, k::kSoftcap),
        P("q_descale", D::none, R::q_descale), P("k_descale", D::none, R::k_descale),
        P("v_descale", D::none, R::v_descale), O("q_scales", D::none, R::descale, k::kDescale),
        O("alibi_slopes", D::none, R::alibi, k::kAlibi), O("output_scale", D::none, R::output_scale),
        O("qq_bias", D::none, R::bias, k::kBias), O("sinks", D::none, R::sinks),
        O("shuffled_kv_cache", D::false_, R::shuffled_cache),
        O("skip_reduce", D::false_, R::none, k::kShuffledCache)},
       true},
      // Ours: decode (and extend) over a paged cache with sinks, which no AITer kernel offers.
      {OpId::paged_attention_decode, OpKind::decode, "paged_attention_decode", "",
       "aiter-compat's own call: AITer's pa_fwd_asm and paged_attention_v1 take no sinks, and its paged decodes "
       "that do (pa_decode_gluon, pa_decode_bf16_asm) take other cache layouts and calling conventions",
       {P("q", R::q), P("k_cache", R::k), P("v_cache", R::v), P("block_table", R::block_table),
        P("seqused_k", R::seqused_k), O("softmax_scale", D::none, R::softmax_scale),
        O("window_size", D::window, R::window), O("sinks", D::none, R::sinks), O("out", D::none, R::out),
        O("return_lse", D::false_, R::return_lse), O("cu_seqlens_q", D::none, R::cu_seqlens_q),
        O("softcap", D::zero, R::softcap, k::kSoftcap),
        // An fp8 cache's scales, as unified_attention takes them (vLLM's k_scale and v_scale).
        O("q_descale", D::none, R::q_descale), O("k_descale", D::none, R::k_descale),
        O("v_descale", D::none, R::v_descale), O("output_scale", D::none, R::output_scale)}},
      // Ours, shaped as vLLM's merge_attn_states, plus sinks: merges two partial attention states
      // (chunked prefill) and adds the sink exactly once.
      {OpId::merge_attn_states, OpKind::merge, "merge_attn_states", "", "AITer has no sink-aware merge of attention states",
       {P("output", R::output), P("prefix_output", R::prefix_output), P("prefix_lse", R::prefix_lse),
        P("suffix_output", R::suffix_output), P("suffix_lse", R::suffix_lse),
        O("output_lse", D::none, R::output_lse), O("sinks", D::none, R::sinks)}},
      // AITer's Triton flash attention (aiter.ops.triton.attention.mha; aiter.ops.triton.mha before
      // v0.1.10): the same computation as CK's names, its sink named `sink` (from v0.1.8), its window
      // (left, right), its `config` a tuning dict that changes no result.
      {OpId::triton_flash_attn_varlen_func, OpKind::varlen, "triton_flash_attn_varlen_func",
       "triton_flash_attn_varlen_func", "",
       {P("q", R::q), P("k", R::k), P("v", R::v), P("cu_seqlens_q", R::cu_seqlens_q),
        P("cu_seqlens_k", R::cu_seqlens_k), P("max_seqlen_q", R::max_seqlen_q), P("max_seqlen_k", R::max_seqlen_k),
        O("dropout_p", D::zero, R::dropout, k::kDropout), O("softmax_scale", D::none, R::softmax_scale),
        O("causal", D::false_, R::causal), O("window_size", D::window, R::window), O("bias", D::none, R::bias, k::kBias),
        O("alibi_slopes", D::none, R::alibi, k::kAlibi), hint("deterministic", D::false_),
        O("return_lse", D::false_, R::return_lse), O("return_attn_probs", D::false_, R::return_attn_probs, k::kAttnProbs),
        O("block_table", D::none, R::block_table, k::kPagedVarlen), O("out", D::none, R::out),
        O("sink", D::none, R::sinks), hint("config", D::none)}},
      {OpId::triton_flash_attn_func, OpKind::batch, "triton_flash_attn_func", "triton_flash_attn_func", "",
       {P("q", R::q), P("k", R::k), P("v", R::v), O("dropout_p", D::zero, R::dropout, k::kDropout),
        O("softmax_scale", D::none, R::softmax_scale), O("causal", D::false_, R::causal),
        O("window_size", D::window, R::window), O("bias", D::none, R::bias, k::kBias),
        O("alibi_slopes", D::none, R::alibi, k::kAlibi), hint("deterministic", D::other),
        O("return_lse", D::false_, R::return_lse), O("return_attn_probs", D::false_, R::return_attn_probs, k::kAttnProbs),
        O("sink", D::none, R::sinks), hint("config", D::none)}},
      // AITer's paged prefill (CK): a CSR page table (kv_indptr into kv_page_indices, the last
      // page's fill in kv_last_page_lens) or, from v0.1.19, a [batch, pages] block_table with
      // seqlen_k; sink_ptr from v0.1.10; k/v [pages, page_size, Hk, D], [slots, Hk, D] (page size
      // 1) or 5-D "vectorized".
      {OpId::mha_batch_prefill_func, OpKind::batch_prefill, "mha_batch_prefill_func", "mha_batch_prefill_func", "",
       {P("q", R::q), P("k", R::k), P("v", R::v), P("cu_seqlens_q", R::cu_seqlens_q), P("kv_indptr", R::kv_indptr),
        P("kv_page_indices", R::kv_page_indices), P("max_seqlen_q", R::max_seqlen_q), P("max_seqlen_k", R::max_seqlen_k),
        O("dropout_p", D::zero, R::dropout, k::kDropout), O("softmax_scale", D::none, R::softmax_scale),
        O("logits_soft_cap", D::zero, R::softcap, k::kSoftcap), O("causal", D::false_, R::causal),
        O("window_size", D::window, R::window), O("alibi_slopes", D::none, R::alibi, k::kAlibi),
        hint("deterministic", D::false_), O("return_lse", D::false_, R::return_lse),
        O("return_attn_probs", D::false_, R::return_attn_probs, k::kAttnProbs), O("out", D::none, R::out),
        O("kv_last_page_lens", D::none, R::kv_last_page_lens), O("block_table", D::none, R::block_table),
        O("seqlen_k", D::none, R::seqused_k), O("q_descale", D::none, R::q_descale),
        O("k_descale", D::none, R::k_descale), O("v_descale", D::none, R::v_descale),
        O("kv_block_descale", D::none, R::none, k::kDescale), O("sink_ptr", D::none, R::sinks),
        O("sink_size", D::zero, R::sink_size, k::kStreamingSink)}},
      // fp8 e4m3 q/k/v with per-tensor descales (CK or the ASM v3 kernel); no fallback kernel
      // takes fp8 varlen inputs, so a call AITer cannot serve correctly is refused.
      {OpId::flash_attn_varlen_fp8_pertensor_func, OpKind::varlen, "flash_attn_varlen_fp8_pertensor_func",
       "flash_attn_varlen_fp8_pertensor_func", "",
       {P("q", R::q), P("k", R::k), P("v", R::v), P("q_descale", R::q_descale), P("k_descale", R::k_descale),
        P("v_descale", R::v_descale), P("cu_seqlens_q", R::cu_seqlens_q), P("cu_seqlens_k", R::cu_seqlens_k),
        P("max_seqlen_q", R::max_seqlen_q), P("max_seqlen_k", R::max_seqlen_k), hint("min_seqlen_q", D::zero),
        O("logits_soft_cap", D::zero, R::softcap, k::kSoftcap), O("causal", D::false_, R::causal),
        O("window_size", D::window, R::window), O("softmax_scale", D::none, R::softmax_scale),
        O("sink_ptr", D::none, R::sinks)},
       true},
      {OpId::flash_attn_fp8_pertensor_func, OpKind::batch, "flash_attn_fp8_pertensor_func",
       "flash_attn_fp8_pertensor_func", "",
       {P("q", R::q), P("k", R::k), P("v", R::v), P("q_descale", R::q_descale), P("k_descale", R::k_descale),
        P("v_descale", R::v_descale), O("causal", D::false_, R::causal), O("window_size", D::window, R::window),
        O("softmax_scale", D::none, R::softmax_scale), O("sink_ptr", D::none, R::sinks)},
       true},
      // AITer's Gluon paged decode (aiter.ops.triton.gluon.pa_decode_gluon, v0.1.10's signature;
      // v0.1.8-v0.1.9.post1 took gluon-layout copies and max_context_length): output [seqs x
      // query_length, Hq, D] written in place; key_cache [blocks, Hk, D / x, block_size, x],
      // value_cache [blocks, Hk, D, block_size] or [blocks, Hk, block_size / x, D, x]; queries
      // causal within a sequence; fp8 scales per tensor ([1]) or per token. The partition
      // arguments and buffers are its kernels' own (AITer's scratch): the fallback reads none.
      {OpId::pa_decode_gluon, OpKind::vectorized_decode, "pa_decode_gluon", "pa_decode_gluon", "",
       {P("output", R::out), P("query", R::q), P("key_cache", R::k), P("value_cache", R::v),
        P("context_lengths", R::seqused_k), P("block_tables", R::block_table),
        P("softmax_scale", R::softmax_scale), P("query_length", R::query_length),
        P("max_context_partition_num"), hint("context_partition_size", D::other),
        hint("compute_type", D::other), O("query_scale", D::none, R::q_descale),
        O("key_scale", D::none, R::k_descale), O("value_scale", D::none, R::v_descale),
        hint("exp_sums", D::none), hint("max_logits", D::none), hint("temporary_output", D::none),
        O("alibi_slopes", D::none, R::alibi, k::kAlibi), O("sinks", D::none, R::sinks),
        O("sliding_window", D::zero, R::sliding_window), hint("ps", D::other)},
       true},
      // AITer's gfx1250 paged decode (aiter.ops.attention.pa_decode_bf16_asm, v0.1.16 on): Q
      // [batch, mtp + 1, kv_heads, gqa, head_dim] (query i of a sequence sees its first
      // context - mtp + i keys), K [pages, kv_heads, head_dim / 16, page_size, 16] and V [pages,
      // kv_heads, page_size / 16, head_dim, 16] in fp8, pages kv_indices[kv_indptr[b] ..
      // kv_indptr[b + 1]) holding context_lens[b] keys, per-tensor scales (one element each), the
      // sink in scaled-logit units; returns out (bf16, Q's shape). With work_info, rows its
      // schedule splits go to split_o / split_lse for AITer's pa_reduce_v1 instead of out.
      {OpId::pa_decode_bf16_asm, OpKind::vectorized_decode, "pa_decode_bf16_asm", "pa_decode_bf16_asm", "",
       {P("Q", R::q), P("K", R::k), P("V", R::v), P("kv_indices", R::kv_page_indices),
        P("context_lens", R::seqused_k), P("softmax_scale", R::softmax_scale), P("kv_indptr", R::kv_indptr),
        O("gqa", D::other, R::gqa), O("mtp", D::zero, R::mtp), O("query_scale", D::none, R::q_descale),
        O("key_scale", D::none, R::k_descale), O("value_scale", D::none, R::v_descale), hint("qo_indptr", D::none),
        O("work_indptr", D::none, R::work_indptr), O("work_info", D::none, R::work_info),
        O("split_o", D::none, R::split_o), O("split_lse", D::none, R::split_lse), O("sink", D::none, R::sinks),
        O("out", D::none, R::out), hint("kernelName", D::none)},
       true},
  };
  for (auto& sig : s) {
    if (sig.params.size() > kMaxParams) throw std::logic_error(sig.name + " has more parameters than kMaxParams");
    for (int& i : sig.role_index) i = -1;
    // The first parameter of a role is its index (q_descale for the descale role).
    for (size_t i = sig.params.size(); i-- > 0;)
      if (sig.params[i].role != Role::none) sig.role_index[static_cast<int>(sig.params[i].role)] = static_cast<int>(i);
  }
  return s;
}

}  // namespace

int OpSignature::index_of(const std::string& param) const {
  for (size_t i = 0; i < params.size(); ++i)
    if (params[i].name == param) return static_cast<int>(i);
  return -1;
}

const std::string& OpSignature::name_of(Role r) const {
  static const std::string none = "?";
  int i = index_of(r);
  return i < 0 ? none : params[static_cast<size_t>(i)].name;
}

const std::vector<OpSignature>& all_signatures() {
  static const std::vector<OpSignature> s = make_signatures();
  return s;
}

const OpSignature& signature(OpId id) { return all_signatures()[static_cast<size_t>(id)]; }

std::string to_string(OpId id) { return signature(id).name; }

}  // namespace aiter_compat
