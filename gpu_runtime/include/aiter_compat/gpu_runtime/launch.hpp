#pragma once
// Launches the fallback kernels on the caller's stream: loads the code object of the device's
// arch once per device, looks its kernels up once into tables, picks the first row of the
// kernel table (fastest first) that fits the call's tensors, sizes split-KV to one wave of the
// device, and runs the merge that enters the sink once. It refuses nothing routing accepted:
// the generic row fits every call; what can still fail is the runtime itself (a module the
// driver will not load, a launch error), reported with the runtime's message.
#include <cstdint>
#include <optional>
#include <string>

#include "aiter_compat/gpu_runtime/family_verdicts.hpp"
#include "aiter_compat/gpu_runtime/kernel_table.hpp"
#include "aiter_compat/gpu_runtime/runtime.hpp"

namespace aiter_compat::gpu {

// The row named by AttentionLaunch::only_row cannot take the call (or is not in the code object).
struct RowDoesNotFit : GpuError {
  using GpuError::GpuError;
};

// Gives a family a verdict before its first use (the self-test, in the dispatch core); returns
// unknown when the family cannot be checked, which leaves it usable.
using FamilyCheckFn = Verdict (*)(const FamilyKey& family, void* stream);

struct AttentionLaunch {
  ac_attention_params params{};  // everything but the split fields, which the launcher sets
  int dtype = AC_DTYPE_BF16;     // AC_DTYPE_* of q, k, v and out
  Vendor vendor = Vendor::nvidia;
  int device = 0;
  void* stream = nullptr;
  int64_t max_keys = 0;  // keys one query attends to at most (window or sequence)
  int64_t max_rows = 0;  // query rows (tokens x heads of a group) of one sequence at most
  // The self-test's controls: run this row alone (GpuError when the call does not fit it), and
  // split the keys this many ways (0: as the launcher chooses), so that each family and the
  // split merge can be checked on their own. Calls leave both unset.
  std::optional<KernelId> only_row;
  int force_splits = 0;
  // The self-test's control of the warpgroup row (tiled_wgmma): its producer twin (true) or its
  // default kernel (false), RowDoesNotFit where the code object has no twin of it; unset: the
  // launcher's choice (producer_twins; launch.cpp, takes_producer_twin).
  std::optional<bool> producer_twin;
  // Called for the row the launcher picks, and the split merge when it splits, while their
  // verdict is unknown; the launcher then plans again (a failed family is passed over).
  FamilyCheckFn check = nullptr;
};

// What launch_attention would run for this call now: the row, and the splits (1: no merge).
// Rows whose family failed its self-test on this device are passed over, and a failed split
// merge keeps calls unsplit.
struct LaunchPlan {
  KernelId row = KernelId::generic;
  int splits = 1;
};
LaunchPlan plan_attention(const AttentionLaunch& call);

// Returns the row that ran (the split merge, when there was one, ran after it).
KernelId launch_attention(const AttentionLaunch& call);
void launch_merge_states(const ac_merge_params& params, int dtype, Vendor vendor, int device, void* stream);
// pa_decode_bf16_asm's split rows from a fallback's whole rows (kernel_params.h), after the
// attention on the same stream.
void launch_split_rows(const ac_split_rows_params& params, Vendor vendor, int device, void* stream);

// Runs every call of the process on this row where it fits (RowDoesNotFit where not), so that a
// benchmark can time each family on the same calls; nullopt restores the launcher's choice. A
// row that failed its self-test is still never run.
void force_row(std::optional<KernelId> row);

// Whether tiled split decodes fold their merge into the last split block (AITER_COMPAT_SPLIT_MERGE,
// read at each call): a cached self-test verdict holds for the mode it was measured in.
bool split_merge_folded();
// Where the warpgroup row (sm_90) runs its producer twins (a producer warpgroup feeding a ring
// through shared-memory barriers, the products beside the softmax: kernel_params.h), read from
// AITER_COMPAT_WGMMA_PRODUCER when a module loads: "auto", on the calls where they were measured
// faster (launch.cpp, takes_producer_twin); "1" (on, always), on every call the row takes; "0"
// (off, never), never; unset or another value, the build's default (launch.cpp,
// kTwinsByDefault). The twins are loaded and self-tested in every mode.
enum class ProducerTwins : uint8_t { automatic, always, never };
ProducerTwins producer_twins();

// Names the code object built for `arch` (its size and a hash of its bytes; "" when none is
// built): a cached self-test verdict holds for this build of the kernels only.
std::string code_object_id(const std::string& arch);

// The arch of a device, read once per device; throws GpuError when the runtime is unusable.
std::string device_arch(Vendor v, int device);

}  // namespace aiter_compat::gpu
