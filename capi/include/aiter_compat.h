/* aiter_compat C API: attention with AITer's routes for C and C++ engines.
 *
 * Tensors are DLPack DLTensors (dlpack/dlpack.h). Each entry point is one of the Python
 * module's, routed the same way by the same core: to AITer (its Python entry point, through an
 * embedded interpreter and torch.from_dlpack) when the installed AITer serves the call
 * correctly, to a fallback kernel when not, or refused. A non-zero status comes with a message
 * from aiter_compat_last_error() (thread-local, valid until the thread's next call) naming the
 * argument, the value found and the value needed, or every candidate route with its reasons.
 * Outputs are the caller's: `out` is required, `lse` optional (NULL: not computed).
 *
 * Numbers: softmax_scale 0 means 1/sqrt(head_dim); window bounds -1 mean unbounded; softcap 0
 * means none. Sinks: [num_query_heads] in float32, bfloat16 or float16, any stride (learned
 * sinks in post-scale logit units), or NULL.
 */
#ifndef AITER_COMPAT_H
#define AITER_COMPAT_H

#include <dlpack/dlpack.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define AITER_COMPAT_ABI_VERSION 5
#define AITER_COMPAT_API __attribute__((visibility("default")))

typedef enum {
  AITER_COMPAT_OK = 0,
  AITER_COMPAT_INVALID_ARGUMENT = 1, /* a bad tensor or value: see aiter_compat_last_error() */
  AITER_COMPAT_NO_ROUTE = 2,         /* no route can run the call correctly */
  AITER_COMPAT_AITER_FAILED = 3,     /* the AITer route raised */
  AITER_COMPAT_INTERNAL_ERROR = 4,
} aiter_compat_status;

/* flash_attn_varlen_func: q [total_q, Hq, D], k [total_k, Hk, D], v [total_k, Hk, Dv];
 * cu_seqlens_* int32 [batch + 1]; out [total_q, Hq, Dv]; lse float32 [Hq, total_q]. */
typedef struct {
  const DLTensor* q;
  const DLTensor* k;
  const DLTensor* v;
  const DLTensor* cu_seqlens_q;
  const DLTensor* cu_seqlens_k;
  const DLTensor* sinks;
  DLTensor* out;
  DLTensor* lse;
  int64_t max_seqlen_q;
  int64_t max_seqlen_k;
  double softmax_scale;
  int causal;
  int64_t window_left;
  int64_t window_right;
  double softcap;
} aiter_compat_varlen_args;

/* flash_attn_func (batch layout): q [B, Sq, Hq, D], k/v [B, Sk, Hk, D/Dv]; out [B, Sq, Hq, Dv];
 * lse float32 [B, Hq, Sq]. */
typedef struct {
  const DLTensor* q;
  const DLTensor* k;
  const DLTensor* v;
  const DLTensor* sinks;
  DLTensor* out;
  DLTensor* lse;
  double softmax_scale;
  int causal;
  int64_t window_left;
  int64_t window_right;
} aiter_compat_batch_args;

/* unified_attention over vLLM's NHD paged cache: q [total_q, Hq, D], k_cache/v_cache
 * [num_blocks, block_size, Hk, D], cu_seqlens_q int32 [batch + 1], seqused_k int32 [batch]
 * (context length including the new tokens), block_table int32 [batch, max_blocks];
 * out [total_q, Hq, Dv]; lse float32 [Hq, total_q] (fallback routes only). */
typedef struct {
  const DLTensor* q;
  const DLTensor* k_cache;
  const DLTensor* v_cache;
  const DLTensor* cu_seqlens_q;
  const DLTensor* seqused_k;
  const DLTensor* block_table;
  const DLTensor* sinks;
  DLTensor* out;
  DLTensor* lse;
  int64_t max_seqlen_q;
  int64_t max_seqlen_k;
  double softmax_scale;
  int causal;
  int64_t window_left;
  int64_t window_right;
  double softcap;
  /* Since ABI 3: unified_attention's scales, each NULL for none (float32 on q's device):
   * q_descale one element; k_descale, v_descale [batch, Hk] or broadcastable to it; output_scale
   * one element (outputs divided by it). An fp8 e4m3 cache (float8_e4m3fn or _fnuz, DLPack
   * codes 10 and 11) under float16/bfloat16 or same-fp8 queries; out in the 16-bit type or the
   * cache's fp8. */
  const DLTensor* q_descale;
  const DLTensor* k_descale;
  const DLTensor* v_descale;
  const DLTensor* output_scale;
  /* Since ABI 5: unified_attention's shuffled_kv_cache (non-zero: k_cache [num_blocks, Hk, D / x,
   * block_size, x] and v_cache [num_blocks, Hk, block_size / x, D, x], AITer's 5-D layout). */
  int shuffled_kv_cache;
} aiter_compat_paged_args;

/* paged_attention_decode: decode (q [batch, Hq, D], one token per sequence; cu_seqlens_q NULL)
 * or extend (cu_seqlens_q given) over the same cache, causal, with sinks. */
typedef struct {
  const DLTensor* q;
  const DLTensor* k_cache;
  const DLTensor* v_cache;
  const DLTensor* block_table;
  const DLTensor* seqused_k;
  const DLTensor* cu_seqlens_q;
  const DLTensor* sinks;
  DLTensor* out;
  DLTensor* lse;
  double softmax_scale;
  int64_t window_left;
  int64_t window_right;
  /* Since ABI 3: as in aiter_compat_paged_args (NULL for none). */
  const DLTensor* q_descale;
  const DLTensor* k_descale;
  const DLTensor* v_descale;
  const DLTensor* output_scale;
} aiter_compat_decode_args;

/* merge_attn_states: two partial states of the same queries over disjoint keys (outputs
 * [tokens, Hq, D], LSEs float32 [Hq, tokens], computed without sinks) into output (and
 * output_lse, optional); the sink, when given, enters once here. */
typedef struct {
  DLTensor* output;
  const DLTensor* prefix_output;
  const DLTensor* prefix_lse;
  const DLTensor* suffix_output;
  const DLTensor* suffix_lse;
  DLTensor* output_lse;
  const DLTensor* sinks;
} aiter_compat_merge_args;

/* Since ABI 4. mha_batch_prefill_func (paged prefill and extend, SGLang's): q [total_q, Hq, D],
 * cu_seqlens_q int32 [batch + 1]; k/v [pages, page_size, Hk, D] or [slots, Hk, D] (page size 1);
 * the page table in CSR form, kv_indptr int32 [batch + 1] into kv_page_indices int32 [total
 * pages], with kv_last_page_lens int32 [batch] (keys in each sequence's last page; required
 * above page size 1), or, when block_table is given, block_table int32 [batch, max_pages] with
 * seqlen_k int32 [batch] (AITer still checks kv_indptr's shape then, so both are always given);
 * out [total_q, Hq, Dv]; lse float32 [Hq, total_q]. Causal masks align to the bottom right. */
typedef struct {
  const DLTensor* q;
  const DLTensor* k;
  const DLTensor* v;
  const DLTensor* cu_seqlens_q;
  const DLTensor* kv_indptr;
  const DLTensor* kv_page_indices;
  const DLTensor* kv_last_page_lens;
  const DLTensor* block_table;
  const DLTensor* seqlen_k;
  const DLTensor* sinks;
  DLTensor* out;
  DLTensor* lse;
  int64_t max_seqlen_q;
  int64_t max_seqlen_k;
  double softmax_scale;
  int causal;
  int64_t window_left;
  int64_t window_right;
  double softcap;
  const DLTensor* q_descale; /* float32, one element each, or NULL */
  const DLTensor* k_descale;
  const DLTensor* v_descale;
} aiter_compat_batch_prefill_args;

/* Since ABI 5. flash_attn_varlen_fp8_pertensor_func / flash_attn_fp8_pertensor_func: fp8 e4m3 q, k
 * and v (varlen [tokens, heads, D] with cu_seqlens, or batch [B, S, heads, D] when cu_seqlens_q
 * is NULL) with per-tensor descales (float32, one element each); out bfloat16. AITer's alone: no
 * fallback kernel takes fp8 q/k/v, so a call AITer cannot serve correctly is refused
 * (AITER_COMPAT_NO_ROUTE, every reason in the message). */
typedef struct {
  const DLTensor* q;
  const DLTensor* k;
  const DLTensor* v;
  const DLTensor* q_descale;
  const DLTensor* k_descale;
  const DLTensor* v_descale;
  const DLTensor* cu_seqlens_q;
  const DLTensor* cu_seqlens_k;
  const DLTensor* sinks;
  DLTensor* out;
  int64_t max_seqlen_q;
  int64_t max_seqlen_k;
  double softmax_scale;
  int causal;
  int64_t window_left;
  int64_t window_right;
} aiter_compat_fp8_pertensor_args;

/* Since ABI 5. pa_decode_gluon (SGLang's and ATOM's decode over AITer's 5-D caches): output and
 * query [batch x query_length, Hq, D]; key_cache [blocks, Hk, D / x, block_size, x] (x: 16 bytes
 * of elements); value_cache [blocks, Hk, block_size / x, D, x] or [blocks, Hk, D, block_size];
 * context_lengths int32 [batch]; block_tables int32 [batch, max_blocks]; query_length queries per
 * sequence, causal among them; sliding_window keys per query, its own included (0: all); fp8
 * scales per tensor, one float32 element each (NULL: none; read over an fp8 cache only, as AITer
 * does). For AITer's route, its partition count and scratch (NULL: AITer allocates it;
 * context_partition_size 0: AITer's default); the fallback reads none of them. */
typedef struct {
  DLTensor* output;
  const DLTensor* query;
  const DLTensor* key_cache;
  const DLTensor* value_cache;
  const DLTensor* context_lengths;
  const DLTensor* block_tables;
  const DLTensor* sinks;
  const DLTensor* query_scale;
  const DLTensor* key_scale;
  const DLTensor* value_scale;
  DLTensor* exp_sums;
  DLTensor* max_logits;
  DLTensor* temporary_output;
  double softmax_scale;
  int64_t query_length;
  int64_t max_context_partition_num;
  int64_t context_partition_size;
  int64_t sliding_window;
} aiter_compat_gluon_decode_args;

/* Since ABI 5. pa_decode_bf16_asm (ATOM's decode on gfx1250): Q [batch, mtp + 1, Hk, gqa, D];
 * K [pages, Hk, D / 16, page_size, 16], V [pages, Hk, page_size / 16, D, 16]; kv_indptr int32
 * [batch + 1] into kv_indices int32 [pages]; context_lens int32 [batch] (query i of a sequence
 * sees its first context_lens - mtp + i keys); out Q's shape (bfloat16 for fp8 Q); scales per
 * tensor (one float32 element each, or NULL) and sink (float32 [Hq], or NULL). AITer's persistent
 * schedule, or NULL: work_indptr int32, work_info int32 [items, 8], split_o float32 [rows, 1, Hq,
 * D], split_lse float32 [rows, 1, Hq, 1]; with work_info a fallback route writes the rows the
 * schedule splits there (so AITer's pa_reduce_v1 gives out back) from lse, float32 [Hq, batch x
 * (mtp + 1)], which the caller then gives as scratch. */
typedef struct {
  const DLTensor* Q;
  const DLTensor* K;
  const DLTensor* V;
  const DLTensor* kv_indices;
  const DLTensor* context_lens;
  const DLTensor* kv_indptr;
  const DLTensor* query_scale;
  const DLTensor* key_scale;
  const DLTensor* value_scale;
  const DLTensor* work_indptr;
  const DLTensor* work_info;
  DLTensor* split_o;
  DLTensor* split_lse;
  const DLTensor* sink;
  DLTensor* out;
  DLTensor* lse;
  double softmax_scale;
  int64_t gqa;
  int64_t mtp;
} aiter_compat_asm_decode_args;

AITER_COMPAT_API int aiter_compat_abi_version(void);

/* stream: the caller's stream (hipStream_t / cudaStream_t) for GPU routes; NULL for CPU tensors
 * (or the default stream). */
AITER_COMPAT_API aiter_compat_status aiter_compat_varlen_attention(const aiter_compat_varlen_args* args, void* stream);
AITER_COMPAT_API aiter_compat_status aiter_compat_batch_attention(const aiter_compat_batch_args* args, void* stream);
AITER_COMPAT_API aiter_compat_status aiter_compat_paged_attention(const aiter_compat_paged_args* args, void* stream);
AITER_COMPAT_API aiter_compat_status aiter_compat_paged_decode(const aiter_compat_decode_args* args, void* stream);
AITER_COMPAT_API aiter_compat_status aiter_compat_merge_attn_states(const aiter_compat_merge_args* args, void* stream);
AITER_COMPAT_API aiter_compat_status aiter_compat_batch_prefill(const aiter_compat_batch_prefill_args* args, void* stream);
AITER_COMPAT_API aiter_compat_status aiter_compat_gluon_decode(const aiter_compat_gluon_decode_args* args, void* stream);
/* Since ABI 5: AITer's Triton flash_attn_varlen_func / flash_attn_func (aiter.ops.triton...mha,
 * the sink named `sink`) over the same structs as their CK namesakes; and the fp8 per-tensor names. */
AITER_COMPAT_API aiter_compat_status aiter_compat_triton_varlen_attention(const aiter_compat_varlen_args* args, void* stream);
AITER_COMPAT_API aiter_compat_status aiter_compat_triton_batch_attention(const aiter_compat_batch_args* args, void* stream);
AITER_COMPAT_API aiter_compat_status aiter_compat_fp8_pertensor_attention(const aiter_compat_fp8_pertensor_args* args,
                                                                          void* stream);
AITER_COMPAT_API aiter_compat_status aiter_compat_asm_decode(const aiter_compat_asm_decode_args* args, void* stream);

/* Writes the route a call would take, the kernel, and every candidate's reasons into buffer
 * (truncated to size, always terminated), without running it. */
AITER_COMPAT_API aiter_compat_status aiter_compat_explain_varlen(const aiter_compat_varlen_args* args, char* buffer, size_t size);
AITER_COMPAT_API aiter_compat_status aiter_compat_explain_batch(const aiter_compat_batch_args* args, char* buffer, size_t size);
AITER_COMPAT_API aiter_compat_status aiter_compat_explain_paged(const aiter_compat_paged_args* args, char* buffer, size_t size);
AITER_COMPAT_API aiter_compat_status aiter_compat_explain_decode(const aiter_compat_decode_args* args, char* buffer, size_t size);
AITER_COMPAT_API aiter_compat_status aiter_compat_explain_merge(const aiter_compat_merge_args* args, char* buffer, size_t size);
AITER_COMPAT_API aiter_compat_status aiter_compat_explain_batch_prefill(const aiter_compat_batch_prefill_args* args,
                                                                        char* buffer, size_t size);
AITER_COMPAT_API aiter_compat_status aiter_compat_explain_gluon_decode(const aiter_compat_gluon_decode_args* args,
                                                                       char* buffer, size_t size);
AITER_COMPAT_API aiter_compat_status aiter_compat_explain_asm_decode(const aiter_compat_asm_decode_args* args,
                                                                     char* buffer, size_t size);
AITER_COMPAT_API aiter_compat_status aiter_compat_explain_triton_varlen(const aiter_compat_varlen_args* args, char* buffer,
                                                                        size_t size);
AITER_COMPAT_API aiter_compat_status aiter_compat_explain_triton_batch(const aiter_compat_batch_args* args, char* buffer,
                                                                       size_t size);
AITER_COMPAT_API aiter_compat_status aiter_compat_explain_fp8_pertensor(const aiter_compat_fp8_pertensor_args* args,
                                                                        char* buffer, size_t size);

/* Calls per operation and route target since the dispatcher was made (the first call, or the
 * last aiter_compat_set_policy), as JSON: {"op": {"target": calls}}, target "refused" for calls
 * no route took. INVALID_ARGUMENT when the text does not fit in size bytes (the message gives
 * the size needed); nothing is written then. Counting costs each call one atomic increment. */
AITER_COMPAT_API aiter_compat_status aiter_compat_stats(char* buffer, size_t size);

/* The self-test (docs/selftest.md). Every fallback GPU kernel family checks itself against the
 * CPU reference on its device before its first use; a family that fails is not used again in
 * the process. A check cannot run during CUDA/HIP graph capture, so call aiter_compat_warmup()
 * before capturing: it checks every family built for `device` (-1: every device found) now,
 * keeping verdicts already known or cached. AITER_COMPAT_OK also when there is no GPU, and
 * when a family failed (its calls go elsewhere; aiter_compat_selftest_verdicts() says which). */
AITER_COMPAT_API aiter_compat_status aiter_compat_warmup(int device);
/* Every verdict known in this process, as a JSON array of {"family", "dtype", "head_dim",
 * "device", "arch", "max_error", "bound", "millis", "verdict", "source", "detail"}. Like
 * aiter_compat_stats, INVALID_ARGUMENT when the text does not fit in size bytes. */
AITER_COMPAT_API aiter_compat_status aiter_compat_selftest_verdicts(char* buffer, size_t size);

/* "auto", "prefer-fallback" or "aiter-only"; NULL restores AITER_COMPAT_POLICY or auto. */
AITER_COMPAT_API aiter_compat_status aiter_compat_set_policy(const char* policy);
AITER_COMPAT_API const char* aiter_compat_last_error(void);

#ifdef __cplusplus
}
#endif

#endif /* AITER_COMPAT_H */
