"""The route trace (AITER_COMPAT_TRACE=FILE, docs/trace.md): one JSON line per new route decision,
written when it is decided and never again for the calls that follow; one line of counts per
route at exit; aiter_compat.stats() equal to the calls made."""
import json
import os
import subprocess
import sys
import textwrap

from conftest import BUILD_PYTHON, SOURCE

TESTS = os.path.join(SOURCE, "tests", "python")


def run(site, code, trace, expect_rc=0, env=None):
    full_env = dict(os.environ, PYTHONPATH=os.pathsep.join([BUILD_PYTHON, TESTS, site]), PYTHONNOUSERSITE="1",
                    AITER_COMPAT_LOG_LEVEL="warn", AITER_COMPAT_TRACE=str(trace))
    full_env.update(env or {})
    prelude = "import json, sys, threading\nimport aiter_compat, vllm_calls\n"
    proc = subprocess.run([sys.executable, "-c", prelude + textwrap.dedent(code)], capture_output=True, text=True,
                          env=full_env, timeout=120)
    assert proc.returncode == expect_rc, proc.stdout + proc.stderr
    return proc


def lines(path):
    with open(path) as f:
        return [json.loads(line) for line in f]


def test_one_line_per_decision_and_counts_at_exit(fixture_pkg, tmp_path):
    site, _ = fixture_pkg("0.1.9")
    trace = tmp_path / "trace.jsonl"
    proc = run(site, f"""
        import aiter, os
        aiter_compat.install()
        from aiter.ops.triton.unified_attention import unified_attention
        def refused():
            try:
                aiter.flash_attn_varlen_func(**vllm_calls.prefill(True))
            except aiter_compat.AiterCompatError:
                pass
        for _ in range(5): aiter.flash_attn_varlen_func(**vllm_calls.prefill(False))
        for _ in range(3): refused()
        for _ in range(4): unified_attention(**vllm_calls.decode(True))
        size = os.path.getsize({str(trace)!r})
        for _ in range(100): aiter.flash_attn_varlen_func(**vllm_calls.prefill(False))  # no new decision
        print(json.dumps({{"stats": aiter_compat.stats(), "grew": os.path.getsize({str(trace)!r}) - size,
                          "routes": [(r["op"], r["route"], r["calls"]) for r in aiter_compat.routes()]}}))
    """, trace)
    seen = json.loads(proc.stdout)
    assert seen["grew"] == 0  # calls on decided routes write nothing
    written = lines(trace)
    decisions, counts = written[:-1], written[-1]
    assert [d["event"] for d in decisions] == ["decision"] * 3 and counts["event"] == "counts"
    assert [d["id"] for d in decisions] == [1, 2, 3]
    by_route = {(d["op"], d["route"]): d for d in decisions}
    assert set(by_route) == {("flash_attn_varlen_func", "aiter"), ("flash_attn_varlen_func", "refused"),
                             ("unified_attention", "aiter")}
    for d in decisions:
        assert d["pid"] == counts["pid"] and d["front"] == "python" and d["policy"] == "auto"
        assert d["aiter"].startswith("aiter 0.1.9 at ")
        assert d["features"]["op"] == d["op"] and d["features"]["dtype"] == "bfloat16"
        assert [c["name"].split(": ")[-1] for c in d["candidates"]][0] in ("flash_attn_varlen_func", "unified_attention")
        assert all(set(c) == {"name", "accepted", "reasons"} for c in d["candidates"] + d["kernels"])
    aiter_route = by_route[("flash_attn_varlen_func", "aiter")]
    assert aiter_route["target"] == aiter_route["kernel"] == "aiter.ops.mha.flash_attn_varlen_func"
    assert aiter_route["candidates"][0]["accepted"] and aiter_route["features"]["sinks"] == "no"
    refused = by_route[("flash_attn_varlen_func", "refused")]
    assert refused["target"] == "" and not any(c["accepted"] for c in refused["candidates"])
    assert all(c["reasons"] for c in refused["candidates"])  # every candidate says why not
    assert "flash_attn_varlen_func takes no sink_ptr (first in 0.1.10), and this call sets it" in \
        refused["candidates"][0]["reasons"]

    expected = {"flash_attn_varlen_func": {"aiter.ops.mha.flash_attn_varlen_func": 105, "refused": 3},
                "unified_attention": {"aiter.ops.triton.unified_attention.unified_attention": 4}}
    assert seen["stats"] == expected
    assert counts["calls"] == 112 and counts["front"] == "python"
    got = {}
    for r in counts["routes"]:
        got.setdefault(r["op"], {})[r["target"]] = r["calls"]
    assert got == expected
    assert sorted((d["id"], d["calls"]) for d in counts["decisions"]) == [(1, 105), (2, 3), (3, 4)]
    assert sorted(seen["routes"]) == sorted([["flash_attn_varlen_func", "aiter", 105],
                                             ["flash_attn_varlen_func", "refused", 3], ["unified_attention", "aiter", 4]])


def test_threads_one_decision_all_counted(fixture_pkg, tmp_path):
    site, _ = fixture_pkg("0.1.10")
    trace = tmp_path / "trace-%p.jsonl"
    proc = run(site, """
        import aiter, os
        aiter_compat.install()
        barrier = threading.Barrier(4)
        def work():
            barrier.wait()
            for _ in range(250):
                aiter.flash_attn_varlen_func(**vllm_calls.prefill(True))
        threads = [threading.Thread(target=work) for _ in range(4)]
        [t.start() for t in threads]; [t.join() for t in threads]
        print(os.getpid(), json.dumps(aiter_compat.stats()))
    """, trace)
    pid, stats = proc.stdout.split(" ", 1)
    assert json.loads(stats) == {"flash_attn_varlen_func": {"aiter.ops.mha.flash_attn_varlen_func": 1000}}
    written = lines(tmp_path / f"trace-{pid}.jsonl")  # %p: the process id
    assert [w["event"] for w in written] == ["decision", "counts"]
    assert written[1]["calls"] == 1000


def test_counts_cover_dispatchers_replaced_by_reset(tmp_path):
    """CPU calls (the fallback route) before and after reset(): stats() starts again, the exit
    line has both dispatchers' calls; sys.exit with a code still writes it."""
    trace = tmp_path / "trace.jsonl"
    proc = run(str(tmp_path), """
        import numpy as np
        q = np.ones((3, 2, 8), np.float32); cu = np.array([0, 3], np.int32)
        for _ in range(3): aiter_compat.flash_attn_varlen_func(q, q, q, cu, cu, 3, 3, causal=True)
        before = aiter_compat.stats()
        aiter_compat.reset()
        for _ in range(2): aiter_compat.flash_attn_varlen_func(q, q, q, cu, cu, 3, 3, causal=True)
        print(json.dumps([before, aiter_compat.stats()]))
        sys.exit(3)
    """, trace, expect_rc=3)
    before, after = json.loads(proc.stdout)
    target = "fallback varlen_fwd (cpu reference)"
    assert before == {"flash_attn_varlen_func": {target: 3}} and after == {"flash_attn_varlen_func": {target: 2}}
    written = lines(trace)
    assert [w["event"] for w in written] == ["decision", "decision", "counts"]
    assert written[0]["route"] == "fallback (cpu)" and written[0]["kernel"] == "cpu_reference"
    assert written[0]["aiter"] == "aiter (not installed)"
    assert written[-1]["calls"] == 5
    assert written[-1]["routes"] == [{"op": "flash_attn_varlen_func", "route": "fallback (cpu)", "target": target,
                                      "calls": 5}]


def test_a_trace_file_that_cannot_be_opened(tmp_path):
    trace = tmp_path / "missing-dir" / "trace.jsonl"
    proc = run(str(tmp_path), """
        import numpy as np
        q = np.ones((3, 2, 8), np.float32); cu = np.array([0, 3], np.int32)
        aiter_compat.flash_attn_varlen_func(q, q, q, cu, cu, 3, 3, causal=True)
        print(json.dumps(aiter_compat.stats()))
    """, trace)
    assert json.loads(proc.stdout) == {"flash_attn_varlen_func": {"fallback varlen_fwd (cpu reference)": 1}}
    assert f"AITER_COMPAT_TRACE={trace}: cannot open {trace} for appending (No such file or directory)" in proc.stderr
    assert not trace.exists()


def test_without_a_trace_nothing_is_written_and_stats_still_count(tmp_path):
    proc = run(str(tmp_path), """
        import numpy as np
        q = np.ones((3, 2, 8), np.float32); cu = np.array([0, 3], np.int32)
        for _ in range(7): aiter_compat.flash_attn_varlen_func(q, q, q, cu, cu, 3, 3, causal=True)
        print(json.dumps(aiter_compat.stats()))
    """, "", env={"AITER_COMPAT_TRACE": ""})
    assert json.loads(proc.stdout) == {"flash_attn_varlen_func": {"fallback varlen_fwd (cpu reference)": 7}}
    assert os.listdir(tmp_path) == []


def test_forked_multiprocessing_children_write_their_own_counts(tmp_path):
    """A child forked by multiprocessing ends with os._exit (no atexit handlers): it still writes
    its counts line, counting its own calls only, under its own pid."""
    trace = tmp_path / "trace.jsonl"
    proc = run(str(tmp_path), """
        import multiprocessing, os
        import numpy as np
        q = np.ones((3, 2, 8), np.float32); cu = np.array([0, 3], np.int32)
        def calls(n):
            for _ in range(n): aiter_compat.flash_attn_varlen_func(q, q, q, cu, cu, 3, 3, causal=True)
        def child():
            calls(2)
            print("child", os.getpid(), json.dumps(aiter_compat.stats()), flush=True)
        calls(3)
        p = multiprocessing.get_context("fork").Process(target=child)
        p.start(); p.join()
        calls(1)
        print("parent", os.getpid(), json.dumps(aiter_compat.stats()), flush=True)
    """, trace)
    seen = {kind: (int(pid), json.loads(stats)) for kind, pid, stats in
            (line.split(" ", 2) for line in proc.stdout.splitlines())}
    target = "fallback varlen_fwd (cpu reference)"
    assert seen["child"][1] == {"flash_attn_varlen_func": {target: 2}}
    assert seen["parent"][1] == {"flash_attn_varlen_func": {target: 4}}
    counts = {w["pid"]: w["calls"] for w in lines(trace) if w["event"] == "counts"}
    assert counts == {seen["child"][0]: 2, seen["parent"][0]: 4}
    assert [w["event"] for w in lines(trace)].count("decision") == 1  # decided in the parent, once


def test_the_vllm_examples_simulation(tmp_path):
    """examples/vllm/simulate_vllm_calls.py gives the trace examples/vllm/README.md shows."""
    trace = tmp_path / "sim.jsonl"
    env = dict(os.environ, PYTHONPATH=BUILD_PYTHON, AITER_COMPAT_LOG_LEVEL="info", PYTHONNOUSERSITE="1")
    proc = subprocess.run([sys.executable, os.path.join(SOURCE, "examples", "vllm", "simulate_vllm_calls.py"),
                           str(trace)], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    written = lines(trace)
    decisions = [(d["id"], d["op"], d["route"], d["features"]["window"]) for d in written if d["event"] == "decision"]
    assert decisions == [(1, "flash_attn_varlen_func", "refused", "left set, right unbounded"),
                         (2, "unified_attention", "aiter", "left set, right unbounded"),
                         (3, "flash_attn_varlen_func", "refused", "none"),
                         (4, "unified_attention", "aiter", "none")]
    assert written[-1]["calls"] == 36 and written[-1]["routes"] == [
        {"op": "flash_attn_varlen_func", "route": "refused", "target": "refused", "calls": 4},
        {"op": "unified_attention", "route": "aiter", "target": "aiter.ops.triton.unified_attention.unified_attention",
         "calls": 32}]
    assert "install: routes put under aiter.flash_attn_fp8_pertensor_func, aiter.flash_attn_func" in proc.stderr
