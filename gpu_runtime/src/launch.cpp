#include "aiter_compat/gpu_runtime/launch.hpp"

#include <algorithm>
#include <cctype>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>

#include "aiter_compat/gpu_runtime/code_objects.hpp"

namespace aiter_compat::gpu {
namespace {

// Head dims with their own decode or tiled kernels: 64, 128, 256 (the row tiles only).
int dim_index(int head_dim) { return head_dim == 64 ? 0 : head_dim == 128 ? 1 : head_dim == 256 ? 2 : -1; }
int shape_index(KernelId id) { return id == KernelId::tiled_keys ? 0 : id == KernelId::tiled_wgmma ? 1 : 2; }

// A module's kernels, looked up by name once at load; calls index these tables (null where the
// code object has no such kernel: the tiled ones off NVIDIA, 16-bit-only kernels for f32).
struct LoadedModule {
  std::string arch;
  int multiprocessors = 0;
  bool dependent_merge = false;  // the arch can take the split merge as a programmatic dependent (sm_90 on)
  ProducerTwins twins = ProducerTwins::never;  // where the warpgroup row runs its producer twins
  void* zero_counts = nullptr;    // the folded merge's counters zeroed (ac_zero_counts)
  void* attention[AC_KTYPES] = {};   // [family type] (AC_DTYPE_F32..BF16, AC_KTYPE_*_KV8)
  void* attention_split[AC_KTYPES] = {};  // the same over caches in split layouts (kv_layout 1)
  void* split_merge[AC_KTYPES] = {};
  void* merge_states[3] = {};
  void* split_rows = nullptr;
  void* decode[AC_KTYPES][3] = {};         // [type][d64, d128, d256]
  void* tiled[3][2][AC_KTYPES][3] = {};    // [keys, wgmma, rows][contiguous, paged][type][d64, d128, d256]
  void* keys_fold[2][AC_KTYPES][3] = {};   // the "keys" kernels with the split merge folded in (null: none built)
  void* wgmma_twin[2][AC_KTYPES][2] = {};  // the warpgroup kernels' producer twins [paged][type][d64, d128] (sm_90)

  void* kernel(KernelId id, bool paged, int dtype, int head_dim, bool split_layout) const {
    switch (id) {
      case KernelId::tiled_keys:
      case KernelId::tiled_wgmma:
      case KernelId::tiled_rows:
      case KernelId::decode: {
        const int di = dim_index(head_dim);
        if (di < 0) return nullptr;
        return id == KernelId::decode ? decode[dtype][di] : tiled[shape_index(id)][paged][dtype][di];
      }
      case KernelId::generic: return split_layout ? attention_split[dtype] : attention[dtype];
      default: return nullptr;
    }
  }
};

// AITER_COMPAT_NO_WGMMA=1 keeps prefill on the mma.sync "rows" kernels where the warpgroup ones
// exist (to compare the two, or to step around a fault in one); read when a module loads.
bool flag_set(const char* name) {
  const char* v = std::getenv(name);
  return v && *v && std::string(v) != "0";
}
bool wgmma_disabled() { return flag_set("AITER_COMPAT_NO_WGMMA"); }

// The shape a row's kernel runs with (the producer twin's where the warpgroup row runs it).
ac_tiled_shape module_shape(KernelId id, int head_dim, const std::string& arch, bool producer_twin) {
  return id == KernelId::tiled_wgmma && producer_twin ? ac_tiled_wgmma_producer_shape(head_dim) : tiled_shape(id, head_dim, arch);
}

// Where a tiled split decode is merged: AITER_COMPAT_SPLIT_MERGE=fold folds the merge into each
// KV head's last split block (the "keys" kernels' keys_fold twins on NVIDIA and CDNA), =kernel
// launches the merge kernel. The merge kernel stays the default: on an H100 the fold is right but
// 2.5-5 us slower per call, its last block's merge a serial tail that the merge kernel, resident
// before the split kernel ends, overlaps (docs/kernel-notes.md, version 14). Read at each call.
constexpr bool kFoldByDefault = false;

// The split merge is launched as the split kernel's programmatic dependent on sm_90 and later
// (runtime.hpp: launch_dependent): its launch and set-up overlap the split kernel's last blocks
// instead of following them; where the "keys" split kernel folds the merge in, that kernel is the
// dependent of the one that zeroes its counters. AITER_COMPAT_NO_PDL=1 launches each after the
// one before instead (to compare); the flags are read at each call, the arch once per module.
bool takes_dependent_merge(Vendor v, const std::string& arch) {
  return v == Vendor::nvidia && arch.rfind("sm_", 0) == 0 && std::atoi(arch.c_str() + 3) >= 90;
}


struct DeviceKey {
  Vendor vendor;
  int device;
  bool operator<(const DeviceKey& o) const { return std::tie(vendor, device) < std::tie(o.vendor, o.device); }
};

std::mutex g_mutex;  // loading is rare; calls after the first find their module under it

const DeviceInfo& info_of(Vendor v, int device) {
  static std::map<DeviceKey, DeviceInfo> infos;
  auto it = infos.find({v, device});
  if (it == infos.end()) it = infos.emplace(DeviceKey{v, device}, device_info(v, device)).first;
  return it->second;
}

// The device's module, loaded on first use (the device must be current).
const LoadedModule& module_for(Vendor v, int device) {
  static std::map<DeviceKey, LoadedModule> modules;
  std::lock_guard lock(g_mutex);
  auto it = modules.find({v, device});
  if (it != modules.end()) return it->second;
  LoadedModule m;
  const DeviceInfo& info = info_of(v, device);
  m.arch = info.arch;
  m.multiprocessors = std::max(info.multiprocessors, 1);
  m.dependent_merge = takes_dependent_merge(v, m.arch);
  const CodeObject* object = nullptr;
  std::string built;
  for (const auto& o : code_objects()) {
    built += (built.empty() ? "" : ", ") + std::string(o.arch);
    if (m.arch == o.arch) object = &o;
  }
  if (!object)
    throw GpuError("no fallback code object for " + m.arch + " (built for: " + (built.empty() ? "none" : built) + ")");
  void* module = load_module(v, object->data);
  std::map<std::string, void*> functions;  // every kernel the code object must hold
  for (const auto& row : kernel_rows())
    if (row.built_for(m.arch))
      for (const auto& name : row.functions_on(m.arch)) functions[name] = module_function(v, module, name.c_str());
  auto find = [&](const std::string& name) {
    auto f = functions.find(name);
    return f == functions.end() ? nullptr : f->second;
  };
  m.split_rows = find("ac_split_rows");
  m.zero_counts = find("ac_zero_counts");
  const bool wgmma = !wgmma_disabled(), tiled = switched_off(KernelId::tiled_rows, m.arch).empty();
  m.twins = wgmma ? producer_twins() : ProducerTwins::never;  // where calls take the twins
  for (int t : {AC_DTYPE_F32, AC_DTYPE_F16, AC_DTYPE_BF16, AC_KTYPE_F16_KV8, AC_KTYPE_BF16_KV8}) {
    m.attention[t] = find(std::string("ac_attention_") + dtype_suffix(t));
    m.attention_split[t] = find(std::string("ac_attention_split_") + dtype_suffix(t));
    m.split_merge[t] = find(std::string("ac_merge_") + dtype_suffix(t));
    if (t < 3) m.merge_states[t] = find(std::string("ac_merge_states_") + dtype_suffix(t));
    for (int dim : {64, 128, 256}) {
      const int di = dim_index(dim);
      if (di < 0) continue;
      m.decode[t][di] = find(std::string("ac_decode_") + dtype_suffix(t) + "_d" + std::to_string(dim));
      for (KernelId id : {KernelId::tiled_keys, KernelId::tiled_wgmma, KernelId::tiled_rows})
        for (int paged = 0; paged < 2; ++paged) {
          if ((id == KernelId::tiled_wgmma && !wgmma) || !tiled) continue;
          void* fn = find(tiled_kernel_name(id, paged, t, dim));
          if (!fn) continue;
          allow_dynamic_shared(v, fn, tiled_shape(id, dim, m.arch).smem_bytes());
          m.tiled[shape_index(id)][paged][t][di] = fn;
          if (id == KernelId::tiled_wgmma && di < 2) {
            // The twin of a kernel the code object holds (built beside every warpgroup kernel),
            // loaded whatever the mode: the self-test checks it with the default kernel, so that
            // a cached verdict holds for both, in every mode.
            void* twin = module_function(v, module, tiled_kernel_name(id, paged, t, dim, true).c_str());
            allow_dynamic_shared(v, twin, module_shape(id, dim, m.arch, true).smem_bytes());
            m.wgmma_twin[paged][t][di] = twin;
          }
          if (id != KernelId::tiled_keys || !builds_folded_keys(m.arch)) continue;
          void* folded = find(tiled_kernel_name(id, paged, t, dim, true));
          if (folded) allow_dynamic_shared(v, folded, tiled_shape(id, dim, m.arch).smem_bytes());
          m.keys_fold[paged][t][di] = folded;
        }
    }
  }
  return modules.emplace(DeviceKey{v, device}, std::move(m)).first->second;
}

// Splits the keys of each query across blocks when the grid alone would leave the GPU idle,
// keeping at least min_keys keys per split.
int choose_splits(int64_t blocks, int multiprocessors, int64_t max_keys, int64_t min_keys) {
  if (blocks >= 2 * multiprocessors || max_keys <= min_keys) return 1;
  int64_t want = (2 * multiprocessors + blocks - 1) / blocks;
  return static_cast<int>(std::clamp<int64_t>(std::min<int64_t>(want, max_keys / min_keys), 1, AC_MAX_SPLITS));
}

// Split-KV for the tiled kernels: as many splits as keep the blocks within one wave (every block
// resident at once: blocks_per_sm per multiprocessor), each split at least four key tiles. One
// wave of equal blocks has no tail; a grid that already fills most of a wave is not split, since
// the partial outputs and the merge would cost more than the idle slots.
int choose_tiled_splits(int64_t blocks, int multiprocessors, int blocks_per_sm, int64_t max_keys, int block_n) {
  const int64_t wave = static_cast<int64_t>(blocks_per_sm) * multiprocessors;
  if (2 * blocks > wave) return 1;
  const int64_t by_keys = max_keys / (4LL * block_n);
  return static_cast<int>(std::clamp<int64_t>(std::min<int64_t>(wave / std::max<int64_t>(blocks, 1), by_keys), 1, AC_MAX_SPLITS));
}

// The kernel for one call and its launch shape (grid z is multiplied by the split count).
struct Plan {
  KernelId id = KernelId::generic;
  void* fn = nullptr;
  unsigned grid_x = 0, grid_y = 0, grid_z = 0, threads = AC_THREADS, smem = 0;
  int splits = 1;
  int fold_rows = 0;  // > 0: the shape can fold the split merge in (kernel_params.h; its keys_fold twin), over m-tiles of this many rows
  bool producer_twin = false;  // fn is the warpgroup kernel's producer twin
};

// The automatic choice of the producer twins (AITER_COMPAT_WGMMA_PRODUCER=auto), from the H100
// timings of docs/kernel-notes.md, versions 20 and 21: the head dim 64 twins stream each block's
// keys through a producer warpgroup, one block of 192 rows per SM, where the default kernels hold
// two blocks of 128. They were 3% faster at 4 x 4k causal and 1.6x slower at windows of 128 keys
// (each short m-tile's set-up and epilogue exposed); head dim 128's twins were slower wherever
// timed, and the fp8 caches' (which convert with a lag) were not timed. So: head dim 64 over a
// 16-bit cache, at least kTwinMinKeys keys a query (max_keys: the window's span, or the longest
// sequence), and a grid whose busiest SM gets no more rows than the default's would (max_rows: a
// sequence's query rows x the group; blocks dealt out evenly): a model, which
// bench/twin_choice.py checks.
constexpr int64_t kTwinMinKeys = 1024;
bool takes_producer_twin(const ac_attention_params& p, int dtype, int64_t max_rows, int64_t max_keys, int multiprocessors) {
  if (p.head_dim != 64 || kv8_type(dtype) || max_keys < kTwinMinKeys) return false;
  const ac_tiled_shape twin = ac_tiled_wgmma_producer_shape(64), plain = ac_tiled_wgmma_shape(64);
  const int64_t heads = static_cast<int64_t>(p.hk) * std::max(p.batch, 1), sms = std::max(multiprocessors, 1);
  auto rows_per_sm = [&](const ac_tiled_shape& s) {
    const int64_t blocks = (std::max<int64_t>(max_rows, 1) + s.block_m() - 1) / s.block_m() * heads;
    return (blocks + sms - 1) / sms * s.block_m();
  };
  return rows_per_sm(twin) <= rows_per_sm(plain);
}

// Whether the warpgroup row runs its producer twin for this call: the self-test's choice, else
// the mode's (producer_twins). A twin asked for by the self-test and not built does not fit.
bool runs_producer_twin(const AttentionLaunch& c, const LoadedModule& m, void* twin) {
  const ac_attention_params& p = c.params;
  if (c.producer_twin) {
    if (*c.producer_twin && !twin) throw RowDoesNotFit("no producer twin of the warpgroup kernel is built for this call");
    return *c.producer_twin;
  }
  return twin && (m.twins == ProducerTwins::always ||
                  (m.twins == ProducerTwins::automatic &&
                   takes_producer_twin(p, c.dtype, c.max_rows, c.max_keys, m.multiprocessors)));
}

bool family_failed(const AttentionLaunch& c, KernelId id, int head_dim) {
  return verdict_of({c.vendor, c.device, id, c.dtype, head_dim}) == Verdict::failed;
}

// The split count a call gets: the launcher's choice or the self-test's (at most the merge's
// limit and what grid z holds); 1 without stream-ordered scratch, or when the split merge failed
// its self-test on this device.
Plan settle_splits(const AttentionLaunch& c, Plan k) {
  // AITER_COMPAT_MAX_SPLITS=N: at most N splits (to measure the split count's cost; read per call).
  if (const char* cap = std::getenv("AITER_COMPAT_MAX_SPLITS"); cap && std::atoi(cap) > 0) k.splits = std::min(k.splits, std::atoi(cap));
  if (c.force_splits > 0) k.splits = std::min({c.force_splits, AC_MAX_SPLITS, 65535 / std::max<int>(k.grid_z, 1)});
  if (!has_scratch(c.vendor) || family_failed(c, KernelId::split_merge, c.params.head_dim_v)) k.splits = 1;
  return k;
}

std::atomic<int> g_forced_row{-1};  // force_row(): -1 for none

Plan plan(const AttentionLaunch& c, const LoadedModule& m) {
  const ac_attention_params& p = c.params;
  Plan k;
  const int forced = g_forced_row.load(std::memory_order_relaxed);
  const std::optional<KernelId> only = c.only_row ? c.only_row : forced >= 0 ? std::optional<KernelId>(static_cast<KernelId>(forced)) : std::nullopt;
  if (!c.only_row && only && family_failed(c, *only, p.head_dim))
    throw GpuError("kernel row " + kernel_row(*only).name + " failed its self-test on this device");
  for (KernelId id : {KernelId::tiled_keys, KernelId::tiled_wgmma, KernelId::tiled_rows, KernelId::decode, KernelId::generic}) {
    if (only ? id != *only : family_failed(c, id, p.head_dim)) continue;
    void* fn = m.kernel(id, p.paged != 0, c.dtype, p.head_dim, p.kv_layout == AC_LAYOUT_SPLIT);
    if (fn && launch_fits(id, p, c.dtype, c.max_rows)) {
      k.id = id, k.fn = fn;
      break;
    }
  }
  if (!k.fn && only) throw RowDoesNotFit("kernel row " + kernel_row(*only).name + " does not take this call");
  // Routing refuses the GPU route once the generic family failed; reaching here is a race with
  // that verdict, and still no wrong result. Or the tiled rows the router counted on cannot
  // launch this call and the generic kernel's block cannot hold its group.
  if (!k.fn) {
    if (!launch_fits(KernelId::generic, p, c.dtype, c.max_rows)) {
      const int64_t group = p.hk > 0 ? p.hq / p.hk : 0;
      const int widest = std::max(p.head_dim, p.head_dim_v);
      throw GpuError("no kernel built for " + m.arch + " launches this call: the faster kernels do not take it " +
                     "(their limits: explain()), and the generic kernel takes head dims up to " +
                     std::to_string(AC_MAX_HEAD_DIM) + ", at most " + std::to_string(AC_MAX_GROUP) +
                     " query heads per KV head and " + std::to_string(AC_MAX_GROUP_ELEMS) +
                     " of query heads per KV head x head dim (this call: " + std::to_string(group) + " x " +
                     std::to_string(widest) + ")");
    }
    throw GpuError("every kernel family that fits this call failed its self-test on this device");
  }
  if (k.id == KernelId::tiled_wgmma) {
    const int di = dim_index(p.head_dim);
    void* twin = di >= 0 && di < 2 ? m.wgmma_twin[p.paged != 0][c.dtype][di] : nullptr;
    k.producer_twin = runs_producer_twin(c, m, twin);
    if (k.producer_twin) k.fn = twin;
  }
  if (k.id == KernelId::tiled_keys || k.id == KernelId::tiled_wgmma || k.id == KernelId::tiled_rows) {
    // All query rows of a sequence's KV head (tokens x heads of the group) in tiles.
    const ac_tiled_shape s = module_shape(k.id, p.head_dim, m.arch, k.producer_twin);
    k.grid_x = static_cast<unsigned>(std::min<int64_t>((std::max<int64_t>(c.max_rows, 1) + s.block_m() - 1) / s.block_m(), INT32_MAX));
    k.grid_y = p.hk;
    k.grid_z = p.batch;
    k.threads = s.threads();
    k.smem = s.smem_bytes();
    k.fold_rows = s.folds_split_merge() ? s.block_m() : 0;
    k.splits = std::min(65535 / std::max(p.batch, 1),  // grid z holds sequences x splits
                        choose_tiled_splits(static_cast<int64_t>(k.grid_x) * p.hk * p.batch, m.multiprocessors,
                                            s.blocks_per_sm, c.max_keys, s.block_n));
    return settle_splits(c, k);
  }
  const bool decode = k.id == KernelId::decode;
  k.grid_x = p.total_q, k.grid_y = p.hk, k.grid_z = 1;
  k.threads = decode ? AC_DECODE_THREADS : AC_THREADS;
  k.splits = choose_splits(static_cast<int64_t>(p.total_q) * p.hk, m.multiprocessors, c.max_keys, decode ? 512 : 256);
  return settle_splits(c, k);
}

// AITER_COMPAT_SELFTEST_FAULT (test-only): a wrong result without an error, as a faulty kernel
// would give; logits scaled for the attention rows, the sink dropped by the merges.
void inject_fault(const AttentionLaunch& c, KernelId id, ac_attention_params& p) {
  if (selftest_fault().applies(id, c.dtype, p.head_dim)) p.scale *= 1.5f;
}

// Plans, and while the chosen row (or the split merge, when the plan splits) has no verdict,
// lets the caller's check give it one and plans again. Each pass settles one family.
Plan checked_plan(const AttentionLaunch& c, const LoadedModule& m) {
  Plan k = plan(c, m);
  if (!c.check || c.only_row) return k;
  for (int pass = 0; pass < 8; ++pass) {
    const FamilyKey row{c.vendor, c.device, k.id, c.dtype, c.params.head_dim};
    const FamilyKey merge{c.vendor, c.device, KernelId::split_merge, c.dtype, c.params.head_dim_v};
    const FamilyKey* open = verdict_of(row) == Verdict::unknown ? &row
                            : k.splits > 1 && verdict_of(merge) == Verdict::unknown ? &merge : nullptr;
    if (!open || c.check(*open, c.stream) == Verdict::unknown) return k;
    k = plan(c, m);
  }
  return k;
}

void run(Vendor v, void* fn, unsigned gx, unsigned gy, unsigned gz, unsigned threads, unsigned smem, void* stream,
         const void* params) {
  void* args[] = {const_cast<void*>(params)};
  launch(v, fn, gx, gy, gz, threads, smem, stream, args);
}

}  // namespace

std::string device_arch(Vendor v, int device) {
  require_runtime(v);
  std::lock_guard lock(g_mutex);
  return info_of(v, device).arch;
}

LaunchPlan plan_attention(const AttentionLaunch& c) {
  require_runtime(c.vendor);
  if (c.params.total_q == 0 || c.params.hq == 0) return {};
  DeviceScope scope(c.vendor, c.device);
  const Plan k = checked_plan(c, module_for(c.vendor, c.device));
  return {k.id, k.splits};
}

// Unset, or a value none of these: kTwinsByDefault (as AITER_COMPAT_SPLIT_MERGE's unknown values
// keep its default).
constexpr ProducerTwins kTwinsByDefault = ProducerTwins::never;
ProducerTwins producer_twins() {
  const char* v = std::getenv("AITER_COMPAT_WGMMA_PRODUCER");
  std::string s = v ? v : "";
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
  if (s == "auto") return ProducerTwins::automatic;
  if (s == "1" || s == "on" || s == "always" || s == "true") return ProducerTwins::always;
  if (s == "0" || s == "off" || s == "never" || s == "false") return ProducerTwins::never;
  return kTwinsByDefault;
}

bool split_merge_folded() {
  const char* v = std::getenv("AITER_COMPAT_SPLIT_MERGE");
  if (v && std::string(v) == "fold") return true;
  if (v && std::string(v) == "kernel") return false;
  return kFoldByDefault;
}

void force_row(std::optional<KernelId> row) { g_forced_row.store(row ? static_cast<int>(*row) : -1); }

std::string code_object_id(const std::string& arch) {
  for (const auto& o : code_objects()) {
    if (arch != o.arch) continue;
    uint64_t h = 1469598103934665603ull;  // FNV-1a over the bytes: any rebuilt kernel changes it
    for (size_t i = 0; i < o.size; ++i) h = (h ^ o.data[i]) * 1099511628211ull;
    char text[64];
    std::snprintf(text, sizeof text, "%zu-%016llx", o.size, static_cast<unsigned long long>(h));
    return text;
  }
  return "";
}

KernelId launch_attention(const AttentionLaunch& c) {
  require_runtime(c.vendor);
  if (c.params.total_q == 0 || c.params.hq == 0) return KernelId::generic;
  DeviceScope scope(c.vendor, c.device);
  const LoadedModule& m = module_for(c.vendor, c.device);
  Plan k = checked_plan(c, m);
  ac_attention_params p = c.params;
  inject_fault(c, k.id, p);
  p.num_splits = k.splits;
  ac_set_divisors(p);  // the kernels divide by the group and the split count through these
  if (p.num_splits == 1) {
    run(c.vendor, k.fn, k.grid_x, k.grid_y, k.grid_z, k.threads, k.smem, c.stream, &p);
    return k.id;
  }
  // Partial outputs and (max, sum) per split live in stream-ordered scratch memory, and so do the
  // folded merge's counters: one per (KV head, sequence, m-tile), laid out by the rows before each
  // sequence (kernel_params.h), whatever max_seqlen_q the caller gave.
  const int di = dim_index(p.head_dim);
  void* folded = k.id == KernelId::tiled_keys && di >= 0 ? m.keys_fold[p.paged != 0][c.dtype][di] : nullptr;
  const bool fold = k.fold_rows > 0 && m.zero_counts && folded && split_merge_folded();
  const int64_t per_head =
      fold ? (static_cast<int64_t>(p.total_q) * (p.hq / p.hk) + k.fold_rows - 1) / k.fold_rows + p.batch : 0;
  const int64_t counts = per_head * p.hk;
  if (counts > INT32_MAX) throw GpuError("split-KV counters beyond 2^31 (batch x KV heads x m-tiles)");
  // The (max, sum) pairs are read 8 bytes at a time and the partial rows 16: their region starts
  // on a 16-byte boundary whatever the head dim (an odd one leaves the rows 4-byte aligned).
  const size_t out_bytes = (sizeof(float) * p.num_splits * p.total_q * p.hq * p.head_dim_v + 15) / 16 * 16;
  const size_t ml_bytes = sizeof(float) * p.num_splits * p.total_q * p.hq * 2;
  p.split_counts = nullptr, p.counts_per_head = 0;  // the merge kernel merges unless set below
  void* scratch = scratch_alloc(c.vendor, c.device, out_bytes + ml_bytes + sizeof(uint32_t) * counts, c.stream);
  p.partial_out = static_cast<float*>(scratch);
  p.partial_ml = reinterpret_cast<float*>(static_cast<char*>(scratch) + out_bytes);
  // The call's second kernel (the split kernel after the zeroing, or the merge after the split
  // kernel) as the first's programmatic dependent where the GPU takes one, else after it.
  const bool dependent = m.dependent_merge && !flag_set("AITER_COMPAT_NO_PDL");
  auto second = [&](void* fn, unsigned gx, unsigned gy, unsigned gz, unsigned threads, unsigned smem, ac_attention_params* q) {
    void* args[] = {q};
    if (!dependent || !launch_dependent(c.vendor, fn, gx, gy, gz, threads, smem, c.stream, args))
      run(c.vendor, fn, gx, gy, gz, threads, smem, c.stream, q);
  };
  // The self-test's fault for the split merge: its sink dropped, wherever it merges.
  const bool drop_merge_sink = selftest_fault().applies(KernelId::split_merge, c.dtype, p.head_dim_v);
  try {
    if (fold) {
      p.split_counts = reinterpret_cast<uint32_t*>(static_cast<char*>(scratch) + out_bytes + ml_bytes);
      p.counts_per_head = static_cast<int32_t>(per_head);
      if (drop_merge_sink) p.sinks = nullptr;  // the split kernel reads the sinks only to merge
      int32_t n = static_cast<int32_t>(counts);
      void* zero_args[] = {&p.split_counts, &n};
      const unsigned zero_blocks = static_cast<unsigned>(std::min<int64_t>((counts + AC_THREADS - 1) / AC_THREADS, 1024));
      launch(c.vendor, m.zero_counts, zero_blocks, 1, 1, AC_THREADS, 0, c.stream, zero_args);
      second(folded, k.grid_x, k.grid_y, k.grid_z * p.num_splits, k.threads, k.smem, &p);
    } else {
      run(c.vendor, k.fn, k.grid_x, k.grid_y, k.grid_z * p.num_splits, k.threads, k.smem, c.stream, &p);
      ac_attention_params merge = p;
      if (drop_merge_sink) merge.sinks = nullptr;
      second(m.split_merge[c.dtype], p.total_q, p.hq, 1, AC_THREADS, 0, &merge);
    }
  } catch (...) {
    try {
      scratch_free(c.vendor, scratch, c.stream);
    } catch (...) {  // the launch's error is the one to report
    }
    throw;
  }
  scratch_free(c.vendor, scratch, c.stream);
  return k.id;
}

void launch_merge_states(const ac_merge_params& p, int dtype, Vendor v, int device, void* stream) {
  require_runtime(v);
  if (p.tokens == 0 || p.heads == 0) return;
  DeviceScope scope(v, device);
  const LoadedModule& m = module_for(v, device);
  ac_merge_params q = p;
  if (selftest_fault().applies(KernelId::merge_states, dtype, p.dim)) q.sinks = nullptr;
  run(v, m.merge_states[dtype], p.tokens, p.heads, 1, AC_THREADS, 0, stream, &q);
}

void launch_split_rows(const ac_split_rows_params& p, Vendor v, int device, void* stream) {
  require_runtime(v);
  if (p.slots == 0) return;
  DeviceScope scope(v, device);
  const LoadedModule& m = module_for(v, device);
  if (!m.split_rows) throw GpuError("the code object for " + m.arch + " has no ac_split_rows kernel");
  run(v, m.split_rows, static_cast<unsigned>(p.slots), 1, 1, AC_THREADS, 0, stream, &p);
}

}  // namespace aiter_compat::gpu
