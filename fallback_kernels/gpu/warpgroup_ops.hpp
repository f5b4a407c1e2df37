// The Hopper (sm_90a) warpgroup layer of the tiled attention kernels: wgmma, with B (and A,
// for the scores) read straight from shared memory through matrix descriptors, so that the
// per-warp fragment loads of matrix_ops.hpp (the bottleneck of the mma.sync kernels at head
// dim 128) disappear. Four consecutive warps (a warpgroup) take 64 rows together; the
// accumulator layout per warp is that of mma.sync m16n8 (matrix_ops.hpp), so masks, softmax
// and the epilogue are shared.
//
// Shared-memory operands use the canonical 128-byte-swizzled layout: 64-element panels, each
// 8 rows x 128 bytes per 1024-byte atom, 16-byte chunk c of row r at c ^ (r % 8), atoms
// 1024-byte aligned. K-major (Q and K for S = Q K^T): rows are the M/N index, the panel holds
// 64 of the K index; a k-step of 16 moves the start address 32 bytes within the panel.
// MN-major (V for O = P V, transposed B): rows are the K index (keys), the panel holds 64 of
// the N index (head dims); LBO is the stride between panels, SBO between groups of 8 keys.
#pragma once

#include "matrix_ops.hpp"

#if AC_HAS_MATRIX_OPS && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define AC_HAS_WARPGROUP_MMA 1

// Shared-memory matrix descriptor, 128-byte swizzle.
AC_DEVICE uint64_t ac_smem_desc(uint32_t addr, uint32_t lbo, uint32_t sbo) {
  return static_cast<uint64_t>((addr & 0x3FFFF) >> 4) | static_cast<uint64_t>((lbo >> 4) & 0x3FFF) << 16 |
         static_cast<uint64_t>((sbo >> 4) & 0x3FFF) << 32 | 1ull << 62;
}
// Orders this thread's earlier register writes before the warpgroup MMAs that read them.
AC_DEVICE void ac_wg_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
AC_DEVICE void ac_wg_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int pending>
AC_DEVICE void ac_wg_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(pending) : "memory");
}
// Makes this thread's shared-memory writes (cp.async included) visible to the async proxy that
// the warpgroup MMAs read through; a block barrier must follow.
AC_DEVICE void ac_fence_async_smem() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }
// Keeps the compiler from moving reads or writes of an accumulator across an MMA still in flight.
template <int N>
AC_DEVICE void ac_pin(float (&d)[N][4]) {
#pragma unroll
  for (int j = 0; j < N; ++j)
#pragma unroll
    for (int c = 0; c < 4; ++c) asm volatile("" : "+f"(d[j][c])::"memory");
}

// Inline assembly names every accumulator register, so the operand lists are spelled out:
// d[N/8][4] as %0.. (64 wide: 32 registers, 128 wide: 64).
#define AC_WG_D64 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, " \
                  "%19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}"
#define AC_WG_D128 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, " \
                   "%19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, "  \
                   "%36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, "  \
                   "%53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}"
#define AC_WG_ACC4(j) "+f"(d[j][0]), "+f"(d[j][1]), "+f"(d[j][2]), "+f"(d[j][3])
#define AC_WG_ACC64 \
  AC_WG_ACC4(0), AC_WG_ACC4(1), AC_WG_ACC4(2), AC_WG_ACC4(3), AC_WG_ACC4(4), AC_WG_ACC4(5), AC_WG_ACC4(6), AC_WG_ACC4(7)
#define AC_WG_ACC128                                                                                    \
  AC_WG_ACC64, AC_WG_ACC4(8), AC_WG_ACC4(9), AC_WG_ACC4(10), AC_WG_ACC4(11), AC_WG_ACC4(12), AC_WG_ACC4(13), \
      AC_WG_ACC4(14), AC_WG_ACC4(15)
// SS (A and B descriptors, then scale_d: a predicate, 0 overwrites d; no transposes). `ops`
// names the descriptor operands, `pred` the scale_d one (they follow the accumulators).
#define AC_WG_SS(n, regs, ops, pred, ptx, acc)                                                     \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, " pred ", 0;\n"                                 \
               "wgmma.mma_async.sync.aligned.m64n" #n "k16.f32." ptx "." ptx " " regs ", " ops     \
               ", p, 1, 1, 0, 0;\n}\n"                                                            \
               : acc                                                                              \
               : "l"(a), "l"(b), "r"(scale_d))
// RS (A in four registers, the mma.sync A fragment layout; the B descriptor; scale_d 1; B
// transposed, i.e. stored N-contiguous).
#define AC_WG_RS(n, regs, ops, pred, ptx, acc)                                                     \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, " pred ", 0;\n"                                 \
               "wgmma.mma_async.sync.aligned.m64n" #n "k16.f32." ptx "." ptx " " regs ", " ops     \
               ", p, 1, 1, 1;\n}\n"                                                               \
               : acc                                                                              \
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(1))

template <typename T> struct WarpgroupOps;
#define AC_WARPGROUP_OPS(Tag, ptx)                                                                  \
  template <> struct WarpgroupOps<Tag> {                                                            \
    template <int N>                                                                                \
    AC_DEVICE void mma_ss(float (&d)[N / 8][4], uint64_t a, uint64_t b, int scale_d) {               \
      static_assert(N == 64 || N == 128, "wgmma width");                                            \
      if constexpr (N == 64) AC_WG_SS(64, AC_WG_D64, "%32, %33", "%34", ptx, AC_WG_ACC64);                 \
      else AC_WG_SS(128, AC_WG_D128, "%64, %65", "%66", ptx, AC_WG_ACC128);                              \
    }                                                                                               \
    template <int N>                                                                                \
    AC_DEVICE void mma_rs(float (&d)[N / 8][4], const uint32_t (&a)[4], uint64_t b) {                \
      static_assert(N == 64 || N == 128, "wgmma width");                                            \
      if constexpr (N == 64) AC_WG_RS(64, AC_WG_D64, "{%32, %33, %34, %35}, %36", "%37", ptx, AC_WG_ACC64); \
      else AC_WG_RS(128, AC_WG_D128, "{%64, %65, %66, %67}, %68", "%69", ptx, AC_WG_ACC128);              \
    }                                                                                               \
  };
AC_WARPGROUP_OPS(BF16, "bf16")
AC_WARPGROUP_OPS(F16, "f16")
#undef AC_WARPGROUP_OPS
#undef AC_WG_SS
#undef AC_WG_RS
#undef AC_WG_ACC4
#undef AC_WG_ACC64
#undef AC_WG_ACC128
#undef AC_WG_D64
#undef AC_WG_D128

#else
#define AC_HAS_WARPGROUP_MMA 0
#endif
