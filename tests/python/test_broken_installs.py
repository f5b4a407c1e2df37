"""Broken installs are reported, never crash the probe, and exit 0 (a probe that found problems
is a successful probe)."""
import os
import shutil
import subprocess
import sys

import pytest


def compile_shared(tmp_path, name, source):
    """A tiny shared object built with the system compiler."""
    src = tmp_path / f"{name}.c"
    src.write_text(source)
    out = tmp_path / f"{name}.so"
    cc = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if cc is None:
        pytest.fail("no C compiler (cc, gcc or clang) on PATH to build test modules")
    subprocess.run([cc, "-shared", "-fPIC", "-o", str(out), str(src)], check=True)
    return out


def test_import_raising(cli, fixture_pkg):
    site, pkg = fixture_pkg("0.1.12")
    with open(f"{pkg}/__init__.py", "a") as f:
        f.write("raise ImportError('libamdhip64.so: cannot open shared object file')\n")
    report = cli.probe_json("--aiter-root", site, "--live")
    assert "libamdhip64.so" in report["channels"]["live"]["import_error"]
    assert any("libamdhip64.so" in e["error"] for e in report["aiter"]["errors"])
    # The static reading still describes the install.
    assert report["ops"]["flash_attn_varlen_func"]["read_by"] == "static"
    assert report["ops"]["flash_attn_varlen_func"]["sinks"] == "supported"


def test_import_calling_sys_exit(cli, fixture_pkg):
    site, pkg = fixture_pkg("0.1.12")
    with open(f"{pkg}/__init__.py", "a") as f:
        f.write("import sys\nsys.exit(3)\n")
    report = cli.probe_json("--aiter-root", site, "--live")
    assert "SystemExit" in report["channels"]["live"]["import_error"]


def test_syntax_error_in_a_module(cli, fixture_pkg):
    site, pkg = fixture_pkg("0.1.12")
    with open(f"{pkg}/ops/mha.py", "a") as f:
        f.write("def broken(:\n")
    report = cli.probe_json("--aiter-root", site)
    op = report["ops"]["flash_attn_varlen_func"]
    assert op["present"] is False and op["sinks"] == "unknown"
    assert "SyntaxError" in op["sinks_reason"]
    assert any("SyntaxError" in e["error"] and "mha.py" in e["where"] for e in op["errors"])
    assert report["ops"]["pa_fwd_asm"]["present"] is True  # other modules still read
    live = cli.probe_json("--aiter-root", site, "--live")
    assert "SyntaxError" in live["channels"]["live"]["import_error"]


def test_syntax_error_in_the_package_init_fails_every_entry_point(cli, fixture_pkg):
    """`import aiter.ops.mha` runs aiter/__init__.py first: a syntax error there makes every entry
    point unimportable, however well its own module reads, and --require counts it."""
    site, pkg = fixture_pkg("0.1.20.post1")
    with open(f"{pkg}/__init__.py", "a") as f:
        f.write("\ndef broken(:\n")
    report = cli.probe_json("--aiter-root", site)
    present = [name for name, op in report["ops"].items() if op["present"]]
    assert "unified_attention" in present and "flash_attn_varlen_func" in present
    for name in present:
        op = report["ops"][name]
        assert op["import_error"]["where"] == f"{pkg}/__init__.py", (name, op)
        assert op["import_error"]["error"].startswith("SyntaxError: "), (name, op)
        assert f"importing {op['module']} runs this file first" in op["import_error"]["error"]
        assert op["sinks"] == "unknown" and op["sinks_reason"].startswith(f"cannot be imported: {pkg}/__init__.py: "), op
        assert op["import_error"] in op["errors"]
    for require in ("sinks:unified_attention", "sinks:flash_attn_varlen_func", "sinks"):
        proc = cli.run("probe", "--aiter-root", site, "--require", require)
        assert proc.returncode == 3, (require, proc.stdout, proc.stderr)
        assert "cannot be imported" in proc.stdout + proc.stderr, require
    # The same install, whole: the requirement of that entry point is met (no quirk applies).
    intact, _ = fixture_pkg("0.1.20.post1", subdir="intact")
    assert cli.run("probe", "--aiter-root", intact, "--require", "sinks:unified_attention").returncode == 0


def test_error_only_code_generation_sees_in_a_subpackage_init(cli, fixture_pkg):
    """A file the parser accepts but the compiler refuses ('return' outside a function) fails its
    import all the same: aiter/ops/triton/__init__.py breaks the entry points under it and no
    other."""
    site, pkg = fixture_pkg("0.1.20.post1")
    with open(f"{pkg}/ops/triton/__init__.py", "a") as f:
        f.write("\nreturn None\n")
    ops = cli.probe_json("--aiter-root", site)["ops"]
    for name in ("unified_attention", "triton_flash_attn_varlen_func", "triton_flash_attn_func"):
        assert ops[name]["present"] is True, name
        assert ops[name]["import_error"]["where"] == f"{pkg}/ops/triton/__init__.py", (name, ops[name])
        assert "'return' outside function" in ops[name]["import_error"]["error"], ops[name]
        assert ops[name]["sinks"] == "unknown", name
    for name in ("flash_attn_varlen_func", "mha_batch_prefill_func", "pa_fwd_asm"):
        assert ops[name]["import_error"] is None, (name, ops[name])
        assert ops[name]["sinks"] != "unknown", (name, ops[name])


def test_error_only_code_generation_sees_in_a_known_module(cli, fixture_pkg):
    """The entry point's own module is compiled as an import compiles it too."""
    site, pkg = fixture_pkg("0.1.12")
    with open(f"{pkg}/ops/mha.py", "a") as f:
        f.write("\nfor x in ():\n    pass\nbreak\n")
    op = cli.probe_json("--aiter-root", site)["ops"]["flash_attn_varlen_func"]
    assert op["present"] is False and op["sinks"] == "unknown"
    assert any("'break' outside loop" in e["error"] and e["where"].endswith("mha.py") for e in op["errors"]), op


@pytest.mark.parametrize("mode", ["timestamp", "checked-hash"])
def test_cached_bytecode_never_hides_an_error_in_a_changed_source(cli, fixture_pkg, mode):
    """The probe reads a module's valid __pycache__ file as an import does (cheaper than compiling
    it); one that no longer matches its source is ignored, as an import ignores it."""
    site, pkg = fixture_pkg("0.1.20.post1")
    subprocess.run([sys.executable, "-m", "compileall", "-q", "--invalidation-mode", mode, pkg], check=True,
                   capture_output=True)
    assert os.path.isfile(f"{pkg}/__pycache__/__init__.{sys.implementation.cache_tag}.pyc")
    whole = cli.probe_json("--aiter-root", site)["ops"]
    assert whole["unified_attention"]["import_error"] is None and whole["unified_attention"]["sinks"] == "supported"
    with open(f"{pkg}/__init__.py", "a") as f:
        f.write("\nbreak\n")
    ops = cli.probe_json("--aiter-root", site)["ops"]
    assert "'break' outside loop" in ops["unified_attention"]["import_error"]["error"], ops["unified_attention"]
    with open(f"{pkg}/ops/mha.py", "a") as f:
        f.write("\ncontinue\n")
    op = cli.probe_json("--aiter-root", site)["ops"]["flash_attn_varlen_func"]
    assert op["present"] is False
    assert any("'continue' not properly in loop" in e["error"] for e in op["errors"]), op


def test_missing_module(cli, fixture_pkg):
    site, pkg = fixture_pkg("0.1.12")
    os.remove(f"{pkg}/ops/attention.py")
    report = cli.probe_json("--aiter-root", site)
    assert report["ops"]["pa_fwd_asm"]["present"] is False
    assert report["ops"]["pa_fwd_asm"]["import_paths"]["aiter.ops.attention"] == "absent"
    assert report["ops"]["flash_attn_varlen_func"]["present"] is True
    live = cli.probe_json("--aiter-root", site, "--live")
    assert "ModuleNotFoundError" in live["channels"]["live"]["import_error"]


def test_two_copies_on_the_path(cli, fixture_pkg):
    first, _ = fixture_pkg("0.1.12", subdir="first")
    second, _ = fixture_pkg("0.1.9", subdir="second")
    report = cli.probe_json(env={"PYTHONPATH": f"{first}:{second}"})
    assert report["aiter"]["path"] == f"{first}/aiter"
    assert report["aiter"]["copies"] == [f"{first}/aiter", f"{second}/aiter"]
    assert any("several aiter packages" in e["error"] for e in report["aiter"]["errors"])
    assert report["aiter"]["version"] == "0.1.12"


def test_unrelated_package_named_aiter(cli, tmp_path):
    site = tmp_path / "site"
    (site / "aiter").mkdir(parents=True)
    (site / "aiter" / "__init__.py").write_text("async def aiter_helper(it):\n    return it\n")
    info = site / "aiter-0.13.20191203.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: aiter\nVersion: 0.13.20191203\n\n")
    (info / "top_level.txt").write_text("aiter\n")
    report = cli.probe_json("--aiter-root", str(site), "--require", "sinks", expect_rc=3)
    assert report["aiter"]["foreign"] is True
    assert "not AMD's AITer" in report["aiter"]["reason"]
    text = cli.run("probe", "--aiter-root", str(site)).stdout
    assert "not AMD's AITer" in text


def test_stale_module_signature_disagrees_with_stub(cli, fixture_pkg):
    """@compile_ops can replace __signature__ from a stale JIT module: live and static differ."""
    site, pkg = fixture_pkg("0.1.12")
    with open(f"{pkg}/ops/attention.py", "a") as f:
        f.write("import inspect as _inspect\n"
                "pa_fwd_asm.__signature__ = _inspect.Signature(list(_inspect.signature(pa_fwd_asm).parameters.values())[:-1])\n")
    report = cli.probe_json("--aiter-root", site, "--live")
    assert [d["what"] for d in report["disagreements"]] == ["ops.pa_fwd_asm.params"]
    assert report["ops"]["pa_fwd_asm"]["params"][-1] == "high_precision"  # live wins: what a call meets


def test_native_modules_broken_in_every_way(cli, fixture_pkg, tmp_path):
    site, pkg = fixture_pkg("0.1.13")
    jit = f"{pkg}/jit"
    os.makedirs(jit)
    good = compile_shared(tmp_path, "good", "int aiter_ctypes_abi_version(void){return 2;}\nvoid pa_fwd(void){}\n")
    lacking = compile_shared(tmp_path, "lacking", "int something_else(void){return 0;}\n")
    shutil.copy(good, f"{jit}/module_attention_asm.so")
    shutil.copy(lacking, f"{jit}/module_mha_fwd.so")
    with open(f"{jit}/module_half_built.so", "wb") as f:
        f.write(good.read_bytes()[:200])  # the JIT died while writing it
    foreign = bytearray(good.read_bytes())
    foreign[18:20] = (183).to_bytes(2, "little")  # e_machine: aarch64
    with open(f"{jit}/module_wrong_arch.so", "wb") as f:
        f.write(foreign)
    os.makedirs(f"{jit}/module_a_directory.so")
    report = cli.probe_json("--aiter-root", site)
    mods = {m["name"]: m for m in report["native"]["modules"]}
    assert mods["module_attention_asm"]["loads"] is True
    assert {"aiter_ctypes_abi_version", "pa_fwd"} <= set(mods["module_attention_asm"]["exports"])
    assert mods["module_mha_fwd"]["exports"] == [] and mods["module_mha_fwd"]["loads"] is True
    assert mods["module_half_built"]["elf_ok"] is False and mods["module_half_built"]["loads"] is None
    assert mods["module_wrong_arch"]["elf_error"] == "built for aarch64, not this machine"
    assert mods["module_a_directory"]["elf_error"] == "not a regular file"
