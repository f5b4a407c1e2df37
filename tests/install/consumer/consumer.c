/* One attention call through the installed C API, on CPU float32 tensors (no GPU needed).
 * With q all zeros every key gets the same score, so causal attention makes output row i the
 * mean of v's rows 0..i: an answer known without a reference kernel. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <aiter_compat.h>

enum { T = 4, D = 8 };

static DLTensor tensor(void* data, int ndim, int64_t* shape, DLDataTypeCode code, uint8_t bits) {
  DLTensor t;
  memset(&t, 0, sizeof t);
  t.data = data;
  t.device.device_type = kDLCPU;
  t.ndim = ndim;
  t.dtype.code = (uint8_t)code;
  t.dtype.bits = bits;
  t.dtype.lanes = 1;
  t.shape = shape;
  t.strides = NULL; /* compact row-major */
  return t;
}

int main(void) {
  static float q[T][1][D], k[T][1][D], v[T][1][D], out[T][1][D];
  int32_t cu[2] = {0, T};
  for (int t = 0; t < T; ++t)
    for (int d = 0; d < D; ++d) {
      k[t][0][d] = (float)(t * D + d) / 10.0f;
      v[t][0][d] = (float)(t + 1) * (float)(d + 1);
    }
  int64_t qkv_shape[3] = {T, 1, D}, cu_shape[1] = {2};
  DLTensor tq = tensor(q, 3, qkv_shape, kDLFloat, 32), tk = tensor(k, 3, qkv_shape, kDLFloat, 32),
           tv = tensor(v, 3, qkv_shape, kDLFloat, 32), tout = tensor(out, 3, qkv_shape, kDLFloat, 32),
           tcu = tensor(cu, 1, cu_shape, kDLInt, 32);
  aiter_compat_varlen_args a = {&tq, &tk, &tv, &tcu, &tcu, NULL /* sinks */, &tout, NULL /* lse */,
                                T, T, 0.0 /* 1/sqrt(D) */, 1 /* causal */, -1, -1};
  aiter_compat_status status = aiter_compat_varlen_attention(&a, NULL);
  if (status != AITER_COMPAT_OK) {
    fprintf(stderr, "aiter_compat_varlen_attention: status %d: %s\n", (int)status, aiter_compat_last_error());
    return 1;
  }
  for (int t = 0; t < T; ++t)
    for (int d = 0; d < D; ++d) {
      double want = 0;
      for (int s = 0; s <= t; ++s) want += v[s][0][d];
      want /= (t + 1);
      if (fabs(out[t][0][d] - want) > 1e-5 * fabs(want)) {
        fprintf(stderr, "out[%d][0][%d] = %.7g, expected %.7g\n", t, d, out[t][0][d], want);
        return 2;
      }
    }
  printf("consumer: ABI %d, causal varlen attention on CPU float32 matches\n", aiter_compat_abi_version());
  return 0;
}
