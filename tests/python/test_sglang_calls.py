"""SGLang's GPT-OSS calls through the names its attention backend binds at import, after the
SGLang plug-in ran, over fixture AITer releases (sglang_calls.py): every bound name is a route,
never a TypeError, and each call goes where the release can serve it correctly."""
import json
import os
import subprocess
import sys

import pytest

from conftest import BUILD_PYTHON, SOURCE

W = 128  # GPT-OSS's sliding window, as sglang_calls.py passes it


def run(site, tmp_path):
    env = dict(os.environ, PYTHONPATH=f"{BUILD_PYTHON}:{site}:{os.path.join(SOURCE, 'tests', 'python')}",
               AITER_COMPAT_LOG_LEVEL="off", PYTHONNOUSERSITE="1")
    env.pop("AITER_COMPAT_INSTALL", None)
    proc = subprocess.run([sys.executable, os.path.join(SOURCE, "tests", "python", "sglang_calls.py"),
                           str(tmp_path / "backend")], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    lines = [json.loads(x) for x in proc.stdout.splitlines()]
    return lines[0], {r["call"]: r for r in lines[1:]}


def reasons(record):
    return " ".join(r for c in record.get("candidates") or [] for r in c["reasons"])


def test_release_without_the_backend_imports_is_left_to_sglang(fixture_pkg, tmp_path):
    # v0.1.9.post1 has no aiter.ops.triton.attention: SGLang's own import fails and it picks
    # another backend; the plug-in must not be what fails.
    site, _ = fixture_pkg("0.1.9.post1")
    head, calls = run(site, tmp_path)
    assert head["imported"] is False and "aiter.ops.triton.attention" in head["import_error"]
    assert calls == {}


@pytest.mark.parametrize("version", ["0.1.13", "0.1.20.post1"])
def test_bound_names_are_routes(fixture_pkg, tmp_path, version):
    site, _ = fixture_pkg(version)
    head, calls = run(site, tmp_path)
    assert head["imported"] is True
    assert head["bound"] == {"mha_batch_prefill_func": True, "flash_attn_varlen_func": True,
                             "flash_attn_varlen_fp8_pertensor_func": True, "unified_attention": True}, head
    assert any(p.endswith(".mha_batch_prefill_func") for p in head["installed"])
    assert all(r["route"] != "TypeError" for r in calls.values()), calls
    # Without sinks, every release serves the extend: AITer gets it, the None sink_ptr included
    # only where the release takes sink_ptr.
    plain = calls["extend_full"]
    assert plain["route"] == "aiter" and plain["called"] == "mha_batch_prefill_func", plain
    assert plain["same_objects"] and plain["left_over"] == 0
    # unified_attention takes sinks on every release that has it.
    for name in ("decode_full+sinks", "decode_sliding+sinks"):
        assert calls[name]["route"] == "aiter" and "sinks" in calls[name]["received"], calls[name]


def test_extend_with_sinks_on_0_1_13_goes_to_aiter(fixture_pkg, tmp_path):
    site, _ = fixture_pkg("0.1.13")
    _, calls = run(site, tmp_path)
    for name in ("extend_full+sinks", "extend_sliding+sinks"):
        r = calls[name]
        assert r["route"] == "aiter" and "sink_ptr" in r["received"], r
        if "sliding" in name:
            assert r["window"] == [W - 1, -1], r


def test_extend_with_sinks_is_kept_from_aiter_from_0_1_14(fixture_pkg, tmp_path):
    # "no matching kernel found" from 0.1.14 when sink_ptr comes without sink_size: the call is
    # not sent there. On these stand-in tensors no GPU is present, so the fallback is refused
    # too, and the error says both.
    site, _ = fixture_pkg("0.1.20.post1")
    _, calls = run(site, tmp_path)
    for name in ("extend_full+sinks", "extend_sliding+sinks"):
        r = calls[name]
        assert r["route"] == "error", r
        text = reasons(r)
        assert "quirk batch-prefill-sink-needs-sink-size" in text
        assert "no GPU was found at start-up" in text
