"""The shared libraries export their entry points and nothing of what they link statically.

A Python module or C library that exports the code of its static archives (ours, or libstdc++'s
where a toolchain links it statically) lends those symbols to the system libstdc++.so.6 that a
dependency loads beside it: torch and LLVM then run on a mix of two libstdc++ copies and crash
(seen on a CUDA image whose GCC links libstdc++ statically: `free(): invalid pointer` in
std::locale at `import torch` after `import aiter_compat`, and a null call in std::call_once when
the HIP runtime's LLVM loaded)."""
import glob
import os
import shutil
import subprocess

import pytest

from conftest import BUILD_PYTHON

BUILD = os.path.dirname(BUILD_PYTHON)


def exported(path):
    """Names of the functions and objects the library defines in its dynamic symbol table."""
    out = subprocess.run(["nm", "-D", "--defined-only", path], capture_output=True, text=True, check=True).stdout
    names = []
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] in "TWDBRVuiG":
            names.append(parts[2].split("@")[0])
    return names


def library(pattern):
    found = sorted(glob.glob(os.path.join(BUILD, pattern)))
    if not found:
        pytest.skip(f"{pattern} is not built under {BUILD}")
    return found[0]


@pytest.fixture(autouse=True)
def _needs_nm():
    if not shutil.which("nm"):
        pytest.skip("nm (binutils) is not installed: cannot read the dynamic symbol tables")


def test_python_module_exports_only_its_init():
    names = exported(library("python/aiter_compat/_aiter_compat*.so"))
    assert "PyInit__aiter_compat" in names
    assert [n for n in names if n != "PyInit__aiter_compat" and not n.startswith("_fini") and not n.startswith("_init")] == []


def test_c_library_exports_only_its_api():
    names = exported(library("libaiter_compat.so*"))
    assert "aiter_compat_varlen_attention" in names or any(n.startswith("aiter_compat_") for n in names)
    others = [n for n in names if not n.startswith("aiter_compat_") and n not in ("_init", "_fini")]
    assert others == [], f"exported beyond the C API: {others[:20]}"
