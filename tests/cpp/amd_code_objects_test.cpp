// The AMD code objects as built, read with LLVM's tools (llvm-readelf's kernel metadata notes,
// llvm-objdump's disassembly): no AMD GPU runs them here, so what can be checked of the
// machine code is checked before anyone's GPU sees it. For every gfx* code object:
//   - no kernel uses scratch (private segment 0, no spills): a spill would mean the register
//     budget below was bought with memory traffic;
//   - every kernel fits 256 registers (VGPRs + AGPRs), so that two waves share a SIMD; a
//     tiled shape that asks for one wave per SIMD (head dim 256's rows: kernel_params.h) 512
//     on CDNA; 256 VGPRs on RDNA3/RDNA4 (a wave's most); on gfx1250, whose waves address 1024
//     VGPRs, 512 at two waves per SIMD and 1024 at one;
//   - every tiled kernel has the arch's matrix instructions, v_mfma on CDNA, v_wmma on RDNA3,
//     RDNA4 and gfx1250 (its 16 x 16 x 32 forms alone there), and no other kind (it is the
//     matrix-instruction path, not a scalar fallback the compiler made of it);
//   - LDS, static plus the dynamic size the launcher requests (the kernel table's shape), is
//     within the arch's budget: 64 KiB per workgroup on gfx90a, gfx942 and RDNA, 160 KiB on
//     gfx950, 320 KiB on gfx1250;
//   - the wavefront size is the arch's: 64 on CDNA (gfx9), 32 on RDNA3/RDNA4 and gfx1250.
// It prints the per-kernel table docs/kernel-notes.md quotes.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <regex>
#include <sstream>
#include <string>

#include "aiter_compat/gpu_runtime/code_objects.hpp"
#include "aiter_compat/gpu_runtime/kernel_table.hpp"

using namespace aiter_compat;

namespace {

struct KernelResources {
  int vgpr = -1, agpr = -1, sgpr = -1, lds = -1, scratch = -1, vgpr_spill = 0, sgpr_spill = 0, wave = 0;
  int mfma = 0;
};

std::string run(const std::string& cmd) {
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(cmd.c_str(), "r"), pclose);
  if (!pipe) return "";
  std::string out;
  std::array<char, 4096> buf;
  for (size_t n; (n = fread(buf.data(), 1, buf.size(), pipe.get())) > 0;) out.append(buf.data(), n);
  return out;
}

// The kernels' entries of the AMDGPU metadata note (YAML as llvm-readelf prints it): each
// kernel is an item "  - .key: value" of amdhsa.kernels, its own keys four spaces in; the
// deeper items (.args) are skipped.
std::map<std::string, KernelResources> read_notes(const std::string& text) {
  std::map<std::string, KernelResources> kernels;
  std::map<std::string, std::string> fields;
  auto flush = [&] {
    if (fields.count(".name")) {
      KernelResources k;
      auto num = [&](const char* key, int fallback) { return fields.count(key) ? std::stoi(fields[key]) : fallback; };
      k.vgpr = num(".vgpr_count", -1), k.agpr = num(".agpr_count", 0), k.sgpr = num(".sgpr_count", -1);
      k.lds = num(".group_segment_fixed_size", -1), k.scratch = num(".private_segment_fixed_size", -1);
      k.vgpr_spill = num(".vgpr_spill_count", 0), k.sgpr_spill = num(".sgpr_spill_count", 0);
      k.wave = num(".wavefront_size", 0);
      kernels[fields[".name"]] = k;
    }
    fields.clear();
  };
  static const std::regex item(R"(^  - (\.[a-z_]+):\s*(\S*))"), key(R"(^    (\.[a-z_]+):\s*(\S*))");
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (std::regex_search(line, m, item)) {
      flush();
      fields[m[1]] = m[2];
    } else if (std::regex_search(line, m, key)) {
      fields[m[1]] = m[2];
    }
  }
  flush();
  return kernels;
}

// Instructions whose mnemonic starts with `prefix` (v_mfma, v_wmma) per function of a disassembly.
std::map<std::string, int> count_instructions(const std::string& text, const std::string& prefix) {
  std::map<std::string, int> counts;
  static const std::regex header(R"(^[0-9a-f]+ <([A-Za-z_0-9]+)>:)");
  std::string current;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (std::regex_search(line, m, header)) current = m[1];
    else if (!current.empty() && line.find(prefix) != std::string::npos) ++counts[current];
  }
  return counts;
}

// "ac_tiled_rows_paged_bf16_d64" -> (tiled_rows, 64), the fp8-KV ones ("..._bf16_kv8_d64") too;
// false for the other kernels.
bool tiled_kernel(const std::string& name, gpu::KernelId* id, int* head_dim) {
  static const std::regex re(R"(^ac_tiled_(rows|keys|keys_fold|wgmma)(_paged)?_(bf16|f16)(_kv8)?_d([0-9]+)$)");
  std::smatch m;
  if (!std::regex_match(name, m, re)) return false;
  *id = m[1] == "rows"                           ? gpu::KernelId::tiled_rows
        : m[1] == "keys" || m[1] == "keys_fold" ? gpu::KernelId::tiled_keys
                                                 : gpu::KernelId::tiled_wgmma;
  *head_dim = std::stoi(m[5]);
  return true;
}

bool gfx1250(const std::string& arch) { return arch.rfind("gfx125", 0) == 0; }
int lds_budget(const std::string& arch) { return arch == "gfx950" ? 160 * 1024 : gfx1250(arch) ? 320 * 1024 : 64 * 1024; }
// The registers a lane of one SIMD holds, shared by its waves: 512 (VGPRs + AGPRs) on CDNA, 1024
// VGPRs on gfx1250.
int register_file(const std::string& arch) { return gfx1250(arch) ? 1024 : 512; }

// CDNA (gfx9) runs 64-lane waves; RDNA (gfx10-12) and gfx1250 the kernels' 32-lane ones.
bool cdna(const std::string& arch) { return arch.rfind("gfx9", 0) == 0; }
int wave_size(const std::string& arch) { return cdna(arch) ? 64 : 32; }

// Waves of one kernel a SIMD holds: 512 registers per lane (VGPRs and AGPRs, allocated in
// blocks of 8), 8 waves at most, and the CU's LDS shared by its workgroups (4 SIMDs per CU).
int waves_per_simd(const KernelResources& k, int lds_bytes, int waves_per_group, const std::string& arch) {
  const int regs = (k.vgpr + 7) / 8 * 8 + (k.agpr + 7) / 8 * 8;
  int waves = std::min(8, 512 / std::max(regs, 8));
  if (lds_bytes > 0) {
    const int groups = lds_budget(arch) / lds_bytes;
    waves = std::min(waves, groups * waves_per_group / 4);
  }
  return waves;
}

}  // namespace

TEST(AmdCodeObjects, RegistersScratchLdsAndMatrixInstructions) {
#if defined(LLVM_READELF) && defined(LLVM_OBJDUMP)
  const std::string readelf = LLVM_READELF, objdump = LLVM_OBJDUMP;
#else
  const std::string readelf, objdump;
#endif
  if (readelf.empty() || objdump.empty()) {
    std::printf("[  SKIPPED ] llvm-readelf/llvm-objdump not found at configure time (Debian: llvm-22)\n");
    GTEST_SKIP() << "no LLVM tools to read the AMD code objects";
  }
  int objects = 0;
  for (const auto& object : code_objects()) {
    const std::string arch = object.arch;
    if (!gpu::is_amd_arch(arch)) continue;
    ++objects;
    const std::string path = ::testing::TempDir() + "aiter_compat_" + arch + ".co";
    std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(object.data), static_cast<std::streamsize>(object.size));
    const auto kernels = read_notes(run(readelf + " --notes " + path));
    const std::string text = run(objdump + " -d --no-show-raw-insn " + path);
    const auto mfma = count_instructions(text, "v_mfma"), wmma = count_instructions(text, "v_wmma");
    const auto k32 = count_instructions(text, "v_wmma_f32_16x16x32_");
    // gfx942 and gfx950 decode their own fp8 format in hardware in the tiled kernels over fp8
    // caches (fp8_device.hpp); no other arch has the instruction, and no other kernel uses it.
    const auto fp8_cvt = count_instructions(text, "v_cvt_pk_f32_fp8");
    // The folded split merge's arrival (an atomic add on its counter) is in the keys_fold twins
    // alone: the kernels every other decode runs carry none of the fold's code (tiled_attention.hpp).
    const auto atomics = count_instructions(text, "atomic");
    const bool fp8_hardware = arch == "gfx942" || arch == "gfx950";
    // The tiled kernels' instruction on this arch, and the one it must not hold.
    const auto& matrix = cdna(arch) ? mfma : wmma;
    const auto& other = cdna(arch) ? wmma : mfma;
    const char* matrix_name = cdna(arch) ? "v_mfma" : "v_wmma";
    const bool tiles_here = gpu::kernel_row(gpu::KernelId::tiled_rows).built_for(arch);
    ASSERT_FALSE(kernels.empty()) << arch << ": no kernel metadata read from " << path;
    std::printf("| %s kernel | VGPR | AGPR | SGPR | LDS static + dynamic (bytes) | waves/SIMD | %s | scratch | SGPR spills to VGPR lanes |\n",
                arch.c_str(), matrix_name);
    std::printf("| --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");
    for (const auto& [name, k] : kernels) {
      gpu::KernelId id;
      int d = 0;
      const bool tiled = tiled_kernel(name, &id, &d);
      const ac_tiled_shape shape = tiled ? gpu::tiled_shape(id, d, arch) : ac_tiled_shape{};
      const int dynamic = tiled ? shape.smem_bytes() : 0;
      const int lanes = wave_size(arch);
      const int waves_per_group = tiled ? shape.threads() / lanes
                                        : name.rfind("ac_decode_", 0) == 0 ? AC_DECODE_THREADS / lanes : AC_THREADS / lanes;
      const int n_matrix = matrix.count(name) ? matrix.at(name) : 0, n_other = other.count(name) ? other.at(name) : 0;
      // Waves per SIMD from CDNA's register file (512 per lane); RDNA's differs by chip: "-".
      const std::string waves = cdna(arch) ? std::to_string(waves_per_simd(k, k.lds + dynamic, waves_per_group, arch)) : "-";
      std::printf("| %s | %d | %d | %d | %d + %d | %s | %d | %d | %d |\n", name.c_str(), k.vgpr, k.agpr, k.sgpr, k.lds, dynamic,
                  waves.c_str(), n_matrix, k.scratch, k.sgpr_spill);
      EXPECT_EQ(k.wave, wave_size(arch)) << arch << " " << name << ": wavefront size";
      if (!tiles_here) {
        EXPECT_FALSE(tiled) << arch << " " << name << ": a tiled kernel on an arch the kernel table gives none";
      } else if (tiled) {
        const auto listed = gpu::kernel_row(id).functions_on(arch);
        EXPECT_NE(std::find(listed.begin(), listed.end(), name), listed.end())
            << arch << " " << name << ": a tiled kernel at a head dim the kernel table does not offer on this arch";
      }
      if (!cdna(arch) && !gfx1250(arch)) {
        EXPECT_LE(k.vgpr, 256) << arch << " " << name << ": VGPRs (a wave's most on RDNA)";
      }
      EXPECT_EQ(k.scratch, 0) << arch << " " << name << ": private segment (scratch) bytes";
      // SGPR spills go to VGPR lanes (v_writelane), not memory, and are counted in the VGPRs.
      EXPECT_EQ(k.vgpr_spill, 0) << arch << " " << name << ": VGPRs spilled";
      // The waves per SIMD the kernel is built for (amdgpu_waves_per_eu: tiled_attention.hpp).
      const int waves_wanted = tiled ? shape.waves_per_simd() : 2;
      const int most = register_file(arch) / waves_wanted;
      EXPECT_LE(k.vgpr + k.agpr, most) << arch << " " << name << ": VGPRs " << k.vgpr << " + AGPRs " << k.agpr << " ("
                                       << waves_wanted << " waves per SIMD need at most " << most << ")";
      // The row tiles reach the waves their shape is built for, registers and LDS both counted
      // (the keys shape at head dim 128 is held to one by its LDS: docs/amd-kernels.md).
      if (cdna(arch) && tiled && id == gpu::KernelId::tiled_rows) {
        EXPECT_GE(waves_per_simd(k, k.lds + dynamic, waves_per_group, arch), waves_wanted)
            << arch << " " << name << ": fewer waves per SIMD than its shape is built for";
      }
      EXPECT_LE(k.lds + dynamic, lds_budget(arch)) << arch << " " << name << ": LDS static " << k.lds << " + dynamic "
                                                   << dynamic << " over the workgroup budget " << lds_budget(arch);
      if (tiled) {
        EXPECT_GT(n_matrix, 0) << arch << " " << name << ": a tiled kernel without " << matrix_name << " instructions";
        const int n_atomic = atomics.count(name) ? atomics.at(name) : 0;
        if (name.find("_keys_fold_") != std::string::npos) {
          EXPECT_GT(n_atomic, 0) << arch << " " << name << ": a folding kernel without the counter's atomic add";
        } else {
          EXPECT_EQ(n_atomic, 0) << arch << " " << name << ": the fold's atomic in a kernel that does not fold";
        }
        if (gfx1250(arch)) {
          EXPECT_EQ(k32.count(name) ? k32.at(name) : 0, n_matrix) << arch << " " << name << ": WMMA other than 16 x 16 x 32";
        }
      } else {
        EXPECT_EQ(n_matrix, 0) << arch << " " << name << ": " << matrix_name << " in a direct-load kernel";
      }
      EXPECT_EQ(n_other, 0) << arch << " " << name << ": the other family's matrix instructions";
      const int n_fp8_cvt = fp8_cvt.count(name) ? fp8_cvt.at(name) : 0;
      if (fp8_hardware && tiled && name.find("_kv8_") != std::string::npos) {
        EXPECT_GT(n_fp8_cvt, 0) << arch << " " << name << ": the fp8 cache decoded without v_cvt_pk_f32_fp8";
      } else {
        EXPECT_EQ(n_fp8_cvt, 0) << arch << " " << name << ": v_cvt_pk_f32_fp8 outside gfx942/gfx950's tiled fp8 kernels";
      }
    }
    // The tiled kernels the kernel table lists for this arch are all there.
    for (const auto& row : gpu::kernel_rows()) {
      if (!row.built_for(arch)) continue;
      for (const auto& fn : row.functions_on(arch)) EXPECT_TRUE(kernels.count(fn)) << arch << " has no metadata for " << fn;
    }
  }
  if (objects == 0) {
    std::printf("[  SKIPPED ] no gfx* code object in this build (no clang with AMDGPU support at configure time)\n");
    GTEST_SKIP() << "no AMD code objects built";
  }
}

// The parsers on fixed text, so that a change in the tools' output fails here, not silently.
TEST(AmdCodeObjects, ReadsMetadataAndDisassembly) {
  const std::string notes =
      "amdhsa.kernels:\n"
      "  - .agpr_count:     4\n"
      "    .args:\n"
      "      - .name:           p\n"
      "        .size:           8\n"
      "    .group_segment_fixed_size: 512\n"
      "    .name:           ac_tiled_rows_bf16_d64\n"
      "    .private_segment_fixed_size: 0\n"
      "    .sgpr_count:     40\n"
      "    .vgpr_count:     100\n"
      "    .wavefront_size: 64\n"
      "  - .agpr_count:     0\n"
      "    .name:           ac_decode_bf16_d64\n"
      "    .private_segment_fixed_size: 16\n"
      "    .vgpr_count:     202\n";
  const auto k = read_notes(notes);
  ASSERT_EQ(k.size(), 2u);
  EXPECT_EQ(k.at("ac_tiled_rows_bf16_d64").vgpr, 100);
  EXPECT_EQ(k.at("ac_tiled_rows_bf16_d64").agpr, 4);
  EXPECT_EQ(k.at("ac_tiled_rows_bf16_d64").lds, 512);
  EXPECT_EQ(k.at("ac_decode_bf16_d64").scratch, 16);
  const auto m = count_instructions(
      "0000000000001000 <ac_tiled_rows_bf16_d64>:\n  v_mfma_f32_32x32x8_bf16 a[0:15], v[0:1], v[2:3], a[0:15]\n"
      "  s_endpgm\n0000000000002000 <ac_decode_bf16_d64>:\n  v_add_f32 v0, v1, v2\n"
      "0000000000003000 <ac_tiled_keys_bf16_d64>:\n  v_wmma_f32_16x16x16_bf16 v[0:7], v[8:11], v[12:15], v[0:7]\n",
      "v_mfma");
  EXPECT_EQ(m.count("ac_tiled_rows_bf16_d64") ? m.at("ac_tiled_rows_bf16_d64") : 0, 1);
  EXPECT_EQ(m.count("ac_tiled_keys_bf16_d64"), 0u);  // a v_wmma is not a v_mfma
  EXPECT_EQ(m.count("ac_decode_bf16_d64"), 0u);
  gpu::KernelId id;
  int d;
  ASSERT_TRUE(tiled_kernel("ac_tiled_keys_paged_f16_d128", &id, &d));
  EXPECT_EQ(id, gpu::KernelId::tiled_keys);
  EXPECT_EQ(d, 128);
  ASSERT_TRUE(tiled_kernel("ac_tiled_rows_paged_bf16_kv8_d64", &id, &d));
  EXPECT_EQ(id, gpu::KernelId::tiled_rows);
  EXPECT_EQ(d, 64);
  EXPECT_FALSE(tiled_kernel("ac_attention_bf16", &id, &d));
}

// AITER_COMPAT_AMD_DIRECT=1 takes the tiled rows off AMD GPUs (a reason routing reports), and
// only there.
TEST(AmdKernelRows, DirectLoadSwitchIsAReasonOnAmdOnly) {
  gpu::KernelQuery q;
  q.dtype = AC_DTYPE_BF16, q.head_dim = q.head_dim_v = 64, q.q_heads = 64, q.kv_heads = 8;
  q.arch = "gfx942";
  const auto& rows = gpu::kernel_row(gpu::KernelId::tiled_rows);
  EXPECT_TRUE(rows.route_reasons(q).empty()) << ::testing::PrintToString(rows.route_reasons(q));
  EXPECT_EQ(gpu::tiled_shape(gpu::KernelId::tiled_rows, 64, "gfx942").lanes, 64);
  EXPECT_EQ(gpu::tiled_shape(gpu::KernelId::tiled_rows, 64, "sm_90").lanes, 32);
  // RDNA3, RDNA4 and gfx1250 take the WMMA shapes (32-lane waves, 16-row tiles).
  for (const char* rdna : {"gfx1100", "gfx1151", "gfx1200", "gfx1201"}) {
    SCOPED_TRACE(rdna);
    EXPECT_TRUE(gpu::is_rdna_wmma_arch(rdna));
    const ac_tiled_shape s = gpu::tiled_shape(gpu::KernelId::tiled_rows, 128, rdna);
    EXPECT_EQ(s.lanes, 32);
    EXPECT_EQ(s.tile_rows, 16);
    EXPECT_TRUE(rows.built_for(rdna));
    // Head dim 256 nowhere on RDNA, 128 on RDNA4 only: a call there names the registers and
    // goes to the direct-load kernels.
    const bool rdna3 = std::string(rdna).rfind("gfx11", 0) == 0;
    const std::vector<int> dims = rdna3 ? std::vector<int>{64} : std::vector<int>{64, 128};
    EXPECT_EQ(rows.head_dims_on(rdna), dims);
    EXPECT_EQ(gpu::kernel_row(gpu::KernelId::tiled_keys).head_dims_on(rdna), dims);
    gpu::KernelQuery wide = q;
    wide.arch = rdna, wide.head_dim = wide.head_dim_v = rdna3 ? 128 : 256;
    const auto refused = rows.route_reasons(wide);
    ASSERT_EQ(refused.size(), 1u) << ::testing::PrintToString(refused);
    EXPECT_NE(refused[0].find("WMMA tiles: registers"), std::string::npos) << refused[0];
    for (const auto& fn : rows.functions_on(rdna)) {
      EXPECT_EQ(fn.find("_d256"), std::string::npos) << fn;
      if (rdna3) {
        EXPECT_EQ(fn.find("_d128"), std::string::npos) << fn;
      }
    }
    EXPECT_EQ(rows.functions_on(rdna).size(), rows.functions.size() / 3 * dims.size());
  }
  EXPECT_EQ(rows.head_dims_on("gfx942"), (std::vector<int>{64, 128, 256}));
  EXPECT_EQ(rows.functions_on("gfx942"), rows.functions);
  EXPECT_FALSE(gpu::is_rdna_wmma_arch("gfx1250"));
  EXPECT_FALSE(gpu::is_rdna_wmma_arch("gfx942"));
  // gfx1250: every head dim (its waves hold 1024 VGPRs), each wave a multiple of the
  // instruction's 32 keys.
  EXPECT_TRUE(rows.built_for("gfx1250"));
  EXPECT_EQ(rows.head_dims_on("gfx1250"), (std::vector<int>{64, 128, 256}));
  EXPECT_EQ(rows.functions_on("gfx1250"), rows.functions);
  EXPECT_EQ(gpu::kernel_row(gpu::KernelId::tiled_keys).head_dims_on("gfx1250"), (std::vector<int>{64, 128}));
  for (auto id : {gpu::KernelId::tiled_rows, gpu::KernelId::tiled_keys})
    for (int d : {64, 128}) {
      const ac_tiled_shape s = gpu::tiled_shape(id, d, "gfx1250");
      EXPECT_EQ(s.lanes, 32);
      EXPECT_EQ(s.tile_rows, 16);
      EXPECT_EQ(s.block_n / s.warps_n % 32, 0) << "keys per wave: whole 16 x 16 x 32 steps";
    }
  gpu::KernelQuery gfx1250_256 = q;
  gfx1250_256.arch = "gfx1250", gfx1250_256.head_dim = gfx1250_256.head_dim_v = 256;
  EXPECT_TRUE(rows.route_reasons(gfx1250_256).empty()) << ::testing::PrintToString(rows.route_reasons(gfx1250_256));
  EXPECT_FALSE(gpu::kernel_row(gpu::KernelId::tiled_wgmma).built_for("gfx1250"));
  setenv("AITER_COMPAT_AMD_DIRECT", "1", 1);
  const auto why = rows.route_reasons(q);
  q.arch = "sm_90";
  const auto nvidia = rows.route_reasons(q);
  unsetenv("AITER_COMPAT_AMD_DIRECT");
  ASSERT_EQ(why.size(), 1u);
  EXPECT_EQ(why[0], "AITER_COMPAT_AMD_DIRECT=1 keeps AMD GPUs on the direct-load kernels");
  EXPECT_TRUE(nvidia.empty()) << ::testing::PrintToString(nvidia);
  q.arch = "gfx942";
  EXPECT_TRUE(gpu::kernel_row(gpu::KernelId::decode).route_reasons(q).empty());
}
