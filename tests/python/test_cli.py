"""The CLI's contract: exit codes, output forms, options."""
import json
import os

import pytest


def test_no_aiter_is_a_clean_report(cli, tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    proc = cli.run("probe", env={"PYTHONPATH": str(empty)})
    assert proc.returncode == 0, proc.stderr
    assert "aiter:" in proc.stdout and "not found" in proc.stdout
    assert "Traceback" not in proc.stdout + proc.stderr
    report = cli.probe_json(env={"PYTHONPATH": str(empty)})
    assert report["aiter"]["found"] is False
    assert report["aiter"]["reason"]
    assert report["device"]["arch"] == "none" or report["device"]["present"]


def test_json_schema_keys(cli, fixture_pkg):
    site, pkg = fixture_pkg("0.1.12")
    report = cli.probe_json("--aiter-root", site)
    assert report["schema_version"] == 1
    for key in ("found", "distribution", "version", "version_source", "path"):
        assert key in report["aiter"]
    assert report["aiter"]["path"] == pkg
    for name in ("flash_attn_varlen_func", "flash_attn_func", "mha_batch_prefill_func", "unified_attention",
                 "pa_fwd_asm", "paged_attention_v1"):
        op = report["ops"][name]
        assert set(op) >= {"present", "module", "params", "sinks"}
        assert op["sinks"] in ("supported", "unsupported", "unknown")
    assert isinstance(report["quirks"], list)
    assert "arch" in report["device"]


def test_human_rows_are_aligned(cli, fixture_pkg):
    site, _ = fixture_pkg("0.1.15.post1")
    proc = cli.run("probe", "--aiter-root", site)
    assert proc.returncode == 0
    lines = proc.stdout.splitlines()
    columns = {len(line) - len(line.split(":", 1)[1].lstrip()) for line in lines}
    assert len(columns) == 1, lines
    assert any(line.startswith("op.unified_attention:") and "q_scales" in line for line in lines)


def test_require_sinks_asks_for_prefill_and_decode(cli, fixture_pkg, tmp_path):
    """One entry point taking sinks is not enough: 0.1.9.post1's unified_attention does, its
    flash_attn_varlen_func (every engine's prefill) raises TypeError on sink_ptr. This machine
    has no GPU, so no fallback kernel can serve what AITer does not."""
    site, _ = fixture_pkg("0.1.9.post1")
    proc = cli.run("probe", "--aiter-root", site, "--require", "sinks")
    assert proc.returncode == 3, proc.stdout
    assert "requirement sinks: not met" in proc.stdout
    assert "  decode: aiter unified_attention (takes sinks)" in proc.stdout
    assert "requirement not met:" in proc.stdout
    assert ("sinks: prefill: aiter flash_attn_varlen_func: sinks unsupported (no sink_ptr parameter and no "
            "**kwargs: passing it raises TypeError)") in proc.stdout
    assert "sinks: prefill: fallback:" in proc.stdout
    report = cli.probe_json("--aiter-root", site, "--require", "sinks", expect_rc=3)
    require = report["require"]
    assert require["met"] is False
    assert all(r.startswith("sinks: prefill: ") for r in require["reasons"]), require["reasons"]
    families = {f["family"]: f for f in require["families"]}
    assert families["decode"]["served_by"] == "aiter unified_attention (takes sinks)"
    assert families["prefill"]["served_by"] is None and families["prefill"]["reasons"]


def test_require_one_entry_point(cli, fixture_pkg):
    site, _ = fixture_pkg("0.1.9.post1")
    proc = cli.run("probe", "--aiter-root", site, "--require", "sinks:unified_attention")
    assert proc.returncode == 0, proc.stdout
    assert "requirement sinks:unified_attention: met" in proc.stdout
    proc = cli.run("probe", "--aiter-root", site, "--require", "sinks:flash_attn_varlen_func")
    assert proc.returncode == 3
    assert "sinks:flash_attn_varlen_func: flash_attn_varlen_func: aiter flash_attn_varlen_func: sinks unsupported" \
        in proc.stdout
    report = cli.probe_json("--aiter-root", site, "--require", "sinks:unified_attention",
                            "--require", "sinks:pa_fwd_asm", expect_rc=3)
    assert [f["feature"] for f in report["require"]["families"]] == ["sinks:unified_attention", "sinks:pa_fwd_asm"]
    assert any("paged decode has never taken sinks (pa_decode_gluon" in r for r in report["require"]["reasons"])


def test_require_sinks_without_a_gpu_counts_a_quirk_that_may_drop_them(cli, fixture_pkg, tmp_path):
    """0.1.10 takes sink_ptr, but on gfx942/gfx950 bf16 head-dim-128 calls lose the sinks; with
    no GPU here to tell, and none for a fallback, prefill is not served."""
    site, _ = fixture_pkg("0.1.10")
    report = cli.probe_json("--aiter-root", site, "--require", "sinks", expect_rc=3)
    assert any("quirk v3-asm-drops-sinks may apply" in r for r in report["require"]["reasons"]), report["require"]
    empty = tmp_path / "none"
    empty.mkdir()
    proc = cli.run("probe", "--require", "sinks", env={"PYTHONPATH": str(empty)})
    assert proc.returncode == 3 and "no aiter package" in proc.stdout


def test_check_matrix_shows_a_readable_diff(cli, fixture_pkg):
    site, pkg = fixture_pkg("0.1.10")
    mha = f"{pkg}/ops/mha.py"
    with open(mha) as f:
        text = f.read()
    with open(mha, "w") as f:  # a stale wheel: flash_attn_varlen_func without sink_ptr
        f.write(text.replace(", sink_ptr=_NOT_PASSED):\n    return _record('flash_attn_varlen_func'",
                             "):\n    return _record('flash_attn_varlen_func'"))
    proc = cli.run("probe", "--aiter-root", site, "--check-matrix")
    assert proc.returncode == 4, proc.stdout
    assert "ops.flash_attn_varlen_func.params: -sink_ptr" in proc.stdout
    assert "ops.flash_attn_varlen_func.sinks: matrix 0.1.10 expects supported, found unsupported" in proc.stdout


def test_weak_version_and_matrix_entry_option(cli, fixture_pkg):
    site, _ = fixture_pkg("0.1.14", with_metadata=False)
    with open(f"{site}/aiter/_version.py", "w") as f:
        f.write("__version__ = '0.1.0'\n")
    report = cli.probe_json("--aiter-root", site)
    assert report["aiter"]["version"] == "0.1.0"
    assert report["aiter"]["version_source"] == "aiter/_version.py"
    assert report["aiter"]["version_trusted"] is False
    assert cli.run("probe", "--aiter-root", site, "--check-matrix").returncode == 4
    assert cli.run("probe", "--aiter-root", site, "--check-matrix", "--matrix-entry", "0.1.14").returncode == 0


def test_user_matrix_override(cli, fixture_pkg, tmp_path):
    site, _ = fixture_pkg("0.1.12")
    broken = tmp_path / "broken.yaml"
    broken.write_text("schema_version: 1\nreleases: {\n")
    report = cli.probe_json("--aiter-root", site, "--matrix", str(broken))
    assert report["matrix"]["source"] == "built-in"
    assert "broken.yaml" in report["matrix"]["warning"]
    report = cli.probe_json("--aiter-root", site, env={"AITER_COMPAT_MATRIX": str(broken)})
    assert "broken.yaml" in report["matrix"]["warning"]


def test_bad_arguments_exit_2(cli, tmp_path):
    assert cli.run("probe", "--aiter-root", str(tmp_path / "missing")).returncode == 2
    assert cli.run("probe", "--require", "wings").returncode == 2
    bad = cli.run("probe", "--require", "sinks:flash_attn")
    assert bad.returncode == 2
    assert "sinks:flash_attn not in" in bad.stderr and "sinks:flash_attn_varlen_func" in bad.stderr
    assert cli.run().returncode == 2


def test_no_gpu_runtime_library_is_told_from_a_runtime_without_a_device(cli, tmp_path):
    """--require's reasons say which: nothing to load, or a runtime that found no GPU."""
    # Both vendors' libraries are tried, whatever device nodes this machine has.
    for vendor in ("nvidia", "amd"):
        report = cli.probe_json(env={"PYTHONPATH": str(tmp_path), "AITER_COMPAT_GPU_RUNTIME": vendor})
        device = report["device"]
        if device["present"] or not all("cannot open shared object file" in a["result"] for a in device["attempts"]
                                        if a["how"] != "skipped"):
            pytest.skip(f"a GPU runtime library loads here ({device['runtime'] or device['attempts']}); "
                        "this case needs a machine without one")
        assert any(a["how"] == "dlopen" for a in device["attempts"]), "every runtime library tried is listed"
        skipped = [a for a in device["attempts"] if a["how"] == "skipped"]
        assert len(skipped) == 1 and f"AITER_COMPAT_GPU_RUNTIME={vendor} leaves it unloaded" in skipped[0]["result"]
        assert device["reason"] == "no GPU runtime library found"


def test_a_runtime_is_not_loaded_without_its_gpu_driver(cli, tmp_path):
    """No /dev/kfd: the HIP runtime is not loaded (it would bring its own LLVM into the process for
    nothing); no /dev/nvidiactl: nor the CUDA driver; the report says why, and how to force it."""
    present = [n for n in ("/dev/kfd", "/dev/nvidiactl", "/dev/dxg") if os.path.exists(n)]
    if present:
        pytest.skip(f"this machine has a GPU driver's device node ({', '.join(present)}); the case needs one without")
    device = cli.probe_json(env={"PYTHONPATH": str(tmp_path), "AITER_COMPAT_GPU_RUNTIME": ""})["device"]
    assert not device["present"]
    assert [a["how"] for a in device["attempts"]] == ["skipped", "skipped"], device["attempts"]
    results = " | ".join(a["result"] for a in device["attempts"])
    for node, vendor in (("/dev/kfd", "amd"), ("/dev/nvidiactl", "nvidia")):
        assert f"{node} is absent" in results and f"AITER_COMPAT_GPU_RUNTIME={vendor} loads it anyway" in results
    assert device["reason"].startswith("no GPU driver found")
    odd = cli.probe_json(env={"PYTHONPATH": str(tmp_path), "AITER_COMPAT_GPU_RUNTIME": "cuda"})["device"]
    assert all("'cuda' is not auto, amd, nvidia or none: read as auto" in a["result"] for a in odd["attempts"])
