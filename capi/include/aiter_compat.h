/* aiter_compat C API: attention with AITer's routes for C and C++ engines.
 *
 * Tensors are DLPack DLTensors (dlpack/dlpack.h). Each call is routed like the Python module's:
 * to AITer (its Python entry point, through an embedded interpreter and torch.from_dlpack) when
 * the installed AITer serves it correctly, to a fallback kernel when not, or refused. A
 * non-zero status comes with a message from aiter_compat_last_error() (thread-local, valid
 * until the thread's next call) naming the argument, the value found and the value needed, or
 * every candidate route with its reasons.
 */
#ifndef AITER_COMPAT_H
#define AITER_COMPAT_H

#include <dlpack/dlpack.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define AITER_COMPAT_ABI_VERSION 1
#define AITER_COMPAT_API __attribute__((visibility("default")))

typedef enum {
  AITER_COMPAT_OK = 0,
  AITER_COMPAT_INVALID_ARGUMENT = 1, /* a bad tensor or value: see aiter_compat_last_error() */
  AITER_COMPAT_NO_ROUTE = 2,         /* no route can run the call correctly */
  AITER_COMPAT_AITER_FAILED = 3,     /* the AITer route raised */
  AITER_COMPAT_INTERNAL_ERROR = 4,
} aiter_compat_status;

/* flash_attn_varlen_func: q [total_q, Hq, D], k [total_k, Hk, D], v [total_k, Hk, Dv];
 * cu_seqlens_* int32 [batch + 1]; out [total_q, Hq, Dv] (required); lse fp32 [Hq, total_q] or
 * NULL; sinks [Hq] in float32, bfloat16 or float16, or NULL (learned sinks, post-scale logits;
 * any stride). */
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
  double softmax_scale; /* 0: 1/sqrt(D) */
  int causal;
  int64_t window_left;  /* -1: unbounded */
  int64_t window_right; /* -1: unbounded */
} aiter_compat_varlen_args;

/* unified_attention over vLLM's NHD paged cache: q [total_q, Hq, D], k_cache/v_cache
 * [num_blocks, block_size, Hk, D], cu_seqlens_q int32 [batch + 1], seqused_k int32 [batch],
 * block_table int32 [batch, max_blocks]; out [total_q, Hq, Dv]; lse as above (fallback only). */
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
} aiter_compat_paged_args;

AITER_COMPAT_API int aiter_compat_abi_version(void);
/* stream: the caller's stream (hipStream_t / cudaStream_t) for GPU routes; NULL for CPU tensors. */
AITER_COMPAT_API aiter_compat_status aiter_compat_varlen_attention(const aiter_compat_varlen_args* args, void* stream);
AITER_COMPAT_API aiter_compat_status aiter_compat_paged_attention(const aiter_compat_paged_args* args, void* stream);
/* Writes the route a call would take, and every candidate's reasons, without running it. */
AITER_COMPAT_API aiter_compat_status aiter_compat_explain_varlen(const aiter_compat_varlen_args* args, char* buffer, size_t size);
/* "auto", "prefer-fallback" or "aiter-only"; NULL restores AITER_COMPAT_POLICY or auto. */
AITER_COMPAT_API aiter_compat_status aiter_compat_set_policy(const char* policy);
AITER_COMPAT_API const char* aiter_compat_last_error(void);

#ifdef __cplusplus
}
#endif

#endif /* AITER_COMPAT_H */
