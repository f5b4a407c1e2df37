"""The distributable wheel (`auditwheel repair` of the one `pip wheel .` builds) needs nothing of
the build machine: auditwheel sees no library outside its policy, the installed ELF files need
only the C and C++ runtimes and what the wheel carries, and in a fresh venv the console script
probes with the -dev packages' shared libraries hidden from the loader."""
import json
import os
import re
import shlex
import subprocess
import zipfile

import pytest

from conftest import SOURCE, project_version
from wheel_support import make_venv, run_pip

# What the installed extension may need from the system: glibc's and GCC's runtimes. Not
# libpython: the extension runs inside an interpreter and takes its symbols from it.
SYSTEM_LIBS = {"libc.so.6", "libm.so.6", "libdl.so.2", "libpthread.so.0", "ld-linux-x86-64.so.2",
               "libstdc++.so.6", "libgcc_s.so.1"}
# Shared libraries of debian-packages.txt's -dev packages that the code could link: these are
# hidden from the loader. (nlohmann-json, CLI11 and DLPack are headers only.)
DEV_LIBRARY = re.compile(r"/lib(yaml-cpp|spdlog|fmt|python3[.0-9]*)\.so[.0-9]*$")


def auditwheel_show(auditwheel, wheel):
    proc = subprocess.run([os.path.join(auditwheel, "auditwheel"), "show", "--json", wheel], capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = json.loads(proc.stdout)
    assert report["version"] == 1 and "error" not in report, report
    return report


def elf_files(folder):
    for root, _, names in os.walk(folder):
        for name in names:
            path = os.path.join(root, name)
            with open(path, "rb") as f:
                if f.read(4) == b"\x7fELF":
                    yield path


def dynamic_section(path):
    """(NEEDED names, RUNPATH or RPATH entries) from readelf."""
    text = subprocess.run(["readelf", "-d", path], capture_output=True, text=True, check=True).stdout
    needed = re.findall(r"\(NEEDED\)\s+Shared library: \[(.+?)\]", text)
    paths = re.findall(r"\((?:RUNPATH|RPATH)\)\s+Library (?:runpath|rpath): \[(.+?)\]", text)
    return needed, [p for entry in paths for p in entry.split(":")]


def test_wheel_carries_the_module_the_command_and_the_version(built_wheel):
    version = project_version()
    assert os.path.basename(built_wheel).startswith(f"aiter_compat-{version}-")
    with zipfile.ZipFile(built_wheel) as z:
        names = z.namelist()
        metadata = z.read(f"aiter_compat-{version}.dist-info/METADATA").decode()
        entry_points = z.read(f"aiter_compat-{version}.dist-info/entry_points.txt").decode()
    assert {"aiter_compat/__init__.py", "aiter_compat/__main__.py", "aiter_compat/_version.py"} <= set(names)
    assert any(re.fullmatch(r"aiter_compat/_aiter_compat\.cpython-.*\.so", n) for n in names), names
    assert f"\nVersion: {version}\n" in metadata
    assert re.search(r"^aiter-compat = aiter_compat\.__main__:main$", entry_points, re.MULTILINE), entry_points


def test_only_yaml_cpp_is_grafted(built_wheel, auditwheel):
    # spdlog and fmt are compiled in as headers; Debian's libyaml-cpp.a is not position
    # independent, so the shared yaml-cpp is the one library auditwheel copies into the wheel.
    external = auditwheel_show(auditwheel, built_wheel)["external_libs"]
    assert external and all(re.fullmatch(r"libyaml-cpp\.so[.0-9]*", name) for name in external), external


def test_repaired_wheel_is_manylinux_with_the_glibc_the_readme_states(repaired_wheel, auditwheel):
    report = auditwheel_show(auditwheel, repaired_wheel)
    assert report["external_libs"] == {}, report["external_libs"]
    tag = report["overall_tag"]
    assert re.fullmatch(r"manylinux_2_\d+_x86_64", tag), tag
    assert tag in os.path.basename(repaired_wheel)
    with open(os.path.join(SOURCE, "README.md")) as f:
        stated = re.search(r"<!-- wheel-tag -->.*?`(manylinux_2_\d+)`", f.read(), re.DOTALL)
    assert stated, "README.md states no wheel tag after <!-- wheel-tag -->"
    assert tag == stated.group(1) + "_x86_64", f"auditwheel gives {tag}; README.md says {stated.group(1)}"


@pytest.fixture(scope="module")
def wheel_venv(repaired_wheel, tmp_path_factory):
    """A fresh venv (no system site-packages) holding the repaired wheel alone."""
    venv = tmp_path_factory.mktemp("wheel-venv")
    python = make_venv(venv)
    run_pip(python, "install", "-q", "--no-index", "--no-deps", repaired_wheel)
    site = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['platlib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    return venv, python, site


def test_installed_elf_files_need_only_the_c_and_cpp_runtimes(wheel_venv):
    _, _, site = wheel_venv
    package, carried = os.path.join(site, "aiter_compat"), os.path.join(site, "aiter_compat.libs")
    files = list(elf_files(package)) + list(elf_files(carried))
    assert any(os.path.basename(f).startswith("_aiter_compat.") for f in files), files
    carried_names = set(os.listdir(carried)) if os.path.isdir(carried) else set()
    for path in files:
        needed, search = dynamic_section(path)
        here = os.path.dirname(path)
        for name in needed:
            if name in SYSTEM_LIBS:
                continue
            # Anything else must be a copy the wheel carries, reachable through the file's RUNPATH.
            assert name in carried_names, f"{path} needs {name}, neither a C/C++ runtime nor in the wheel"
            dirs = {os.path.realpath(p.replace("$ORIGIN", here)) for p in search}
            assert os.path.realpath(carried) in dirs, f"{path} needs {name} but its RUNPATH is {search}"


def hidden_dev_libraries():
    """The real files behind every -dev library the loader's cache knows."""
    cache = subprocess.run(["ldconfig", "-p"], capture_output=True, text=True, check=True).stdout
    paths = re.findall(r"=> (\S+)", cache)
    return sorted({os.path.realpath(p) for p in paths if DEV_LIBRARY.search(p)})


class HiddenView:
    """Runs commands in a private mount namespace where each -dev library reads as an empty file."""

    def __init__(self, tmp_path, venv):
        self.empty = tmp_path / "empty.so"
        self.empty.write_bytes(b"")
        self.files = hidden_dev_libraries()
        home = tmp_path / "home"
        home.mkdir()
        self.env = {"PATH": f"{venv}/bin:/usr/bin:/bin", "HOME": str(home), "PYTHONNOUSERSITE": "1",
                    "AITER_COMPAT_LOG_LEVEL": "warn"}

    def run(self, *argv):
        mounts = "".join(f"mount --bind {shlex.quote(str(self.empty))} {shlex.quote(f)}; " for f in self.files)
        script = f"set -e; {mounts}exec \"$@\""
        return subprocess.run(["unshare", "--mount", "sh", "-c", script, "sh", *argv], capture_output=True,
                              text=True, env=self.env, timeout=120)


@pytest.fixture
def hidden(wheel_venv, tmp_path):
    probe = subprocess.run(["unshare", "--mount", "true"], capture_output=True, text=True)
    if probe.returncode != 0:
        why = f"`unshare --mount` is not permitted here ({probe.stderr.strip()}): the -dev libraries cannot be hidden"
        if os.environ.get("CI"):
            pytest.fail(why)
        pytest.skip(why)
    return HiddenView(tmp_path, wheel_venv[0])


def test_probe_from_the_wheel_alone_with_the_dev_libraries_hidden(wheel_venv, hidden, fixture_pkg):
    venv, python, site = wheel_venv
    version = project_version()
    script = os.path.join(str(venv), "bin", "aiter-compat")
    # The hiding works: not one of the libraries can be loaded in the view.
    if hidden.files:
        code = ("import ctypes, sys\nfor f in sys.argv[1:]:\n try:\n  ctypes.CDLL(f)\n"
                "  print('loaded', f)\n except OSError:\n  pass")
        proc = hidden.run(python, "-c", code, *hidden.files)
        assert proc.returncode == 0 and proc.stdout == "", proc.stdout + proc.stderr

    proc = hidden.run(script, "--version")
    assert (proc.returncode, proc.stdout) == (0, f"aiter-compat {version}\n"), proc.stderr
    proc = hidden.run(script, "probe", "--json")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["aiter_compat_version"] == version
    assert report["aiter"]["found"] is False and report["channels"]["static"]["ran"] is True
    # A fixture AITer: the static channel and the built-in matrix (yaml-cpp) both at work.
    fixture_site, pkg = fixture_pkg("0.1.12")
    proc = hidden.run(script, "probe", "--json", "--aiter-root", fixture_site, "--check-matrix")
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr
    report = json.loads(proc.stdout)
    assert report["aiter"]["path"] == pkg and report["check_matrix"] == {"matches": True, "differences": []}
    assert report["ops"]["unified_attention"]["present"] is True

    proc = hidden.run(python, "-m", "aiter_compat", "probe")
    assert proc.returncode == 0 and "not found" in proc.stdout, proc.stdout + proc.stderr
    proc = hidden.run(python, "-c", "import aiter_compat as a; print(a.__file__, a.__version__)")
    assert proc.returncode == 0, proc.stderr
    path, found = proc.stdout.split()
    assert path.startswith(site) and found == version
    # The loader resolves every dependency of every installed ELF file in the view.
    for folder in ("aiter_compat", "aiter_compat.libs"):
        for elf in elf_files(os.path.join(site, folder)):
            proc = hidden.run("ldd", elf)
            assert proc.returncode == 0 and "not found" not in proc.stdout, f"{elf}:\n{proc.stdout}{proc.stderr}"
