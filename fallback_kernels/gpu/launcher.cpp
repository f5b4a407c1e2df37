#include "launcher.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <mutex>

#include "aiter_compat/probe/gpu_probe.hpp"
#include "code_objects.hpp"
#include "gpu_runtime.hpp"
#include "kernel_params.h"

namespace aiter_compat::gpu {
namespace {

std::string cuda_message(int rc) {
  const char* text = nullptr;
  if (cuda().cuGetErrorString) cuda().cuGetErrorString(rc, &text);
  return text ? text : "CUDA error " + std::to_string(rc);
}

std::string hip_message(int rc) {
  const char* text = hip().hipGetErrorString ? hip().hipGetErrorString(rc) : nullptr;
  return text ? text : "HIP error " + std::to_string(rc);
}

void check(DeviceKind kind, int rc, const char* what) {
  if (rc != 0) throw GpuError(std::string(what) + " failed: " + (kind == DeviceKind::cuda ? cuda_message(rc) : hip_message(rc)));
}

void require_runtime(DeviceKind kind) {
  const std::string& error = kind == DeviceKind::cuda ? cuda().error : hip().error;
  if (kind != DeviceKind::cuda && kind != DeviceKind::rocm) throw GpuError("no GPU runtime for " + to_string(kind));
  if (!error.empty()) throw GpuError(error);
}

// Makes `device` current for the scope and puts the caller's choice back afterwards.
class DeviceScope {
 public:
  DeviceScope(DeviceKind kind, int device) : kind_(kind) {
    if (kind == DeviceKind::cuda) {
      check(kind, cuda().cuCtxGetCurrent(&saved_ctx_), "cuCtxGetCurrent");
      void* primary = nullptr;
      static std::mutex mutex;
      static std::map<int, void*> retained;  // primary contexts stay retained for the process
      {
        std::lock_guard lock(mutex);
        auto it = retained.find(device);
        if (it == retained.end()) {
          int dev = 0;
          check(kind, cuda().cuDeviceGet(&dev, device), "cuDeviceGet");
          check(kind, cuda().cuDevicePrimaryCtxRetain(&primary, dev), "cuDevicePrimaryCtxRetain");
          it = retained.emplace(device, primary).first;
        }
        primary = it->second;
      }
      if (primary != saved_ctx_) check(kind, cuda().cuCtxSetCurrent(primary), "cuCtxSetCurrent");
      changed_ = primary != saved_ctx_;
    } else {
      check(kind, hip().hipGetDevice(&saved_device_), "hipGetDevice");
      changed_ = saved_device_ != device;
      if (changed_) check(kind, hip().hipSetDevice(device), "hipSetDevice");
    }
  }
  ~DeviceScope() {
    if (!changed_) return;
    if (kind_ == DeviceKind::cuda) cuda().cuCtxSetCurrent(saved_ctx_);
    else hip().hipSetDevice(saved_device_);
  }

 private:
  DeviceKind kind_;
  bool changed_ = false;
  void* saved_ctx_ = nullptr;
  int saved_device_ = 0;
};

// Index of a dtype in the per-type tables: f32, f16, bf16.
int type_index(DType t) { return t == DType::f32 ? 0 : t == DType::f16 ? 1 : 2; }
constexpr const char* kTypes[] = {"f32", "f16", "bf16"};
// The kernels read sinks in the caller's dtype (validate_* let float32, float16, bfloat16 in).
int32_t sink_type(DType t) { return t == DType::f16 ? AC_SINK_F16 : t == DType::bf16 ? AC_SINK_BF16 : AC_SINK_F32; }

// A module's kernels, looked up by name once at load; calls index these tables (null where the
// code object has no such kernel: the tiled ones off NVIDIA, 16-bit-only kernels for f32).
struct LoadedModule {
  void* module = nullptr;
  std::string arch;
  int multiprocessors = 0;
  void* attention[3] = {};
  void* merge[3] = {};
  void* merge_states[3] = {};
  void* decode[3][2] = {};         // [type][d64, d128]
  void* tiled[3][2][3][2] = {};    // [TiledShape][contiguous, paged][type][d64, d128]
  int device = 0;
  // CUDA: split-KV scratch outside graph capture, made at the first eager split call (null:
  // none); both under scratch_pool_mutex.
  void* scratch_pool = nullptr;
  bool scratch_pool_tried = false;
};

std::mutex scratch_pool_mutex;

// CUmemPoolProps (88 bytes in every CUDA 11.2+ header): pinned device memory, no export handles.
struct CudaPoolProps {
  int alloc_type = 1;      // CU_MEM_ALLOCATION_TYPE_PINNED
  int handle_types = 0;    // CU_MEM_HANDLE_TYPE_NONE
  int location_type = 1;   // CU_MEM_LOCATION_TYPE_DEVICE
  int location_id = 0;
  void* win32_security_attributes = nullptr;
  unsigned char reserved[64] = {};
};
static_assert(sizeof(CudaPoolProps) == 88, "CUmemPoolProps layout");

// A memory pool of our own for the split-KV scratch of eager calls. The device's default pool
// hands its memory back to the driver at every synchronisation (release threshold 0), so each
// call after one paid ~100 us to map it again; this pool keeps what it has (at most the largest
// scratch in flight at once, a few MB). Null where the driver cannot make one: calls then use
// the default pool, as under graph capture, where allocations become the graph's own nodes.
void* make_scratch_pool(int device) {
  CudaPoolProps props;
  props.location_id = device;
  void* pool = nullptr;
  if (cuda().cuMemPoolCreate(&pool, &props) != 0) return nullptr;
  unsigned long long keep = ~0ull;
  cuda().cuMemPoolSetAttribute(pool, 4 /* CU_MEMPOOL_ATTR_RELEASE_THRESHOLD */, &keep);
  return pool;
}

ac_tiled_shape shape_of(TiledShape shape, int head_dim) {
  return shape == TiledShape::keys ? ac_tiled_keys_shape(head_dim)
         : shape == TiledShape::wgmma ? ac_tiled_wgmma_shape(head_dim)
                                      : ac_tiled_rows_shape(head_dim);
}

// AITER_COMPAT_NO_WGMMA=1 keeps prefill on the mma.sync "rows" kernels where the warpgroup ones
// exist (to compare the two, or to step around a fault in one); read when a module loads.
bool wgmma_disabled() {
  const char* v = std::getenv("AITER_COMPAT_NO_WGMMA");
  return v && *v && std::string(v) != "0";
}

std::string arch_of(DeviceKind kind, int device) {
  if (kind == DeviceKind::cuda) {
    int dev = 0, major = 0, minor = 0;
    check(kind, cuda().cuDeviceGet(&dev, device), "cuDeviceGet");
    check(kind, cuda().cuDeviceGetAttribute(&major, 75, dev), "cuDeviceGetAttribute");
    check(kind, cuda().cuDeviceGetAttribute(&minor, 76, dev), "cuDeviceGetAttribute");
    return "sm_" + std::to_string(major * 10 + minor);
  }
  alignas(16) static thread_local unsigned char props[16384];
  std::fill(std::begin(props), std::end(props), 0);
  check(kind, hip().hipGetDevicePropertiesR0600(props, device), "hipGetDeviceProperties");
  return gfx_arch_from_properties(props, sizeof props);
}

// Module of the device, loaded on first use (under the lock: loading is rare).
LoadedModule& module_for(DeviceKind kind, int device) {
  static std::mutex mutex;
  static std::map<std::pair<int, int>, LoadedModule> modules;
  std::lock_guard lock(mutex);
  auto key = std::make_pair(static_cast<int>(kind), device);
  auto it = modules.find(key);
  if (it != modules.end()) return it->second;
  LoadedModule m;
  m.arch = arch_of(kind, device);
  const CodeObject* object = nullptr;
  std::string built;
  for (const auto& o : code_objects()) {
    built += (built.empty() ? "" : ", ") + std::string(o.arch);
    if (m.arch == o.arch) object = &o;
  }
  if (!object)
    throw GpuError("no fallback code object for " + m.arch + " (built for: " + (built.empty() ? "none" : built) + ")");
  if (kind == DeviceKind::cuda) {
    check(kind, cuda().cuModuleLoadData(&m.module, object->data), "cuModuleLoadData");
    int dev = 0;
    check(kind, cuda().cuDeviceGet(&dev, device), "cuDeviceGet");
    check(kind, cuda().cuDeviceGetAttribute(&m.multiprocessors, 16, dev), "cuDeviceGetAttribute");
    m.device = dev;
  } else {
    check(kind, hip().hipModuleLoadData(&m.module, object->data), "hipModuleLoadData");
    m.multiprocessors = 120;  // MI200/MI300 have 104-304 CUs; the split count only needs a scale
  }
  std::map<std::string, void*> functions;  // every kernel the code object must hold
  for (const auto& family : kernel_families()) {
    if (!family.built_for(m.arch)) continue;
    for (const auto& name : family.functions) {
      if (functions.count(name)) continue;
      void* fn = nullptr;
      if (kind == DeviceKind::cuda) check(kind, cuda().cuModuleGetFunction(&fn, m.module, name.c_str()), name.c_str());
      else check(kind, hip().hipModuleGetFunction(&fn, m.module, name.c_str()), name.c_str());
      functions[name] = fn;
    }
  }
  auto find = [&](const std::string& name) {
    auto it = functions.find(name);
    return it == functions.end() ? nullptr : it->second;
  };
  const bool wgmma = !wgmma_disabled();
  for (int t = 0; t < 3; ++t) {
    m.attention[t] = find(std::string("ac_attention_") + kTypes[t]);
    m.merge[t] = find(std::string("ac_merge_") + kTypes[t]);
    m.merge_states[t] = find(std::string("ac_merge_states_") + kTypes[t]);
    for (int d = 0; d < 2; ++d) {
      const int dim = d ? 128 : 64;
      m.decode[t][d] = find(std::string("ac_decode_") + kTypes[t] + "_d" + std::to_string(dim));
      for (TiledShape shape : {TiledShape::rows, TiledShape::keys, TiledShape::wgmma})
        for (int paged = 0; paged < 2; ++paged) {
          if (shape == TiledShape::wgmma && !wgmma) continue;
          void* fn = find(tiled_kernel_name(shape, paged, kTypes[t], dim));
          if (!fn) continue;
          // More dynamic shared memory than the default 48 KB.
          check(kind, cuda().cuFuncSetAttribute(fn, 8 /* MAX_DYNAMIC_SHARED_SIZE_BYTES */, shape_of(shape, dim).smem_bytes()),
                "cuFuncSetAttribute");
          m.tiled[static_cast<int>(shape)][paged][t][d] = fn;
        }
    }
  }
  return modules.emplace(key, std::move(m)).first->second;
}

template <typename Params>
void launch(DeviceKind kind, void* fn, unsigned gx, unsigned gy, unsigned gz, void* stream, Params& p,
            unsigned threads = AC_THREADS, unsigned smem = 0) {
  void* args[] = {&p};
  int rc = kind == DeviceKind::cuda
               ? cuda().cuLaunchKernel(fn, gx, gy, gz, threads, 1, 1, smem, stream, args, nullptr)
               : hip().hipModuleLaunchKernel(fn, gx, gy, gz, threads, 1, 1, smem, stream, args, nullptr);
  check(kind, rc, "kernel launch");
}

// Splits the keys of each query across blocks when the grid alone would leave the GPU idle,
// keeping at least min_keys keys per split.
int choose_splits(int64_t blocks, int multiprocessors, int64_t max_keys, int64_t min_keys) {
  if (blocks >= 2 * multiprocessors || max_keys <= min_keys) return 1;
  int64_t want = (2 * multiprocessors + blocks - 1) / blocks;
  return static_cast<int>(std::clamp<int64_t>(std::min<int64_t>(want, max_keys / min_keys), 1, AC_MAX_SPLITS));
}

bool aligned16(const void* ptr) { return reinterpret_cast<uintptr_t>(ptr) % 16 == 0; }

// 16-byte rows of q, k and v: 16-bit elements, head dim 64 or 128, 8-element strides.
bool rows_load_16_bytes(const ac_attention_params& p, DType dtype) {
  const bool strides = p.q_tok % 8 == 0 && p.q_head % 8 == 0 && p.k_tok % 8 == 0 && p.k_slot % 8 == 0 &&
                       p.k_head % 8 == 0 && p.v_tok % 8 == 0 && p.v_slot % 8 == 0 && p.v_head % 8 == 0;
  return (dtype == DType::bf16 || dtype == DType::f16) && (p.head_dim == 64 || p.head_dim == 128) &&
         p.head_dim_v == p.head_dim && aligned16(p.q) && aligned16(p.k) && aligned16(p.v) && strides;
}

// The decode kernel takes one query per sequence over a paged cache with 16-byte rows.
bool decode_kernel_fits(const ac_attention_params& p, DType dtype) {
  return p.paged && p.uniform_q == 1 && p.hq / p.hk <= AC_DECODE_MAX_GROUP && rows_load_16_bytes(p, dtype);
}

// The tiled kernels also store 16 bytes of the output at a time.
bool tiled_kernel_fits(const ac_attention_params& p, DType dtype) {
  return rows_load_16_bytes(p, dtype) && aligned16(p.out) && p.out_tok % 8 == 0 && p.out_head % 8 == 0;
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
  void* fn = nullptr;
  unsigned grid_x = 0, grid_y = 0, grid_z = 0, threads = AC_THREADS, smem = 0;
  int splits = 1;
};

Plan plan(const ac_attention_params& p, DType dtype, const LoadedModule& m, int64_t max_keys, int64_t max_q) {
  Plan k;
  const int t = type_index(dtype), d = p.head_dim == 128;
  // Tiled: all query rows of a sequence's KV head (tokens x heads of the group) in tiles; "keys"
  // when they fit one 16-row tile (decode), else "rows".
  const int64_t rows = std::max<int64_t>(max_q, 1) * (p.hq / p.hk);
  // Rows on the warpgroup MMA where the module has it (sm_90).
  TiledShape shape = rows <= 16 ? TiledShape::keys : TiledShape::rows;
  if (shape == TiledShape::rows && m.tiled[static_cast<int>(TiledShape::wgmma)][p.paged != 0][t][d]) shape = TiledShape::wgmma;
  void* tiled = m.tiled[static_cast<int>(shape)][p.paged != 0][t][d];
  if (tiled && tiled_kernel_fits(p, dtype) && p.batch <= 65535) {
    const ac_tiled_shape s = shape_of(shape, p.head_dim);
    k.fn = tiled;
    k.grid_x = static_cast<unsigned>(std::min<int64_t>((rows + s.block_m() - 1) / s.block_m(), INT32_MAX));
    k.grid_y = p.hk;
    k.grid_z = p.batch;
    k.threads = s.threads();
    k.smem = s.smem_bytes();
    k.splits = std::min(65535 / std::max(p.batch, 1),  // grid z holds sequences x splits
                        choose_tiled_splits(static_cast<int64_t>(k.grid_x) * p.hk * p.batch, m.multiprocessors,
                                            s.blocks_per_sm, max_keys, s.block_n));
    return k;
  }
  const bool decode = decode_kernel_fits(p, dtype);
  k.fn = decode ? m.decode[t][d] : m.attention[t];  // present: module_for checked every family
  k.grid_x = p.total_q, k.grid_y = p.hk, k.grid_z = 1;
  k.threads = decode ? AC_DECODE_THREADS : AC_THREADS;
  k.splits = choose_splits(static_cast<int64_t>(p.total_q) * p.hk, m.multiprocessors, max_keys, decode ? 512 : 256);
  return k;
}

void run(ac_attention_params p, DType dtype, DeviceKind kind, int device, void* stream, int64_t max_keys,
         int64_t max_q) {
  require_runtime(kind);
  if (p.total_q == 0 || p.hq == 0) return;
  DeviceScope scope(kind, device);
  LoadedModule& m = module_for(kind, device);
  const Plan k = plan(p, dtype, m, max_keys, max_q);
  p.num_splits = k.splits;
  if (p.num_splits == 1) {
    launch(kind, k.fn, k.grid_x, k.grid_y, k.grid_z, stream, p, k.threads, k.smem);
    return;
  }
  // Partial outputs and (max, sum) per split live in stream-ordered scratch memory.
  const size_t out_bytes = sizeof(float) * p.num_splits * p.total_q * p.hq * p.head_dim_v;
  const size_t ml_bytes = sizeof(float) * p.num_splits * p.total_q * p.hq * 2;
  void* scratch = nullptr;
  if (kind == DeviceKind::cuda) {
    unsigned long long ptr = 0;
    int capturing = 0;  // CU_STREAM_CAPTURE_STATUS_NONE
    if (cuda().cuStreamIsCapturing(stream, &capturing) != 0) capturing = 1;  // unsure: the graph-safe path
    // The pool is made outside capture only (a capture may forbid calls that are not stream work).
    void* pool = nullptr;
    if (capturing == 0) {
      std::lock_guard lock(scratch_pool_mutex);
      if (!m.scratch_pool_tried) m.scratch_pool = make_scratch_pool(m.device), m.scratch_pool_tried = true;
      pool = m.scratch_pool;
    }
    if (pool)
      check(kind, cuda().cuMemAllocFromPoolAsync(&ptr, out_bytes + ml_bytes, pool, stream), "cuMemAllocFromPoolAsync");
    else
      check(kind, cuda().cuMemAllocAsync(&ptr, out_bytes + ml_bytes, stream), "cuMemAllocAsync");
    scratch = reinterpret_cast<void*>(ptr);
  } else {
    check(kind, hip().hipMallocAsync(&scratch, out_bytes + ml_bytes, stream), "hipMallocAsync");
  }
  p.partial_out = static_cast<float*>(scratch);
  p.partial_ml = reinterpret_cast<float*>(static_cast<char*>(scratch) + out_bytes);
  try {
    launch(kind, k.fn, k.grid_x, k.grid_y, k.grid_z * p.num_splits, stream, p, k.threads, k.smem);
    launch(kind, m.merge[type_index(dtype)], p.total_q, p.hq, 1, stream, p);
  } catch (...) {
    if (kind == DeviceKind::cuda) cuda().cuMemFreeAsync(reinterpret_cast<unsigned long long>(scratch), stream);
    else hip().hipFreeAsync(scratch, stream);
    throw;
  }
  if (kind == DeviceKind::cuda) check(kind, cuda().cuMemFreeAsync(reinterpret_cast<unsigned long long>(scratch), stream), "cuMemFreeAsync");
  else check(kind, hip().hipFreeAsync(scratch, stream), "hipFreeAsync");
}

ac_attention_params common(const TensorView& q, const TensorView& out, const TensorView& lse, const TensorView& sinks,
                           double scale, bool causal, const Window& w, int64_t hk, int64_t dv) {
  ac_attention_params p{};
  p.q = q.data;
  p.out = out.data;
  p.lse = static_cast<float*>(lse.data);
  p.sinks = sinks.defined() ? sinks.data : nullptr;
  p.sink_stride = sinks.defined() ? sinks.strides[0] : 0;
  p.sink_type = sink_type(sinks.dtype);
  p.hq = static_cast<int32_t>(q.shape[q.ndim - 2]);
  p.hk = static_cast<int32_t>(hk);
  p.head_dim = static_cast<int32_t>(q.shape[q.ndim - 1]);
  p.head_dim_v = static_cast<int32_t>(dv);
  p.scale = static_cast<float>(scale > 0 ? scale : 1.0 / std::sqrt(static_cast<double>(p.head_dim)));
  p.causal = causal;
  p.window_left = static_cast<int32_t>(std::min<int64_t>(w.left, INT32_MAX));
  p.window_right = static_cast<int32_t>(std::min<int64_t>(w.right, INT32_MAX));
  p.num_splits = 1;
  return p;
}

}  // namespace

std::string device_arch(DeviceKind kind, int device) {
  require_runtime(kind);
  return arch_of(kind, device);
}

void varlen_attention(const VarlenArgs& a, void* stream) {
  const int hd = a.batch_layout ? 2 : 1;
  ac_attention_params p = common(a.q, a.out, a.lse, a.sinks, a.softmax_scale, a.causal, a.window,
                                 a.k.shape[hd], a.v.shape[a.v.ndim - 1]);
  p.k = a.k.data;
  p.v = a.v.data;
  // Tokens are addressed with one stride: a batch layout must have its sequences back to back.
  auto token_stride = [&](const TensorView& t, const char* name) {
    if (a.batch_layout && t.shape[0] > 1 && t.strides[0] != t.shape[1] * t.strides[1])
      throw GpuError(std::string(name) + ": the GPU kernels need [batch, seqlen] contiguous (stride " +
                     std::to_string(t.strides[0]) + ", needed " + std::to_string(t.shape[1] * t.strides[1]) + ")");
    return t.strides[hd - 1];
  };
  p.q_tok = token_stride(a.q, "q"), p.q_head = a.q.strides[hd];
  p.k_tok = token_stride(a.k, "k"), p.k_head = a.k.strides[hd];
  p.v_tok = token_stride(a.v, "v"), p.v_head = a.v.strides[hd];
  p.out_tok = token_stride(a.out, "out"), p.out_head = a.out.strides[hd];
  if (a.lse.defined()) {
    p.lse_batch = a.batch_layout ? a.lse.strides[0] : 0;
    p.lse_head = a.lse.strides[a.batch_layout ? 1 : 0];
    p.lse_tok = a.lse.strides[a.batch_layout ? 2 : 1];
  }
  if (a.batch_layout) {
    p.batch = static_cast<int32_t>(a.q.shape[0]);
    p.uniform_q = static_cast<int32_t>(a.q.shape[1]);
    p.uniform_k = static_cast<int32_t>(a.k.shape[1]);
    p.total_q = p.batch * p.uniform_q;
    p.total_k = p.batch * p.uniform_k;
  } else {
    p.cu_seqlens_q = static_cast<const int32_t*>(a.cu_seqlens_q.data);
    p.cu_seqlens_k = static_cast<const int32_t*>(a.cu_seqlens_k.data);
    p.batch = static_cast<int32_t>(a.cu_seqlens_q.shape[0] - 1);
    p.total_q = static_cast<int32_t>(a.q.shape[0]);
    p.total_k = static_cast<int32_t>(a.k.shape[0]);
  }
  int64_t max_keys = a.batch_layout ? a.k.shape[1] : a.max_seqlen_k;
  if (a.window.left >= 0) max_keys = std::min<int64_t>(max_keys, a.window.left + 1 + std::max<int64_t>(a.window.right, 0));
  // Queries per sequence: the batch layout's length, else max_seqlen_q (an underestimate costs
  // time, not results: the tiled kernels loop over a sequence's row tiles).
  const int64_t max_q = a.batch_layout ? a.q.shape[1] : a.max_seqlen_q > 0 ? a.max_seqlen_q : a.q.shape[0];
  run(p, a.q.dtype, a.q.device, a.q.device_id, stream, max_keys, max_q);
}

void paged_attention(const PagedArgs& a, void* stream) {
  ac_attention_params p = common(a.q, a.out, a.lse, a.sinks, a.softmax_scale, a.causal, a.window,
                                 a.k_cache.shape[2], a.v_cache.shape[3]);
  p.paged = 1;
  p.k = a.k_cache.data;
  p.v = a.v_cache.data;
  p.q_tok = a.q.strides[0], p.q_head = a.q.strides[1];
  p.k_tok = a.k_cache.strides[0], p.k_slot = a.k_cache.strides[1], p.k_head = a.k_cache.strides[2];
  p.v_tok = a.v_cache.strides[0], p.v_slot = a.v_cache.strides[1], p.v_head = a.v_cache.strides[2];
  p.out_tok = a.out.strides[0], p.out_head = a.out.strides[1];
  if (a.lse.defined()) p.lse_head = a.lse.strides[0], p.lse_tok = a.lse.strides[1];
  p.block_table = static_cast<const int32_t*>(a.block_table.data);
  p.bt_row = a.block_table.strides[0], p.bt_col = a.block_table.strides[1];
  p.seqused_k = static_cast<const int32_t*>(a.seqused_k.data);
  p.num_blocks = static_cast<int32_t>(a.k_cache.shape[0]);
  p.block_size = static_cast<int32_t>(a.k_cache.shape[1]);
  p.max_blocks = static_cast<int32_t>(a.block_table.shape[1]);
  p.batch = static_cast<int32_t>(a.block_table.shape[0]);
  p.total_q = static_cast<int32_t>(a.q.shape[0]);
  // One query per sequence (decode) needs no cu_seqlens_q: given, or implied by batch == tokens
  // with max_seqlen_q == 1.
  if (a.one_query_per_sequence || (p.batch == p.total_q && a.max_seqlen_q == 1)) p.uniform_q = 1;
  else p.cu_seqlens_q = static_cast<const int32_t*>(a.cu_seqlens_q.data);
  int64_t max_keys = a.max_seqlen_k > 0 ? a.max_seqlen_k : static_cast<int64_t>(p.max_blocks) * p.block_size;
  if (a.window.left >= 0) max_keys = std::min<int64_t>(max_keys, a.window.left + 1 + std::max<int64_t>(a.window.right, 0));
  const int64_t max_q = p.uniform_q == 1 ? 1 : a.max_seqlen_q > 0 ? a.max_seqlen_q : a.q.shape[0];
  run(p, a.q.dtype, a.q.device, a.q.device_id, stream, max_keys, max_q);
}

void merge_states(const MergeArgs& a, void* stream) {
  const DeviceKind kind = a.output.device;
  require_runtime(kind);
  ac_merge_params p{};
  p.out = a.output.data;
  p.prefix = a.prefix_output.data;
  p.suffix = a.suffix_output.data;
  p.prefix_lse = static_cast<const float*>(a.prefix_lse.data);
  p.suffix_lse = static_cast<const float*>(a.suffix_lse.data);
  p.out_lse = static_cast<float*>(a.output_lse.data);
  p.sinks = a.sinks.defined() ? a.sinks.data : nullptr;
  p.sink_stride = a.sinks.defined() ? a.sinks.strides[0] : 0;
  p.sink_type = sink_type(a.sinks.dtype);
  p.out_tok = a.output.strides[0], p.out_head = a.output.strides[1];
  p.prefix_tok = a.prefix_output.strides[0], p.prefix_head = a.prefix_output.strides[1];
  p.suffix_tok = a.suffix_output.strides[0], p.suffix_head = a.suffix_output.strides[1];
  p.plse_head = a.prefix_lse.strides[0], p.plse_tok = a.prefix_lse.strides[1];
  p.slse_head = a.suffix_lse.strides[0], p.slse_tok = a.suffix_lse.strides[1];
  if (a.output_lse.defined()) p.olse_head = a.output_lse.strides[0], p.olse_tok = a.output_lse.strides[1];
  p.tokens = static_cast<int32_t>(a.output.shape[0]);
  p.heads = static_cast<int32_t>(a.output.shape[1]);
  p.dim = static_cast<int32_t>(a.output.shape[2]);
  if (p.tokens == 0 || p.heads == 0) return;
  DeviceScope scope(kind, a.output.device_id);
  LoadedModule& m = module_for(kind, a.output.device_id);
  launch(kind, m.merge_states[type_index(a.output.dtype)], p.tokens, p.heads, 1, stream, p);
}

}  // namespace aiter_compat::gpu
