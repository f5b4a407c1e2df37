"""GPT-OSS-shaped attention on this GPU: each fallback kernel family, AITer's own entry points
(where the installed release can take the call) and torch's SDPA on the same shapes, with the
device's copy bandwidth measured as the ceiling of decode. `aiter-compat bench` and
`python -m aiter_compat.bench` run it for users on their own GPU (about a minute; a progress
line per case; --json FILE for the results with the device, driver, AITer and library
versions); bench/gpu_attention.py, the project's detailed timings, takes its cases and timing
helpers from here, so both measure the same shapes.

    python -m aiter_compat.bench [--json FILE] [--quick] [--only REGEX] [--budget SECONDS]
"""
import argparse
import json
import re
import shutil
import statistics
import subprocess
import sys
import time

try:  # torch and its GPU are what this measures: without them, main() says so and exits 0
    import torch
    import torch.nn.functional as F
except ImportError:  # pragma: no cover - depends on the environment
    torch = None
    F = None

import aiter_compat

# The cases, one definition for this module and bench/gpu_attention.py: GPT-OSS-120B's attention
# (64 query heads, 8 KV heads, head dim 64; sliding layers window 128, full layers causal).
DECODE_WINDOWS = ((-1, -1), (127, 0))
PREFILL_WINDOWS = ((-1, -1), (127, 0))
# Head dim 256 (Gemma's, on the same heads): one causal 4k sequence, the shape it is compared on.
PREFILL_DIMS = (64, 128, 256)
# Decode over an fp8 e4m3 KV cache (vLLM's --kv-cache-dtype fp8), the full-attention layers.
FP8_DECODE_WINDOWS = ((-1, -1),)


def decode_shapes(quick):
    """(batch, context) of the decode cases."""
    return [(1, 32768), (4, 32768), (64, 4096), (128, 4096)] if quick else \
        [(b, c) for b in (1, 4, 16, 64, 128) for c in (4096, 32768)]


def prefill_shapes(quick, d=64):
    """(batch, sequence length) of the prefill cases at head dim d."""
    if d == 256:
        return [(1, 4096)]
    return [(4, 4096)] if quick else [(4, 4096), (1, 16384)]


def prefill_windows(d):
    """The prefill cases' windows at head dim d (256: causal only)."""
    return PREFILL_WINDOWS if d != 256 else ((-1, -1),)


def decode_name(batch, ctx, window, kv="bf16"):
    return f"decode {batch}x{ctx // 1024}k {'win128' if window[0] >= 0 else 'full'}" + (" fp8" if kv == "fp8" else "")


def prefill_name(d, batch, seqlen, window):
    return f"prefill d{d} {batch}x{seqlen // 1024}k {'win128' if window[0] >= 0 else 'causal'}"


def cases(quick):
    """Every case in order: (kind, name, shape), kind "decode" or "prefill"."""
    for batch, ctx in decode_shapes(quick):
        for window in DECODE_WINDOWS:
            yield "decode", decode_name(batch, ctx, window), {"batch": batch, "ctx": ctx, "window": window}
    for batch, ctx in decode_shapes(quick):
        for window in FP8_DECODE_WINDOWS:
            yield "decode", decode_name(batch, ctx, window, "fp8"), {"batch": batch, "ctx": ctx, "window": window,
                                                                     "kv": "fp8"}
    for d in PREFILL_DIMS:
        for batch, seqlen in prefill_shapes(quick, d):
            for window in prefill_windows(d):
                yield "prefill", prefill_name(d, batch, seqlen, window), {"batch": batch, "seqlen": seqlen, "d": d,
                                                                          "window": window}


L2_BYTES = 60e6


def kv_copies(kv_bytes):
    """KV copies to rotate through so that together they exceed the L2 three times over: each
    timed call reads its bytes from memory, not from what the call before left in the L2."""
    return max(1, int(3 * L2_BYTES // kv_bytes) + 1)


SPIN_CYCLES = 400_000  # ~200 us at the H200's clock: longer than the host path of ten graph launches


def event_time(fn, queued=True):
    """Seconds of one call between two device events on the current stream. queued: the events
    and the call are enqueued behind a spin kernel, so the GPU starts them back to back and the
    time is the device's alone; otherwise a call of 10 us also holds the time the GPU waited
    for the host to launch it (a graph launch: 4-8 us, more on a slower host CPU)."""
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    if queued:
        torch.cuda._sleep(SPIN_CYCLES)
    a.record()
    fn()
    b.record()
    b.synchronize()
    return a.elapsed_time(b) * 1e-3


def timed(fn, reps=30, warmup=5, queued=True):
    """Median of `reps` calls after `warmup`; queued=False keeps the host's launch cost in (the
    eager time of a call)."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    return statistics.median(event_time(fn, queued) for _ in range(reps))


def timed_pair(fn_a, fn_b, reps=30, warmup=5, run=10):
    """Medians of two functions timed in alternating runs (`run` calls of a, then of b, ...), so
    that drifts of clocks and caches during the measurement fall on both alike: sinks on against
    sinks off."""
    for _ in range(warmup):
        fn_a()
        fn_b()
    torch.cuda.synchronize()
    times = ([], [])
    for _ in range(max(1, reps // run)):
        for fn, ts in zip((fn_a, fn_b), times):
            ts.extend(event_time(fn) for _ in range(run))
    return statistics.median(times[0]), statistics.median(times[1])


def back_to_back(fn_a, fn_b, calls=10, rounds=20):
    """Mean seconds per call of two functions, each timed as `calls` calls queued back to back
    behind a spin kernel between one pair of events, alternating, `rounds` times each; medians
    over the rounds. Finer than per-call medians, whose ~7 us decodes move in whole steps of
    0.16 us: the sink comparison of decode."""
    times = ([], [])
    for _ in range(rounds):
        for fn, ts in zip((fn_a, fn_b), times):
            ts.append(event_time(lambda: [fn() for _ in range(calls)]) / calls)
    return statistics.median(times[0]), statistics.median(times[1])


def capture(call, stream=None):
    """The call run once on `stream` (a new side stream if none: the warm-up loads the modules and
    fills the scratch pool), then captured there in a CUDA graph."""
    stream = stream or torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        call()
    stream.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=stream):
        call()
    return graph


def graph_replay(calls):
    """A function replaying one CUDA graph per call in rotation (no host cost)."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for call in calls:
            call()
    torch.cuda.current_stream().wait_stream(side)
    graphs = []
    for call in calls:
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            call()
        graphs.append(g)
    it = [0]

    def replay():
        graphs[it[0] % len(graphs)].replay()
        it[0] += 1
    return replay


def timed_graphs(calls, reps=30):
    """Median time of one call, replaying a CUDA graph per call in rotation (no host cost)."""
    return timed(graph_replay(calls), reps=reps)


def matmul_rate():
    """bf16 dense matmul rate measured in this run (8192^3)."""
    a = torch.randn(8192, 8192, dtype=torch.bfloat16, device="cuda")
    b = torch.randn_like(a)
    return 2 * 8192 ** 3 / timed(lambda: a @ b, reps=10)


def copy_bandwidth():
    x = torch.empty(int(2e9) // 2, dtype=torch.bfloat16, device="cuda")
    y = torch.empty_like(x)
    t = timed(lambda: y.copy_(x), reps=10)
    return 2 * x.numel() * 2 / t


def fp8_dtype():
    """The e4m3 format of this GPU's fp8 caches: FNUZ on gfx942 (MI300), OCP's elsewhere."""
    if getattr(torch.version, "hip", None) and "gfx942" in getattr(torch.cuda.get_device_properties(0), "gcnArchName", ""):
        return torch.float8_e4m3fnuz
    return torch.float8_e4m3fn


def kv_cache(shape, kv):
    x = torch.randn(*shape, device="cuda")
    return x.to(fp8_dtype()) if kv == "fp8" else x.to(torch.bfloat16)


def kv_scales(kv):
    """vLLM's per-tensor k and v scales for an fp8 cache (none for bf16)."""
    if kv != "fp8":
        return {}
    return {"k_descale": torch.tensor([0.9], device="cuda"), "v_descale": torch.tensor([1.1], device="cuda")}


def decode_calls(batch, ctx, window, block=16, hq=64, hk=8, d=64, kv="bf16"):
    """The decode cases' inputs (GPT-OSS heads, a paged cache, KV copies beyond the L2): calls(sinks),
    one call per KV copy, the sinks, and the query."""
    blocks_per = (ctx + block - 1) // block
    elem = 1 if kv == "fp8" else 2
    copies = kv_copies(2 * batch * ctx * hk * d * elem)
    caches = []
    for _ in range(copies):
        shape = (batch * blocks_per, block, hk, d)
        caches.append((kv_cache(shape, kv), kv_cache(shape, kv)))
    scales = kv_scales(kv)
    table = torch.arange(batch * blocks_per, dtype=torch.int32, device="cuda").reshape(batch, blocks_per)
    used = torch.full((batch,), ctx, dtype=torch.int32, device="cuda")
    q = torch.randn(batch, hq, d, dtype=torch.bfloat16, device="cuda")
    out = torch.empty_like(q)
    s = torch.randn(hq, device="cuda")

    def calls(sinks):
        return [lambda kc=kc, vc=vc: aiter_compat.paged_attention_decode(
            q, kc, vc, table, used, softmax_scale=0.125, window_size=window, sinks=sinks, out=out, **scales)
            for kc, vc in caches]
    return calls, s, q


def decode_case(batch, ctx, window, block=16, hq=64, hk=8, d=64, kv="bf16"):
    """Graph-replay times with sinks and without, bytes moved, eager time of a call."""
    elem = 1 if kv == "fp8" else 2
    calls, s, q = decode_calls(batch, ctx, window, block, hq, hk, d, kv)
    # Sinks on and off: two sets of graphs on the same inputs, timed in alternating runs of ten
    # replays (each replay queued behind a spin kernel, so a switch of graph costs the GPU
    # nothing), 90 replays each, medians.
    on, off = graph_replay(calls(s)), graph_replay(calls(None))
    t, t_off = timed_pair(on, off, reps=90, run=10)
    mean_on, mean_off = back_to_back(on, off)
    # The same replays, each launched onto an idle GPU (the measure before version 9): the
    # device time plus the graph launch's latency, what one isolated graph per call costs.
    t_idle = timed(on, queued=False)
    host = timed(calls(s)[0], reps=20, queued=False)  # eager: kernel plus the host path of one call
    read = 2 * batch * min(ctx, window[0] + 1 if window[0] >= 0 else ctx) * hk * d * elem
    return t, t_off, read + 2 * q.numel() * 2, host, t_idle, mean_on / mean_off - 1


def sdpa_decode(batch, ctx, backend, hq=64, hk=8, d=64):
    kv_bytes = 2 * batch * ctx * hk * d * 2
    copies = kv_copies(kv_bytes)
    kvs = [tuple(torch.randn(batch, hk, ctx, d, dtype=torch.bfloat16, device="cuda") for _ in range(2))
           for _ in range(copies)]  # K and V apart: each byte read once, as in ours
    q = torch.randn(batch, hq, 1, d, dtype=torch.bfloat16, device="cuda")
    from torch.nn.attention import sdpa_kernel

    def make(k, v):
        def run():
            with sdpa_kernel(backend):
                F.scaled_dot_product_attention(q, k, v, enable_gqa=True)
        return run
    try:
        return timed_graphs([make(k, v) for k, v in kvs])
    except RuntimeError:
        return float("nan")


def prefill_case(batch, seqlen, d, window, hq=64, hk=8):
    """Our varlen prefill (causal) timed eagerly with sinks and without, alternating; FLOPs with
    causal (and window) pairs only."""
    q = torch.randn(batch * seqlen, hq, d, dtype=torch.bfloat16, device="cuda")
    k = torch.randn(batch * seqlen, hk, d, dtype=torch.bfloat16, device="cuda")
    v = torch.randn_like(k)
    cu = torch.arange(0, (batch + 1) * seqlen, seqlen, dtype=torch.int32, device="cuda")
    s = torch.randn(hq, device="cuda")
    out = torch.empty_like(q)

    def call(sinks):
        return lambda: aiter_compat.flash_attn_varlen_func(q, k, v, cu, cu, seqlen, seqlen, causal=True,
                                                           window_size=window, sink_ptr=sinks, out=out)
    t, t_off = timed_pair(call(s), call(None), reps=12, run=3)
    span = window[0] + 1 if window[0] >= 0 else seqlen
    pairs = sum(min(i + 1, span) for i in range(seqlen)) * batch
    return t, t_off, 4 * pairs * hq * d


def sdpa_prefill(batch, seqlen, d, backend, hq=64, hk=8):
    q = torch.randn(batch, hq, seqlen, d, dtype=torch.bfloat16, device="cuda")
    k = torch.randn(batch, hk, seqlen, d, dtype=torch.bfloat16, device="cuda")
    v = torch.randn_like(k)
    from torch.nn.attention import sdpa_kernel

    def run():
        with sdpa_kernel(backend):
            F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
    try:
        return timed(run, reps=10)
    except RuntimeError:
        return float("nan")


def write_results(path, rows, copy_bw, matmul):
    """The rows of a benchmark run with the ceilings measured in it and where it ran, as JSON."""
    with open(path, "w") as f:
        json.dump({"copy_bandwidth_TBps": copy_bw / 1e12, "matmul_TFLOPs": matmul / 1e12,
                   "device": torch.cuda.get_device_name(), "torch": torch.__version__, "rows": rows}, f, indent=1)


def ratio(peer_us, ours_us):
    return peer_us / ours_us if peer_us == peer_us else float("nan")


# The fallback families each kind of case can run on, fastest first (the kernel table's rows).
FAMILIES = {"decode": ("tiled_keys", "decode", "generic"), "prefill": ("tiled_wgmma", "tiled_rows", "generic")}


def decode_inputs(batch, ctx, window, block=16, hq=64, hk=8, d=64, kv="bf16"):
    blocks_per = (ctx + block - 1) // block
    kc = kv_cache((batch * blocks_per, block, hk, d), kv)
    vc = kv_cache((batch * blocks_per, block, hk, d), kv)
    scales = kv_scales(kv)
    table = torch.arange(batch * blocks_per, dtype=torch.int32, device="cuda").reshape(batch, blocks_per)
    used = torch.full((batch,), ctx, dtype=torch.int32, device="cuda")
    q = torch.randn(batch, hq, d, dtype=torch.bfloat16, device="cuda")
    out = torch.empty_like(q)
    sinks = torch.randn(hq, device="cuda")
    call = lambda: aiter_compat.paged_attention_decode(q, kc, vc, table, used, softmax_scale=0.125,  # noqa: E731
                                                       window_size=window, sinks=sinks, out=out, **scales)
    read = 2 * batch * min(ctx, window[0] + 1 if window[0] >= 0 else ctx) * hk * d * kc.element_size()
    return call, read + 2 * q.numel() * 2


def prefill_inputs(batch, seqlen, d, window, hq=64, hk=8):
    q = torch.randn(batch * seqlen, hq, d, dtype=torch.bfloat16, device="cuda")
    k = torch.randn(batch * seqlen, hk, d, dtype=torch.bfloat16, device="cuda")
    v = torch.randn_like(k)
    cu = torch.arange(0, (batch + 1) * seqlen, seqlen, dtype=torch.int32, device="cuda")
    sinks = torch.randn(hq, device="cuda")
    out = torch.empty_like(q)
    return lambda: aiter_compat.flash_attn_varlen_func(q, k, v, cu, cu, seqlen, seqlen, causal=True, window_size=window,
                                                       sink_ptr=sinks, out=out)


def sdpa_time(kind, shape):
    """torch SDPA's default choice on the same shape without sinks (it has none), contiguous KV."""
    hq, hk = 64, 8
    if kind == "decode":
        k = torch.randn(shape["batch"], hk, shape["ctx"], 64, dtype=torch.bfloat16, device="cuda")
        v = torch.randn_like(k)
        q = torch.randn(shape["batch"], hq, 1, 64, dtype=torch.bfloat16, device="cuda")
        run = lambda: F.scaled_dot_product_attention(q, k, v, enable_gqa=True)  # noqa: E731
    else:
        b, s, d = shape["batch"], shape["seqlen"], shape["d"]
        q = torch.randn(b, hq, s, d, dtype=torch.bfloat16, device="cuda")
        k = torch.randn(b, hk, s, d, dtype=torch.bfloat16, device="cuda")
        v = torch.randn_like(k)
        run = lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)  # noqa: E731
    try:
        return timed(run, reps=10, warmup=2)
    except (RuntimeError, TypeError):  # no backend for these inputs, or a torch without enable_gqa
        return float("nan")


def time_call(call, kind):
    """Device time of one call (median), or the reason it could not run."""
    try:
        return timed(call, reps=20 if kind == "decode" else 5, warmup=3 if kind == "decode" else 1), ""
    except aiter_compat.AiterCompatError as e:
        return float("nan"), str(e).strip().splitlines()[-1].strip(" -")
    except RuntimeError as e:
        return float("nan"), str(e).strip().splitlines()[0]


def versions():
    """What a result depends on: the device, its driver, torch's runtime, AITer and this library."""
    info = {"device": torch.cuda.get_device_name(), "torch": torch.__version__,
            "runtime": ("hip " + torch.version.hip) if getattr(torch.version, "hip", None) else
                       ("cuda " + str(torch.version.cuda)),
            "aiter_compat": aiter_compat.__version__, "driver": None, "aiter": None}
    for tool, args in (("nvidia-smi", ["--query-gpu=driver_version", "--format=csv,noheader"]),
                       ("rocm-smi", ["--showdriverversion"])):
        if shutil.which(tool):
            try:
                text = subprocess.run([tool] + args, capture_output=True, text=True, timeout=20).stdout.strip()
                info["driver"] = text.splitlines()[0] if tool == "nvidia-smi" else " ".join(text.split())
            except (OSError, subprocess.SubprocessError, IndexError):
                pass
            break
    report = aiter_compat.probe()
    if report.get("aiter", {}).get("found"):
        info["aiter"] = report["aiter"].get("version") or "(version unknown)"
    return info


def run_case(kind, shape):
    """The launcher's choice, then each family forced, on one set of inputs."""
    if kind == "decode":
        call, moved = decode_inputs(shape["batch"], shape["ctx"], shape["window"], kv=shape.get("kv", "bf16"))
    else:
        call, moved = prefill_inputs(shape["batch"], shape["seqlen"], shape["d"], shape["window"]), 0
    row = {"us": {}, "why": {}, "bytes": moved}
    t, why = time_call(call, kind)
    row["us"]["auto"] = t * 1e6
    for family in FAMILIES[kind]:
        aiter_compat._force_kernel_row(family)
        try:
            t, why = time_call(call, kind)
        finally:
            aiter_compat._force_kernel_row(None)
        row["us"][family] = t * 1e6
        if why:
            row["why"][family] = why
    return row, call


def main(argv=None):
    ap = argparse.ArgumentParser(prog="aiter-compat bench", description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", help="write the results here")
    ap.add_argument("--quick", action="store_true", default=True, help="the short list of cases (the default)")
    ap.add_argument("--full", dest="quick", action="store_false", help="every case of bench/gpu_attention.py")
    ap.add_argument("--only", help="the cases whose name matches this regular expression")
    ap.add_argument("--budget", type=float, default=60.0, help="seconds; cases past it are skipped, saying so")
    args = ap.parse_args(argv)
    if torch is None:
        print("aiter-compat bench: torch is not installed here; nothing to time (install a CUDA or ROCm torch)")
        return 0
    if not torch.cuda.is_available():
        print("aiter-compat bench: no GPU is visible to torch; nothing to time")
        return 0
    start = time.monotonic()
    info = versions()
    checks = aiter_compat.warmup()  # the self-test first: a family that fails is never timed
    failed = [f"{c['family']} {c['dtype']} d{c['head_dim']}" for c in checks if c["verdict"] == "fail"]
    print(f"{info['device']} (driver {info['driver']}, {info['runtime']}), aiter {info['aiter'] or 'not installed'}, "
          f"aiter-compat {info['aiter_compat']}; self-test: {len(checks)} families, "
          f"{'all passed' if not failed else 'FAILED: ' + ', '.join(failed)}", flush=True)
    bw = copy_bandwidth()
    print(f"copy bandwidth (read + write): {bw / 1e12:.2f} TB/s, the ceiling of decode", flush=True)
    todo = [c for c in cases(args.quick) if not args.only or re.search(args.only, c[1])]
    rows = []
    for i, (kind, name, shape) in enumerate(todo, 1):
        if time.monotonic() - start > args.budget:
            print(f"[{i}/{len(todo)}] {name}: skipped (past the {args.budget:.0f} s budget; --budget to change)",
                  flush=True)
            rows.append({"case": name, "kind": kind, "skipped": "time budget"})
            continue
        row, _ = run_case(kind, shape)
        row["sdpa_us"] = sdpa_time(kind, shape) * 1e6
        if kind == "decode":
            row["ceiling_us"] = row.pop("bytes") / bw * 1e6
        else:
            row.pop("bytes")
        row.update({"case": name, "kind": kind})
        rows.append(row)
        us = row["us"]
        families = " ".join(f"{f} {us[f]:.1f}" for f in FAMILIES[kind])
        print(f"[{i}/{len(todo)}] {name}: ours {us['auto']:.1f} us ({families}); sdpa {row['sdpa_us']:.1f}"
              + (f"; ceiling {row['ceiling_us']:.1f}" if kind == "decode" else ""), flush=True)
    # AITer's own entry points, where the installed release can take the call: the same calls
    # with the policy aiter-only (a call AITer cannot serve correctly is refused, with why).
    if info["aiter"] and time.monotonic() - start <= args.budget:
        aiter_compat.set_policy("aiter-only")
        try:
            for row in rows:
                if "skipped" in row:
                    continue
                kind, shape = row["kind"], next(s for k, n, s in todo if n == row["case"])
                call = decode_inputs(shape["batch"], shape["ctx"], shape["window"], kv=shape.get("kv", "bf16"))[0] \
                    if kind == "decode" else \
                    prefill_inputs(shape["batch"], shape["seqlen"], shape["d"], shape["window"])
                t, why = time_call(call, kind)
                row["aiter_us"] = t * 1e6
                if why:
                    row["why"]["aiter"] = why
        finally:
            aiter_compat.set_policy("auto")
    print_table(rows)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({**info, "copy_bandwidth_TBps": bw / 1e12, "selftest": checks, "rows": rows}, f, indent=1)
    return 0


def print_table(rows):
    nan = float("nan")
    print(f"\n{'case':28s} {'ours us':>9s} {'family':>12s} {'aiter us':>9s} {'aiter/ours':>10s} {'sdpa us':>9s} "
          f"{'sdpa/ours':>9s} {'ceiling us':>10s} {'ceil/ours':>9s}")
    for r in rows:
        if "skipped" in r:
            print(f"{r['case']:28s} skipped: {r['skipped']}")
            continue
        ours = r["us"]["auto"]
        best = min((f for f in FAMILIES[r["kind"]] if r["us"][f] == r["us"][f]), key=lambda f: r["us"][f], default="-")
        a, s, c = r.get("aiter_us", nan), r["sdpa_us"], r.get("ceiling_us", nan)
        print(f"{r['case']:28s} {ours:9.1f} {best:>12s} {a:9.1f} {ratio(a, ours):10.2f} {s:9.1f} {ratio(s, ours):9.2f} "
              f"{c:10.1f} {ratio(c, ours):9.2f}")
        for family, why in r["why"].items():
            print(f"    {family}: {why}")
    print("ratios: the other's time / ours (above 1: ours is faster); ceil/ours: the share of the copy "
          "bandwidth's time (1 is the ceiling)")


if __name__ == "__main__":
    sys.exit(main())
