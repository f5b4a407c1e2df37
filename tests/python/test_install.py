"""aiter_compat.install() under an unmodified engine: fixture AITer releases from compat_matrix.yaml
receive vLLM's exact keyword sets through AITer's own names after the vLLM plugin's function
ran. No TypeError; what the release can serve reaches it once (the original function, no
recursion) with the sink where it takes one; the rest is refused with AiterCompatError;
uninstall() puts the very same objects back."""
import json
import os
import subprocess
import sys

import pytest

from aiter_compat import _aiter_compat as _ext
from conftest import BUILD_PYTHON, MATRIX_PATH, SOURCE, make_fixture

MATRIX = make_fixture.load_matrix(MATRIX_PATH)
TESTS = os.path.join(SOURCE, "tests", "python")
# No unified_attention; the published wheel; the old unified path without sink_ptr; the move and
# sink_ptr (0.1.10); q_scales shifting unified_attention's positions (0.1.15.post1); main.
# The modules the fixture's aiter/__init__.py imports * from, as AITer's does.
STAR_IMPORTED = ("aiter.ops.mha", "aiter.ops.attention")
RELEASES = ["0.1.5", "0.1.7.post2.dev18", "0.1.9", "0.1.10", "0.1.15.post1", "main"]


def run_engine(site, env=None):
    full_env = dict(os.environ, PYTHONPATH=os.pathsep.join([BUILD_PYTHON, TESTS, site]), AITER_COMPAT_LOG_LEVEL="info",
                    PYTHONNOUSERSITE="1")
    full_env.pop("AITER_COMPAT_INSTALL", None)
    full_env.update(env or {})
    proc = subprocess.run([sys.executable, os.path.join(TESTS, "engine_calls.py")], capture_output=True, text=True,
                          env=full_env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    lines = [json.loads(line) for line in proc.stdout.splitlines()]
    return lines[0], lines[1:-1], lines[-1], proc.stderr


def without_call_details(record):
    return {k: v for k, v in record.items() if k not in ("result",)}


@pytest.mark.parametrize("version", RELEASES)
def test_engine_calls_through_aiter_names(fixture_pkg, version):
    site, _ = fixture_pkg(version)
    rel = make_fixture.release(MATRIX, version)
    varlen, unified = rel["ops"]["flash_attn_varlen_func"], rel["ops"]["unified_attention"]
    head, calls, tail, log = run_engine(site)

    # Every path of the release holding a routed entry point got the route, and nothing else:
    # its module, the old paths AITer's compat map keeps (from 0.1.10 install() points them at
    # the moved module), and `aiter` for what aiter/__init__.py re-exports (aiter.ops.mha's names).
    expected = set()
    for op, (function, _) in _ext._routed_entry_points().items():
        row = rel["ops"].get(op, {})
        if not row.get("present"):
            continue
        paths = [row["module"], *row.get("aliases", [])] + (["aiter"] if row["module"] in STAR_IMPORTED else [])
        expected |= {f"{p}.{function}" for p in paths}
    assert {"aiter.flash_attn_varlen_func", "aiter.ops.mha.flash_attn_varlen_func"} <= expected
    assert set(head["installed"]) == expected, head
    assert "install: routes put under" in log

    calls_by_path = {(r["call"], r["path"]): r for r in calls if "direct" in r}
    assert calls_by_path, calls
    for (name, path), r in calls_by_path.items():
        through, direct = r["through_aiter"], r["direct"]
        assert r["patched"], (name, path)
        assert through["route"] != "TypeError", (name, path, through)
        # Through AITer's name exactly what aiter_compat itself does: same route, same keywords.
        assert without_call_details(through) == without_call_details(direct), (name, path)
        if through["route"] == "aiter":
            assert through["left_over"] == 0, (name, path)  # AITer reached once: the original, no loop
            assert through["same_objects"], (name, path)
            params = varlen["params"] if r["op"] == "flash_attn_varlen_func" else unified["params"]
            assert set(through["received"]) <= set(params), (name, path)
        else:
            assert through["route"] == "error", (name, path, through)

    prefill = calls_by_path[("prefill", "aiter")]["through_aiter"]
    sinks = calls_by_path[("prefill+sinks", "aiter")]["through_aiter"]
    # vLLM passes sink_ptr=None on every call: dropped for releases without it, never a TypeError.
    assert prefill["route"] == "aiter" and "sink_ptr" not in prefill["received"]
    if "sink_ptr" in varlen["params"]:
        assert sinks["route"] == "aiter" and "sink_ptr" in sinks["received"]  # the sink reaches AITer
    else:
        assert sinks["route"] == "error" and "takes no sink_ptr (first in 0.1.10)" in sinks["message"]
    if unified.get("present"):
        paths = {p for (_, p) in calls_by_path if p.startswith("aiter.ops.triton")}
        # The old path keeps working from 0.1.10 through AITer's compat alias, to the same route.
        assert "aiter.ops.triton.unified_attention" in paths
        decode = calls_by_path[("decode+sinks", "aiter.ops.triton.unified_attention")]["through_aiter"]
        assert decode["route"] == "aiter" and "sinks" in decode["received"]
        # Positional arguments are bound in the release's own order: alibi_slopes is 17th before
        # 0.1.15.post1 and 18th after (q_scales inserted); read as the newest order it would be q_scales.
        positional = [r for r in calls if r["call"] == "positional_decode"]
        assert positional and all(p["through_aiter"]["route"] == "aiter" for p in positional), positional
        assert all("alibi_slopes" in p["through_aiter"]["received"] for p in positional)
    else:
        assert not any(p.startswith("aiter.ops.triton") for (_, p) in calls_by_path)

    assert tail["patched_during"] == tail["held_during"]  # every path an engine imported saw the route
    assert set(tail["restored"]) == expected
    assert tail["identical"] == tail["present"]  # uninstall: the very objects that were there
    # ... and the old unified_attention path, which install() made name the moved module, is
    # AITer's compat alias again (absent from sys.modules until imported).
    aliases = unified.get("aliases", []) if unified.get("present") else []
    assert tail["gone"] == sorted(a + ".unified_attention" for a in aliases)
    assert tail["left_calls"] == 0


def test_without_install_old_releases_raise_type_error(fixture_pkg):
    """The failure install() exists for: vLLM's sink_ptr=None against 0.1.9 raises TypeError."""
    site, _ = fixture_pkg("0.1.9")
    code = ("import vllm_calls, aiter\n"
            "try:\n    aiter.flash_attn_varlen_func(**vllm_calls.prefill(False))\n"
            "except TypeError as e:\n    print('TypeError', e)\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([BUILD_PYTHON, TESTS, site]), PYTHONNOUSERSITE="1")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert proc.stdout.startswith("TypeError") and "sink_ptr" in proc.stdout, proc.stdout + proc.stderr


@pytest.mark.parametrize("flag", ["0", "off", "False"])
def test_plugin_off(fixture_pkg, flag):
    site, _ = fixture_pkg("0.1.10")
    head, calls, tail, log = run_engine(site, env={"AITER_COMPAT_INSTALL": flag})
    assert head["installed"] == [] and head["patched"] == []
    assert f"AITER_COMPAT_INSTALL={flag.lower()}: AITer's entry points left as they are" in log
    assert all(not r["patched"] for r in calls if "patched" in r)


def test_plugin_unknown_flag_installs_with_a_warning(fixture_pkg):
    site, _ = fixture_pkg("0.1.10")
    head, _, _, log = run_engine(site, env={"AITER_COMPAT_INSTALL": "maybe"})
    assert head["installed"], head
    assert "AITER_COMPAT_INSTALL='maybe' is not one of" in log
