// One dialect for the fallback kernels, compiled two ways: clang's HIP device pass for AMD
// (-nogpuinc: no HIP headers, only clang builtins) and nvcc for NVIDIA (Debian's HIP headers do
// not build with CUDA 13). Only what the kernels use is defined here.
#pragma once

#include <stdint.h>

#if defined(__AMDGCN__) || (defined(__HIP__) && !defined(__CUDACC__))
#define AC_AMD 1
#define AC_KERNEL extern "C" __attribute__((global)) __attribute__((amdgpu_flat_work_group_size(1, 256)))
#define AC_DEVICE __attribute__((device)) static inline
#define AC_MEMBER __attribute__((device)) inline
// The shared building blocks (key_range.hpp, kv_rows.hpp, row_finish.hpp, row_store.hpp): left
// to the inliner, a block's key range was a call, and a call costs AMD kernels registers.
#define AC_INLINE __attribute__((always_inline))
#define AC_SHARED __attribute__((shared))
// Waves of 64 lanes on CDNA (gfx9); RDNA (gfx10-12) and gfx1250 run the kernels in their native
// 32-lane waves (clang's wavefront size for the target: RDNA's wave64 mode would halve the reach
// of ds_bpermute, which the lane exchanges below rely on).
#if defined(__GFX10__) || defined(__GFX11__) || defined(__GFX12__)
#define AC_WARP_SIZE 32
#else
#define AC_WARP_SIZE 64
#endif
AC_DEVICE int ac_thread_x() { return __builtin_amdgcn_workitem_id_x(); }
AC_DEVICE int ac_block_x() { return __builtin_amdgcn_workgroup_id_x(); }
AC_DEVICE int ac_block_y() { return __builtin_amdgcn_workgroup_id_y(); }
AC_DEVICE int ac_block_z() { return __builtin_amdgcn_workgroup_id_z(); }
AC_DEVICE int ac_grid_x() { return __builtin_amdgcn_grid_size_x() / __builtin_amdgcn_workgroup_size_x(); }
#define AC_DYNAMIC_SHARED(name) extern __attribute__((shared)) __attribute__((aligned(16))) unsigned char name[]
AC_DEVICE float ac_exp2(float x) { return __builtin_amdgcn_exp2f(x); }
AC_DEVICE float ac_log2(float x) { return __builtin_amdgcn_logf(x); }
AC_DEVICE int ac_ffs(int x) { return __builtin_ffs(x); }  // 1 + index of the lowest set bit; 0 for 0
AC_DEVICE void ac_sync() {
  __builtin_amdgcn_fence(__ATOMIC_RELEASE, "workgroup");
  __builtin_amdgcn_s_barrier();
  __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "workgroup");
}
// v_exp_f32 and v_log_f32 work in base 2.
AC_DEVICE float ac_exp(float x) { return __builtin_amdgcn_exp2f(x * 1.4426950408889634f); }
AC_DEVICE float ac_log(float x) { return __builtin_amdgcn_logf(x) * 0.6931471805599453f; }
// Exchange with the lane whose index differs by `mask` (within a wave).
AC_DEVICE float ac_shfl_xor(float v, int mask) {
  const int lane = __builtin_amdgcn_mbcnt_hi(~0u, __builtin_amdgcn_mbcnt_lo(~0u, 0u));
  return __builtin_bit_cast(float, __builtin_amdgcn_ds_bpermute((lane ^ mask) << 2, __builtin_bit_cast(int, v)));
}
AC_DEVICE float ac_half_to_float(uint16_t h) { return static_cast<float>(__builtin_bit_cast(_Float16, h)); }
// Whether `pred` holds in any lane of the wave (a uniform branch on it skips work in every lane).
AC_DEVICE bool ac_warp_any(bool pred) {
#if AC_WARP_SIZE == 64
  return __builtin_amdgcn_ballot_w64(pred) != 0;
#else
  return __builtin_amdgcn_ballot_w32(pred) != 0;
#endif
}
// The CUDA math names the shared kernel code uses (no device libraries here: clang builtins).
AC_DEVICE float fmaxf(float a, float b) { return __builtin_fmaxf(a, b); }
AC_DEVICE float fmaf(float a, float b, float c) { return __builtin_fmaf(a, b, c); }
AC_DEVICE void ac_shared_add(float* p, float v) {
  __hip_atomic_fetch_add(p, v, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_WORKGROUP);
}
// Programmatic dependent launch is NVIDIA's (below): on AMD every kernel starts after the one
// before it has finished, so there is nothing to signal or wait for.
AC_DEVICE void ac_allow_dependents() {}
AC_DEVICE void ac_wait_for_primary() {}
// Blocks of one grid meeting through device memory (the split merge folded into the last split
// block, tiled_attention.hpp): a fence at agent scope orders this thread's stores before what
// follows, and as an acquire invalidates the CU's L1, so that plain loads after it see other
// CUs' stores; a counter added to at agent scope.
AC_DEVICE void ac_fence_device() { __builtin_amdgcn_fence(__ATOMIC_SEQ_CST, "agent"); }
AC_DEVICE uint32_t ac_arrive(uint32_t* counter) {
  return __hip_atomic_fetch_add(counter, 1u, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_AGENT);
}
// Every thread of the block that reads what another CU stored: its L1 invalidated; and every
// thread that stored what another CU will read, before the barrier and the one thread's count
// (the one thread's fence after the barrier covers the other waves' stores in LLVM's AMDGPU
// memory model; this does not rest on it).
AC_DEVICE void ac_acquire_device() { __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "agent"); }
AC_DEVICE void ac_release_device() { __builtin_amdgcn_fence(__ATOMIC_RELEASE, "agent"); }
#elif defined(__CUDACC__)
#define AC_NVIDIA 1
#define AC_KERNEL extern "C" __global__ __launch_bounds__(256)
#define AC_DEVICE __device__ static inline
#define AC_MEMBER __device__ inline
#define AC_INLINE __attribute__((always_inline))
#define AC_SHARED __shared__
#define AC_WARP_SIZE 32
AC_DEVICE int ac_thread_x() { return threadIdx.x; }
AC_DEVICE int ac_block_x() { return blockIdx.x; }
AC_DEVICE int ac_block_y() { return blockIdx.y; }
AC_DEVICE int ac_block_z() { return blockIdx.z; }
AC_DEVICE int ac_grid_x() { return gridDim.x; }
#define AC_DYNAMIC_SHARED(name) extern __shared__ __align__(16) unsigned char name[]
// ex2.approx: 2 ulp, flushes denormal results to zero (weights below 2^-126 of the row max).
AC_DEVICE float ac_exp2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}
AC_DEVICE float ac_log2(float x) { return __log2f(x); }
AC_DEVICE int ac_ffs(int x) { return __ffs(x); }  // 1 + index of the lowest set bit; 0 for 0
AC_DEVICE void ac_sync() { __syncthreads(); }
AC_DEVICE void ac_syncwarp() { __syncwarp(); }  // the warp's lanes, and their shared-memory accesses, in order
AC_DEVICE float ac_exp(float x) { return exp2f(x * 1.4426950408889634f); }
AC_DEVICE float ac_log(float x) { return __logf(x); }
AC_DEVICE float ac_shfl_xor(float v, int mask) { return __shfl_xor_sync(0xffffffffu, v, mask); }
// Whether `pred` holds in any lane of the warp (a uniform branch on it skips work in every lane).
AC_DEVICE bool ac_warp_any(bool pred) { return __any_sync(0xffffffffu, pred) != 0; }
AC_DEVICE float ac_half_to_float(uint16_t h) {
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
  return f;
}
AC_DEVICE void ac_shared_add(float* p, float v) { atomicAdd(p, v); }
// Programmatic dependent launch (sm_90 on): a kernel launched with programmatic stream
// serialization (the split merge, launch.cpp) may start once every block of the kernel before it
// has called ac_allow_dependents(), and ac_wait_for_primary() holds it until that kernel has
// finished and its writes are visible. The merge's launch and set-up then overlap the split
// kernel's last blocks. Every split kernel calls it after its key loop (a merge block resident
// through the whole loop slowed the tiled fp8 split by 0.3-0.5 us on an H100). Both are no-ops
// when no such launch is involved, and below sm_90.
AC_DEVICE void ac_allow_dependents() {
#if __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;");
#endif
}
AC_DEVICE void ac_wait_for_primary() {
#if __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}
// Blocks of one grid meeting through device memory (the split merge folded into the last split
// block, tiled_attention.hpp): a device-scope fence and a counter (ac_load_l2, below, reads).
AC_DEVICE void ac_fence_device() { __threadfence(); }
AC_DEVICE uint32_t ac_arrive(uint32_t* counter) { return atomicAdd(counter, 1u); }
// Nothing per thread: the readers' loads bypass L1 (ac_load_l2), after the fence of the thread
// that saw the counter and a barrier; the writers' stores are ordered by the barrier before the
// counting thread's fence (cooperative groups' grid sync rests on the same).
AC_DEVICE void ac_acquire_device() {}
AC_DEVICE void ac_release_device() {}
#elif defined(AC_HOST_MODEL)
// The host model of the kernels' shared building blocks (key_range.hpp, row_finish.hpp), which
// the C++ tests compile for the CPU: the same source, standard math in place of the intrinsics.
#include <cmath>
#define AC_HOST 1
#define AC_DEVICE static inline
#define AC_MEMBER inline
#define AC_INLINE
AC_DEVICE float ac_exp2(float x) { return std::exp2(x); }
AC_DEVICE float ac_log2(float x) { return std::log2(x); }
AC_DEVICE float ac_exp(float x) { return std::exp(x); }
AC_DEVICE float ac_log(float x) { return std::log(x); }
AC_DEVICE int ac_ffs(int x) { return __builtin_ffs(x); }
#else
#error "portability.hpp: compile with clang -x hip (AMD) or nvcc -x cu (NVIDIA), or define AC_HOST_MODEL (host tests)"
#endif

#define AC_INFINITY __builtin_huge_valf()

// Whether a row's softmax denominator has weight: positive, or NaN (a NaN among its keys or
// values, which must reach the output as NaN, as in AITer's kernels, not become a zero row).
AC_DEVICE bool ac_weighted(float l) { return !(l <= 0.f); }

// Element types by tag (the kernels handle 16-bit floats by their bits).
struct F16 {};
struct BF16 {};
template <typename A, typename B> struct ac_same { static constexpr bool value = false; };
template <typename A> struct ac_same<A, A> { static constexpr bool value = true; };

struct alignas(16) ac_u32x4 {
  uint32_t x, y, z, w;
};
struct alignas(8) ac_u32x2 {
  uint32_t x, y;
};
struct alignas(16) ac_f32x4 {
  float x, y, z, w;
};
struct alignas(8) ac_f32x2 {
  float x, y;
};
// Loads of split-KV scratch that another block of the same grid may have written (after
// ac_fence_device): NVIDIA's bypass the SM's L1 (ld.global.cg; L1 is not coherent across SMs and
// could hold a line of the scratch from an earlier call), AMD's follow the agent-scope fence that
// invalidated the CU's L1.
#if defined(AC_NVIDIA)
AC_DEVICE float ac_load_l2(const float* p) { return __ldcg(p); }
AC_DEVICE ac_f32x2 ac_load_l2(const ac_f32x2* p) {
  const float2 v = __ldcg(reinterpret_cast<const float2*>(p));
  return {v.x, v.y};
}
AC_DEVICE ac_f32x4 ac_load_l2(const ac_f32x4* p) {
  const float4 v = __ldcg(reinterpret_cast<const float4*>(p));
  return {v.x, v.y, v.z, v.w};
}
#elif defined(AC_AMD)
template <typename T> AC_DEVICE T ac_load_l2(const T* p) { return *p; }
#endif
// kWords 32-bit words stored or loaded as one access.
template <int kWords> struct ac_words;
template <> struct ac_words<1> { using type = uint32_t; };
template <> struct ac_words<2> { using type = ac_u32x2; };
template <> struct ac_words<4> { using type = ac_u32x4; };

// float16 and bfloat16 by their bits, rounding to nearest even, the same on both vendors.
AC_DEVICE float ac_bits_to_float(uint32_t bits) {
  union { uint32_t u; float f; } v;
  v.u = bits;
  return v.f;
}
AC_DEVICE uint32_t ac_float_to_bits(float f) {
  union { uint32_t u; float f; } v;
  v.f = f;
  return v.u;
}
AC_DEVICE float ac_bf16_to_float(uint16_t h) { return ac_bits_to_float(static_cast<uint32_t>(h) << 16); }
AC_DEVICE uint16_t ac_float_to_bf16(float f) {
  uint32_t bits = ac_float_to_bits(f);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x40);
  bits += 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>(bits >> 16);
}
AC_DEVICE float ac_f16_to_float(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
  if (exp == 0x1f) return ac_bits_to_float(sign | 0x7f800000u | (mant << 13));
  if (exp != 0) return ac_bits_to_float(sign | ((exp + 112u) << 23) | (mant << 13));
  float sub = static_cast<float>(mant) * 5.9604644775390625e-8f;  // mant * 2^-24
  return sign ? -sub : sub;
}
AC_DEVICE uint16_t ac_float_to_f16(float f) {
  uint32_t bits = ac_float_to_bits(f);
  uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  uint32_t a = bits & 0x7fffffffu;
  if (a > 0x7f800000u) return sign | 0x7e00u;
  if (a >= 0x477ff000u) return sign | 0x7c00u;
  if (a < 0x33000001u) return sign;
  uint32_t exp = a >> 23;
  if (exp < 113) {
    uint32_t mant = (a & 0x7fffffu) | 0x800000u, shift = 126 - exp;
    uint32_t half = mant >> shift, rest = mant & ((1u << shift) - 1), mid = 1u << (shift - 1);
    if (rest > mid || (rest == mid && (half & 1u))) ++half;
    return sign | static_cast<uint16_t>(half);
  }
  uint32_t r = a + 0xfffu + ((a >> 13) & 1u);
  return sign | static_cast<uint16_t>(((r >> 13) - (112u << 10)) & 0xffffu);
}
