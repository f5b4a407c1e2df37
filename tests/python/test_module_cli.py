"""`python -m aiter_compat` (the wheel's `aiter-compat` console script) runs the executable's C++
command line: same output, same exit codes, same version."""
import json
import os
import re
import subprocess
import sys

import pytest

from conftest import BUILD_PYTHON, project_version


class ModuleCli:
    """Runs `python -m aiter_compat` from the build tree, in the environment the Cli fixture uses."""

    def __init__(self, home):
        self.home = home

    def run(self, *args, env=None):
        full_env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": self.home, "PYTHONNOUSERSITE": "1"}
        full_env.update(env or {})
        # The fixture's site folder goes after the module's, as the executable's embedded
        # interpreter sees PYTHONPATH.
        full_env["PYTHONPATH"] = os.pathsep.join(p for p in (BUILD_PYTHON, full_env.get("PYTHONPATH")) if p)
        return subprocess.run([sys.executable, "-m", "aiter_compat", *args], capture_output=True, text=True,
                              env=full_env, timeout=60)


@pytest.fixture
def module_cli(cli):
    return ModuleCli(cli.home)


def test_one_version_everywhere(cli, module_cli):
    version = project_version()
    assert re.fullmatch(r"\d+\.\d+\.\d+", version)
    for proc in (cli.run("--version"), module_cli.run("--version")):
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.strip() == f"aiter-compat {version}"
    assert cli.probe_json()["aiter_compat_version"] == version
    code = ("import aiter_compat as a; "
            "print(a.__version__, a._aiter_compat.__version__, a.probe()['aiter_compat_version'])")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=dict(os.environ, PYTHONPATH=BUILD_PYTHON, AITER_COMPAT_LOG_LEVEL="off"))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == [version] * 3


def test_probe_json_equals_the_executables(cli, module_cli, fixture_pkg):
    site, pkg = fixture_pkg("0.1.12")
    # No GPU here: a sink model cannot run (prefill's fallback needs one), so the require exits 3.
    for args, rc in ((["--aiter-root", site], 0), (["--aiter-root", site, "--require", "sinks", "--check-matrix"], 3)):
        exe = cli.probe_json(*args, expect_rc=rc)
        proc = module_cli.run("probe", "--json", *args)
        assert proc.returncode == rc, proc.stderr
        assert json.loads(proc.stdout) == exe
    assert exe["aiter"]["path"] == pkg and exe["check_matrix"]["matches"] is True


def test_found_through_the_interpreters_path(cli, module_cli, fixture_pkg):
    site, pkg = fixture_pkg("0.1.5")
    env = {"PYTHONPATH": site}
    proc = module_cli.run("probe", "--json", env=env)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["aiter"]["path"] == pkg and report["aiter"]["version"] == "0.1.5"
    assert report == cli.probe_json(env=env)


def test_exit_codes_and_text_output_match(cli, module_cli, fixture_pkg, tmp_path):
    old_site, _ = fixture_pkg("0.1.5", subdir="old")
    cases = [("probe", "--aiter-root", old_site),
             ("probe", "--aiter-root", old_site, "--require", "sinks"),  # 3
             ("probe", "--require", "wings"),  # 2
             ("probe", "--aiter-root", str(tmp_path / "missing")),  # 2
             ()]  # 2: no subcommand
    for args in cases:
        exe, mod = cli.run(*args), module_cli.run(*args)
        assert (mod.returncode, mod.stdout) == (exe.returncode, exe.stdout), args
    assert [cli.run(*a).returncode for a in cases] == [0, 3, 2, 2, 2]


def test_cli_main_in_process_twice_and_bad_argv():
    # In one interpreter: the logger is set up once, a second run must not fail on it.
    code = ("import sys, aiter_compat._aiter_compat as m; rc = [m.cli_main(['x', '--version']) for _ in range(2)]; "
            "print(rc, file=sys.stderr)\n"
            "try:\n m.cli_main(['x', 3])\nexcept TypeError as e:\n print('TypeError', e, file=sys.stderr)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=dict(os.environ, PYTHONPATH=BUILD_PYTHON))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [f"aiter-compat {project_version()}"] * 2
    assert "[0, 0]" in proc.stderr and "TypeError cli_main(argv): argv[1] is int" in proc.stderr
