// The per-arch layer of the tiled attention kernels: asynchronous global-to-shared copies,
// shared-memory fragment loads, a predicated early load and one warp-level matrix
// multiply-accumulate (16 x 8 x 16, fp32 accumulators). The tiled kernels use nothing else that
// is arch-specific.
//
// NVIDIA (sm_80 and later): cp.async, ldmatrix and mma.sync m16n8k16. Fragment layout (g =
// lane / 4, t = lane % 4): A (16 x 16, row-major) a0 = (g, 2t..2t+1), a1 = (g+8, 2t..), a2 =
// (g, 2t+8..), a3 = (g+8, 2t+8..); B (16 x 8) b0 = (k 2t..2t+1, n g), b1 = (k 2t+8.., n g);
// C (16 x 8) c0,c1 = (g, 2t..2t+1), c2,c3 = (g+8, 2t..2t+1).
//
// AMD: not written yet. The MFMA version of these functions (64-lane waves, other fragment
// layouts) needs an AMD GPU to be verified on; until then AC_HAS_MATRIX_OPS is 0 there and the
// launcher keeps the generic and decode kernels on gfx*.
#pragma once

#include "kernel_params.h"
#include "portability.hpp"

#if defined(AC_NVIDIA) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
#define AC_HAS_MATRIX_OPS 1

// Shared-memory address of a generic pointer, as the shared-state-space instructions take it.
AC_DEVICE uint32_t ac_smem_addr(const void* p) { return static_cast<uint32_t>(__cvta_generic_to_shared(p)); }

// 16 bytes global -> shared, bypassing L1; valid == false writes zeros and reads nothing.
AC_DEVICE void ac_copy16_async(void* smem, const void* gmem, bool valid) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(ac_smem_addr(smem)), "l"(gmem),
               "r"(valid ? 16 : 0));
}
AC_DEVICE void ac_copy_commit() { asm volatile("cp.async.commit_group;\n" ::); }
// Waits until at most `pending` committed groups are still in flight.
template <int pending>
AC_DEVICE void ac_copy_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(pending));
}

// *src where valid, else `otherwise`: one predicated load, no branch, issued where it stands
// (volatile: not moved past the copies that follow). A plain conditional load becomes a branch
// with the value's first use inside it, which stalls the warp until the load returns.
AC_DEVICE float ac_load_now(const float* src, bool valid, float otherwise) {
  float v = otherwise;
  asm volatile("{\n .reg .pred p;\n setp.ne.b32 p, %2, 0;\n @p ld.global.f32 %0, [%1];\n}\n"
               : "+f"(v)
               : "l"(src), "r"(static_cast<int>(valid)));
  return v;
}

AC_DEVICE uint16_t ac_load_now_u16(const uint16_t* src, bool valid, uint16_t otherwise) {
  uint16_t v = otherwise;
  asm volatile("{\n .reg .pred p;\n setp.ne.b32 p, %2, 0;\n @p ld.global.u16 %0, [%1];\n}\n"
               : "+h"(v)
               : "l"(src), "r"(static_cast<int>(valid)));
  return v;
}
// A sink (element `index` of sinks, in its own dtype) where valid, else -inf: both widths as
// predicated loads issued where they stand, no branch; converted at the value's first use.
AC_DEVICE float ac_load_sink_now(const void* sinks, int32_t type, int64_t index, bool valid) {
  const float f = ac_load_now(static_cast<const float*>(sinks) + index, valid && type == AC_DTYPE_F32, -AC_INFINITY);
  const uint16_t h = ac_load_now_u16(static_cast<const uint16_t*>(sinks) + index, valid && type != AC_DTYPE_F32, 0);
  const float narrow = type == AC_DTYPE_F16 ? ac_half_to_float(h) : ac_bf16_to_float(h);
  return type == AC_DTYPE_F32 || !valid ? f : narrow;
}

// Block barrier that also returns whether `pred` held for any thread of the block.
AC_DEVICE bool ac_sync_or(bool pred) { return __syncthreads_or(pred) != 0; }

// Four 8 x 8 matrices of 16-bit elements; lanes 8i..8i+7 give the row addresses of matrix i.
// (Shared-memory addresses as 32-bit offsets: generic pointers would cost two registers each.)
AC_DEVICE void ac_load_matrix_x4(uint32_t (&r)[4], uint32_t row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(row));
}
// The same, each matrix transposed (for an operand stored [k][n] row-major).
AC_DEVICE void ac_load_matrix_x4_trans(uint32_t (&r)[4], uint32_t row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(row));
}

// mma: c += a b (16 x 8 x 16, fp32 accumulators). pack: two floats to one register of two
// 16-bit elements (lo in the low half), rounded to nearest. One definition per element type,
// the PTX type name spliced into the instruction strings.
template <typename T> struct MatrixOps;
#define AC_MATRIX_OPS(Tag, ptx)                                                                                \
  template <> struct MatrixOps<Tag> {                                                                          \
    AC_DEVICE void mma(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {                       \
      asm volatile("mma.sync.aligned.m16n8k16.row.col.f32." ptx "." ptx ".f32 {%0, %1, %2, %3}, "               \
                   "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"                                           \
                   : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])                                              \
                   : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));                               \
    }                                                                                                          \
    AC_DEVICE uint32_t pack(float lo, float hi) {                                                              \
      uint32_t r;                                                                                              \
      asm("cvt.rn." ptx "x2.f32 %0, %1, %2;\n" : "=r"(r) : "f"(hi), "f"(lo));                                   \
      return r;                                                                                                \
    }                                                                                                          \
  };
AC_MATRIX_OPS(BF16, "bf16")
AC_MATRIX_OPS(F16, "f16")
#undef AC_MATRIX_OPS

#elif !defined(AC_AMD)
#define AC_HAS_MATRIX_OPS 0  // NVIDIA before sm_80 (AMD: mfma_ops.hpp)
#endif
