#pragma once
// The public operations with AITer's newest signatures, as data: parameter names in order, what
// counts as each one's default, the role each plays in the call (so that `sink_ptr` and `sinks`,
// `k` and `k_cache` are one thing to the core), and what a non-default value asks of a kernel.
// The fronts parse calls with this table; the core reads values by role; the router decides per
// parameter whether an AITer release that lacks it can still be called.
#include <cstdint>
#include <string>
#include <vector>

namespace aiter_compat {

enum class OpId : uint8_t {
  flash_attn_varlen_func,
  flash_attn_func,
  unified_attention,
  paged_attention_decode,
  merge_attn_states,
  triton_flash_attn_varlen_func,  // AITer's Triton flash_attn_varlen_func (aiter.ops.triton.attention.mha)
  triton_flash_attn_func,         // AITer's Triton flash_attn_func
  mha_batch_prefill_func,         // AITer's paged prefill/extend (CK), SGLang's extend
  flash_attn_varlen_fp8_pertensor_func,  // fp8 q/k/v with per-tensor descales
  flash_attn_fp8_pertensor_func,
  pa_decode_gluon,                // AITer's Gluon paged decode over 5-D caches (SGLang's, ATOM's)
  pa_decode_bf16_asm,             // AITer's persistent paged decode for gfx1250 (ATOM's), fp8, 5-D caches
};
constexpr int kOpCount = 12;

// What an op computes, whichever entry point it is: the core reads features, makes kernel
// arguments and picks kernels by this, so an entry point that is another name (or another
// library's signature) for the same computation is one more table row, not a new code path.
enum class OpKind : uint8_t {
  varlen,  // packed varlen q/k/v ([tokens, heads, dim]) with cu_seqlens
  batch,   // [batch, seqlen, heads, dim] q/k/v
  paged,   // q over a paged NHD cache with cu_seqlens_q, seqused_k and a block table
  decode,  // paged, causal, one query per sequence unless cu_seqlens_q is given
  batch_prefill,  // paged with a CSR page table (kv_indptr) or a block table, causal or not; returns out
  vectorized_decode,  // pa_decode_gluon: out first, query_length queries per sequence over a 5-D
                      // key cache and a 5-D or [blocks, kv_heads, dim, block_size] value cache;
                      // pa_decode_bf16_asm: q [batch, mtp + 1, kv_heads, gqa, dim] over 5-D caches
                      // with a CSR page table, returns out
  merge,   // two partial attention states into one
};

// The value that means "not used": for optional parameters their default; for the required
// parameters of unified_attention that callers pass as None or 0, that neutral value.
enum class DefaultKind : uint8_t {
  value,     // a required input with no neutral value (q, k, v, ...)
  none,      // None
  false_,    // False
  zero,      // 0 or 0.0
  window,    // (-1, -1) or (-1, -1, 0)
  other,     // some other value (how_v3_bf16_cvt=1, ...)
};

// What a parameter is to the core, whichever name the op gives it.
enum class Role : uint8_t {
  none,  // read by no fallback (speed hints, AITer-only switches)
  q, k, v, out, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, seqused_k, block_table, sinks,
  softmax_scale, causal, window, softcap, dropout, bias, alibi, return_lse, return_attn_probs, descale,
  q_descale, k_descale, v_descale,  // unified_attention's descales (scores and outputs scaled by them)
  output_scale,                     // outputs divided by it (fp8 outputs: then saturated)
  output, prefix_output, prefix_lse, suffix_output, suffix_lse, output_lse,
  kv_indptr, kv_page_indices, kv_last_page_lens,  // mha_batch_prefill_func's CSR page table
  sink_size,                                      // StreamingLLM's always-kept first tokens, as a parameter
  shuffled_cache,                                 // unified_attention's shuffled_kv_cache (5-D caches)
  query_length,                                   // queries per sequence (pa_decode_gluon's MTP)
  sliding_window,                                 // keys per query, itself included (0: all)
  gqa, mtp,                                       // pa_decode_bf16_asm's query heads per KV head, queries - 1
  work_indptr, work_info, split_o, split_lse,     // its persistent schedule and the split rows it writes
  count_
};
constexpr int kRoleCount = static_cast<int>(Role::count_);

struct ParamSpec {
  std::string name;
  DefaultKind default_kind;
  bool required = false;  // positional with no default in AITer's signature
  // A hint changes speed, not results (min_seqlen_q, deterministic, how_v3_bf16_cvt): it may be
  // dropped for a release that lacks it whatever its value.
  bool hint = false;
  Role role = Role::none;
  uint32_t kernel_features = 0;  // gpu::KernelFeature bits a non-default value asks for
};

struct OpSignature {
  OpId id;
  OpKind kind;
  std::string name;
  std::string aiter_name;  // the AITer entry point's key in the probe's op table ("" if none)
  std::string no_aiter_reason;  // why AITer cannot serve it, when aiter_name is empty
  std::vector<ParamSpec> params;
  bool aiter_takes_fp8 = false;  // AITer's function takes fp8 e4m3 q/k/v (its others: 16-bit floats)
  int role_index[kRoleCount];   // parameter index of each role, -1 where the op has none
  int index_of(const std::string& param) const;  // -1 if absent
  int index_of(Role r) const { return role_index[static_cast<int>(r)]; }
  const std::string& name_of(Role r) const;      // the op's name for a role ("sink_ptr", "sinks")
};

constexpr int kMaxParams = 32;  // every op has fewer (CallFeatures::nondefault is 32 bits)

const OpSignature& signature(OpId id);
const std::vector<OpSignature>& all_signatures();
std::string to_string(OpId id);

}  // namespace aiter_compat
