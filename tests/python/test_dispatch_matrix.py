"""Every matrix entry's fixture AITer receives vLLM's exact keyword sets, with and without sinks:
never a TypeError; calls AITer can serve reach it with only the keywords it accepts; the others
are refused with the reasons (on ROCm stand-in tensors no GPU fallback is built yet)."""
import json
import os
import subprocess
import sys

import pytest

from conftest import BUILD_PYTHON, MATRIX_PATH, SOURCE, make_fixture

MATRIX = make_fixture.load_matrix(MATRIX_PATH)
VERSIONS = [str(r["version"]) for r in MATRIX["releases"]]


def run_calls(site):
    env = dict(os.environ, PYTHONPATH=f"{BUILD_PYTHON}:{site}", AITER_COMPAT_LOG_LEVEL="off", PYTHONNOUSERSITE="1")
    proc = subprocess.run([sys.executable, os.path.join(SOURCE, "tests", "python", "vllm_calls.py")],
                          capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return {r["call"]: r for r in map(json.loads, proc.stdout.splitlines())}


def reasons(record):
    return [reason for c in record.get("candidates") or [] for reason in c["reasons"]]


@pytest.mark.parametrize("version", VERSIONS)
def test_vllm_calls_on_every_release(fixture_pkg, version):
    site, _ = fixture_pkg(version)
    results = run_calls(site)
    rel = make_fixture.release(MATRIX, version)
    assert all(r["route"] != "TypeError" for r in results.values()), results
    varlen, unified = rel["ops"]["flash_attn_varlen_func"], rel["ops"]["unified_attention"]
    takes_sinks = varlen.get("present") and "sink_ptr" in varlen["params"]
    for name, r in results.items():
        if r["op"] == "flash_attn_varlen_func":
            sinks = "+sinks" in name
            # What the call sets, beyond hints: each must be a parameter of the release.
            needs = {"softmax_scale", "out"} | ({"causal"} if "cached" not in name else set())
            needs |= {"sink_ptr"} if sinks else set()
            needs |= {"window_size"} if "sliding" in name else set()
            needs |= {"return_lse"} if "extend" in name else set()
            servable = varlen.get("present") and needs <= set(varlen["params"]) and not (sinks and "hd128" in name)
            if servable:
                assert r["route"] == "aiter", (name, reasons(r))
                # Exactly the required parameters and the ones the call sets (min_seqlen_q only
                # where the release has it: a hint, dropped elsewhere). The fixture refuses
                # unknown keywords itself, so a subset test would hold by construction.
                hints = {"min_seqlen_q"} & set(varlen["params"])
                assert set(r["received"]) == set(varlen["params"][:varlen["required"]]) | needs | hints, name
                assert r["same_objects"], name  # passed through, not copied
                assert ("sink_ptr" in r["received"]) == sinks, name
                if "sliding" in name:
                    assert len(r["window"]) == varlen["window_arity"] and r["window"][:2] == [127, 0]
            else:
                assert r["route"] == "error", name
                text = " ".join(reasons(r))
                if not varlen.get("present"):
                    assert "flash_attn_varlen_func is not in this install" in text
                elif sinks and not takes_sinks:
                    assert "takes no sink_ptr (first in 0.1.10)" in text
                elif "hd128" in name and needs <= set(varlen["params"]):
                    assert "quirk v3-asm-drops-sinks" in text
                else:
                    assert "takes no " in text
        else:
            if unified.get("present"):
                assert r["route"] == "aiter", (name, reasons(r))
                # The required parameters, and the sinks exactly when the call has them (the
                # fixture records no window equal to its default literal, (-1, -1)).
                sinks = {"sinks"} if "+sinks" in name else set()
                window = {"window_size"} if "sliding" in name else set()
                required = set(unified["params"][:unified["required"]]) - {"window_size"}
                assert set(r["received"]) == required | window | sinks, name
                assert r["same_objects"], name  # bf16 sinks too: AITer gets exactly what was passed
            else:
                assert r["route"] == "error"
                assert "unified_attention is not in this install" in " ".join(reasons(r))
