"""The amd-aiter wheels the package index really serves, fetched without installing (cached),
unpacked and probed with --aiter-root. Their matrix entries must match."""
import os
import subprocess
import sys
import zipfile

import pytest

# Every amd-aiter release the index served when this list was last checked (2026-12-02).
PUBLISHED = ["0.1.7.post2.dev18"]
CACHE = os.environ.get("AITER_COMPAT_WHEEL_CACHE", os.path.expanduser("~/.cache/aiter-compat/wheels"))


def wheel_for(version):
    os.makedirs(CACHE, exist_ok=True)
    name = f"amd_aiter-{version}-py3-none-any.whl"
    path = os.path.join(CACHE, name)
    if not os.path.exists(path):
        proc = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
                               "--python-version", "3.12", "-d", CACHE, f"amd-aiter=={version}"],
                              capture_output=True, text=True, timeout=600)
        if proc.returncode != 0 or not os.path.exists(path):
            pytest.skip(f"amd-aiter {version} could not be downloaded: {proc.stderr.strip()[-300:]}")
    return path


@pytest.mark.parametrize("version", PUBLISHED)
def test_published_wheel_matches_matrix(cli, tmp_path, version):
    unpacked = tmp_path / "wheel"
    with zipfile.ZipFile(wheel_for(version)) as z:
        z.extractall(unpacked)
    report = cli.probe_json("--aiter-root", str(unpacked), "--check-matrix")
    assert report["aiter"]["distribution"] == "amd-aiter"
    assert report["aiter"]["version"] == version
    assert report["aiter"]["matrix_entry"] == version
    assert report["check_matrix"]["matches"] is True, report["check_matrix"]["differences"]
    assert report["ops"]["flash_attn_varlen_func"]["sinks"] == "unsupported"
    assert report["ops"]["unified_attention"]["sinks"] == "supported"
