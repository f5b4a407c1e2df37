// Shared-memory barriers between the producer warpgroup and the computing warps of the sm_90a
// warpgroup tiles (tiles_nvidia.hpp): per ring stage, "landed" (the producer's threads arrive once
// the stage's tile is in shared memory: over a 16-bit cache through their copies themselves,
// ac_stage_arrive_on_copies, and once more after their flag stores) and "free" (each computing
// thread arrives once its warp's products have read the stage and it is done with the stage's
// flags). A waiter names the phase it waits for by its parity: the n-th completion of a barrier
// (from 0) has parity n % 2. The arrive releases and the
// wait acquires (PTX's defaults, CTA scope), so the producer's shared-memory writes before its
// arrive are seen by every thread past the wait. Named barrier 1 joins the computing warps alone
// (barrier 0, __syncthreads, stays the whole block's).
#pragma once

#include "matrix_ops.hpp"

#if defined(AC_NVIDIA) && AC_HAS_MATRIX_OPS
namespace {

AC_DEVICE void ac_stage_init(uint64_t* bar, uint32_t arrivals) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(ac_smem_addr(bar)), "r"(arrivals) : "memory");
}
AC_DEVICE void ac_stage_arrive(uint64_t* bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(ac_smem_addr(bar)) : "memory");
}
// Arrives on the barrier once every cp.async this thread issued before it has landed, without
// waiting for them: the thread goes on issuing while its copies are in flight. The barrier's
// count includes this arrival (noinc). It releases the copies alone, not the thread's stores.
AC_DEVICE void ac_stage_arrive_on_copies(uint64_t* bar) {
  asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\n" ::"r"(ac_smem_addr(bar)) : "memory");
}
// Spins on try_wait (which itself suspends the thread for a while) until phase `parity` completed.
AC_DEVICE void ac_stage_wait(uint64_t* bar, uint32_t parity) {
  asm volatile(
      "{\n.reg .pred done;\n"
      "wait_again:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra wait_again;\n}\n" ::"r"(ac_smem_addr(bar)),
      "r"(parity)
      : "memory");
}
// The computing warps' own barrier (kThreads of them, a multiple of 32).
template <int kThreads>
AC_DEVICE void ac_compute_sync() {
  asm volatile("bar.sync 1, %0;\n" ::"n"(kThreads) : "memory");
}

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
// Registers moved between warpgroups of one block (every warp of the warpgroup executes it): the
// producer warpgroup gives up all but ac_producer_registers a thread, and the computing ones take
// ac_compute_registers, within the SM's 65,536 (one block per SM; ptxas gives each side's code
// those counts instead of the launch bounds'): two computing warpgroups 40 x 128 + 232 x 256 =
// 64,512, three 32 x 128 + 160 x 384 = 65,536 (FlashAttention 3's split for three).
constexpr int ac_producer_registers(int compute_warpgroups) { return compute_warpgroups == 2 ? 40 : 32; }
constexpr int ac_compute_registers(int compute_warpgroups) { return compute_warpgroups == 2 ? 232 : 160; }
static_assert(ac_producer_registers(2) * 128 + ac_compute_registers(2) * 256 <= 65536, "two computing warpgroups");
static_assert(ac_producer_registers(3) * 128 + ac_compute_registers(3) * 384 <= 65536, "three computing warpgroups");
template <int kCount>
AC_DEVICE void ac_registers_at_most() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(kCount));
}
template <int kCount>
AC_DEVICE void ac_registers_at_least() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(kCount));
}
#endif

}  // namespace
#endif
