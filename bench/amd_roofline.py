#!/usr/bin/env python3
"""Roofline estimates of the AMD kernels on MI355X, MI300X and MI250X, from their code objects.

No AMD GPU runs these kernels here, so this is an ESTIMATE, not a measurement: it reads the built
code objects (llvm-readelf's kernel metadata, llvm-objdump's instructions), takes each GPU's
published peak figures, and works out for GPT-OSS-shaped cases (64 query heads, 8 KV heads,
head dim 64, bf16), and decode again at head dim 128 (32 query heads, 8 KV heads: Llama-shaped):
  - decode (one query per sequence over a paged cache): the memory floor (K and V read once at
    the GPU's HBM bandwidth) and, for the tiled "keys" kernel, whether its MFMA work per key tile
    fits under that tile's memory time at the kernel's occupancy;
  - causal prefill: the MFMA floor (the flops at the peak rate of the instruction form the row
    tiles use: gfx950's double-K v_mfma_f32_32x32x16, the CDNA3 forms elsewhere) and a range at 35-60% of it (the softmax, its 16-bit packing and the V^T operand reads are VALU and LDS work of about the MFMA time per tile, overlapped only across the two waves of a SIMD) (the H200's tiled
    kernels run at 40-50% of their measured matmul peak).
Usage: bench/amd_roofline.py [--objects build/kernels] [--json out.json]
"""
import argparse
import json
import pathlib
import re
import shutil
import subprocess
import sys

# Published figures (AMD's data sheets): one device as a process sees it (MI250X: one GCD).
GPUS = {
    "gfx950": dict(name="MI355X", cus=256, ghz=2.4, tbs=8.0, legacy_mfma_tflops=1250.0, double_k_mfma_tflops=2500.0,
                   lds_kib=160),
    "gfx942": dict(name="MI300X", cus=304, ghz=2.1, tbs=5.3, legacy_mfma_tflops=1307.0, lds_kib=64),
    "gfx90a": dict(name="MI250X (one GCD)", cus=110, ghz=1.7, tbs=1.6, legacy_mfma_tflops=191.5, lds_kib=64),
}
HQ, HK, D, BYTES = 64, 8, 64, 2
DECODE = dict(batch=64, ctx=4096)
PREFILL = dict(batch=4, seq=4096)
KEY_TILE = 64  # keys per tile of the "keys" shape (kernel_params.h: ac_tiled_keys_shape_amd)


def keys_lds_bytes(arch, d):
    """The "keys" tiles' dynamic LDS per block, as kernel_params.h sizes it (smem_bytes): packed
    (unpadded K and V tiles) at head dim 128 where a CU has 64 KiB, else rows padded by 16 bytes,
    a validity byte per key and the 16 rows' sinks; or the four waves' epilogue, if larger."""
    if d >= 128 and GPUS[arch]["lds_kib"] <= 64:
        return 2 * KEY_TILE * d * 2
    loop = 2 * KEY_TILE * (d + 8) * 2 + KEY_TILE
    epilogue = 4 * 16 * (d + 4 + 2) * 4
    return (max(loop, epilogue) + 15) // 16 * 16 + 16 * 4


def tool(names):
    for n in names:
        if shutil.which(n):
            return n
    sys.exit(f"none of {names} found (Debian: llvm-22)")


def read_kernels(path, readelf, objdump):
    notes = subprocess.run([readelf, "--notes", str(path)], capture_output=True, text=True, check=True).stdout
    kernels, cur = {}, None
    for line in notes.splitlines():
        m = re.match(r"^  - (\.[a-z_]+):\s*(\S*)", line) or re.match(r"^    (\.[a-z_]+):\s*(\S*)", line)
        if not m:
            continue
        if line.startswith("  - "):
            cur = {}
        cur[m[1]] = m[2]
        if m[1] == ".name":
            kernels[m[2]] = cur
    asm = subprocess.run([objdump, "-d", "--no-show-raw-insn", str(path)], capture_output=True, text=True, check=True).stdout
    fn = None
    for line in asm.splitlines():
        h = re.match(r"^[0-9a-f]+ <([A-Za-z_0-9]+)>:", line)
        if h:
            fn = kernels.setdefault(h[1], {})
            fn.update(mfma=0, mfma_double_k=0, valu=0, lds=0, vmem=0)
            continue
        if fn is None:
            continue
        op = line.strip().split(" ")[0]
        if op.startswith("v_mfma"):
            fn["mfma"] += 1
            # gfx950's double-K forms (K 16 at 32x32, K 32 at 16x16, 16-bit types)
            fn["mfma_double_k"] += bool(re.match(r"v_mfma_f32_(32x32x16|16x16x32)_(bf16|f16)", op))
        elif op.startswith("v_"):
            fn["valu"] += 1
        elif op.startswith("ds_"):
            fn["lds"] += 1
        elif op.startswith(("global_load", "buffer_load", "flat_load")):
            fn["vmem"] += 1
    return kernels


def waves_per_simd(k):
    regs = -(-int(k.get(".vgpr_count", 0)) // 8) * 8 + -(-int(k.get(".agpr_count", 0)) // 8) * 8
    return min(8, 512 // max(regs, 8))


def decode_row(arch, kernels, d):
    g = GPUS[arch]
    kv_bytes = DECODE["batch"] * DECODE["ctx"] * HK * d * BYTES * 2
    floor_us = kv_bytes / (g["tbs"] * 1e12) * 1e6
    keys = kernels.get(f"ac_tiled_keys_paged_bf16_d{d}", {})
    # Per 64-key tile a block (one KV head: its query heads in a 16-row tile, four waves, one per
    # SIMD) reads the tile's K and V once; each wave runs its MFMAs on its own SIMD. Resident
    # blocks per CU: the fewer of what the registers and the LDS allow.
    tile_bytes = KEY_TILE * d * BYTES * 2
    mfma_flops = 2 * 16 * 16 * 16  # v_mfma_f32_16x16x16
    flops_per_simd_cycle = g["legacy_mfma_tflops"] * 1e12 / (g["cus"] * 4 * g["ghz"] * 1e9)
    mfma_cycles = keys.get("mfma", 0) * mfma_flops / flops_per_simd_cycle  # per wave per tile
    by_regs = waves_per_simd(keys) if keys else 0
    by_lds = g["lds_kib"] * 1024 // keys_lds_bytes(arch, d)
    w = min(by_regs, by_lds)
    mem_cycles = w * tile_bytes / (g["tbs"] * 1e12 / g["cus"] / (g["ghz"] * 1e9))  # w blocks' tiles per CU
    return dict(arch=arch, gpu=g["name"], case=f"decode d{d} {DECODE['batch']}x{DECODE['ctx']} paged",
                floor_us=round(floor_us, 1), waves_per_simd=w,
                note=f"tiled keys: {keys.get('mfma', 0)} MFMA per wave per tile = {mfma_cycles:.0f} cycles vs "
                     f"{mem_cycles:.0f} cycles of HBM time for {w} resident blocks' tiles per CU (registers allow "
                     f"{by_regs}, LDS {by_lds}): " + ("memory-bound" if mfma_cycles < mem_cycles else "MFMA-bound"))


def estimate(arch, kernels):
    g = GPUS[arch]
    rows = [decode_row(arch, kernels, 64), decode_row(arch, kernels, 128)]
    flops = 4 * PREFILL["batch"] * HQ * D * PREFILL["seq"] * PREFILL["seq"] / 2  # causal: half the pairs
    rows_k = kernels.get("ac_tiled_rows_bf16_d64", {})
    double_k = rows_k.get("mfma_double_k", 0) > 0 and rows_k.get("mfma_double_k") == rows_k.get("mfma")
    peak = g["double_k_mfma_tflops"] if double_k and "double_k_mfma_tflops" in g else g["legacy_mfma_tflops"]
    floor = flops / (peak * 1e12) * 1e6
    # The 35-60% range: the VALU and LDS work per tile is about the CDNA3-form MFMA time and is
    # not shortened by the double-K forms, which halve only the matrix part: time = M (1 / e - 1)
    # + M / 2 with M the CDNA3-form floor.
    legacy = flops / (g["legacy_mfma_tflops"] * 1e12) * 1e6
    est = [legacy / e - (legacy / 2 if peak != g["legacy_mfma_tflops"] else 0) for e in (0.6, 0.35)]
    rows.append(dict(arch=arch, gpu=g["name"], case=f"prefill causal {PREFILL['batch']}x{PREFILL['seq']}",
                     floor_us=round(floor, 1),
                     estimate_us=[round(est[0], 1), round(est[1], 1)],
                     estimate_tflops=[round(flops / est[1] / 1e6), round(flops / est[0] / 1e6)],
                     note=f"tiled rows: {rows_k.get('mfma', 0)} MFMA ({'double-K' if double_k else 'CDNA3 forms'}, "
                          f"{peak:.0f} TFLOP/s peak), {rows_k.get('valu', 0)} VALU, "
                          f"{rows_k.get('lds', 0)} LDS instructions in the kernel; {waves_per_simd(rows_k) if rows_k else 0} "
                          "waves per SIMD by registers"))
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--objects", default="build/kernels")
    ap.add_argument("--json")
    a = ap.parse_args()
    readelf = tool(["llvm-readelf-22", "llvm-readelf"])
    objdump = tool(["llvm-objdump-22", "llvm-objdump"])
    out = []
    for arch in GPUS:
        co = pathlib.Path(a.objects) / f"attention_{arch}.co"
        if not co.exists():
            print(f"{arch}: no code object at {co} (skipped)")
            continue
        out += estimate(arch, read_kernels(co, readelf, objdump))
    print("ESTIMATES from code objects and data-sheet peaks, not measurements:")
    for r in out:
        extra = f", estimate {r['estimate_us'][0]}-{r['estimate_us'][1]} us ({r['estimate_tflops'][0]}-" \
                f"{r['estimate_tflops'][1]} TFLOP/s)" if "estimate_us" in r else ""
        print(f"  {r['gpu']:<17} {r['case']:<26} floor {r['floor_us']} us{extra}; {r['note']}")
    if a.json:
        pathlib.Path(a.json).write_text(json.dumps(dict(kind="estimate", rows=out), indent=1))


if __name__ == "__main__":
    main()
