"""tools/sass_compare.py: cuobjdump's SASS read kernel by kernel (every instruction, at any
address width), the first loads and matrix instructions found, and two builds compared through a
stand-in cuobjdump, with the exit status a script can act on."""
import importlib.util
import os
import stat
import textwrap

import pytest

from conftest import SOURCE

SCRIPT_PATH = os.path.join(SOURCE, "tools", "sass_compare.py")


def _load_script():
    spec = importlib.util.spec_from_file_location("sass_compare_under_test", SCRIPT_PATH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


sc = _load_script()


def sass_text(kernels):
    """cuobjdump -sass's layout: a header per function, one line per instruction with its
    address (4 hex digits, 5 past 0xffff) and encoding, and the encoding's second half alone."""
    lines = ["", "\tcode for sm_90a"]
    for name, instructions in kernels.items():
        lines.append(f"\t\tFunction : {name}")
        lines.append('\t.headerflags\t@"EF_CUDA_64BIT_ADDRESS EF_CUDA_SM90"')
        for i, ins in enumerate(instructions):
            lines.append(f"        /*{i * 16:04x}*/                   {ins} ;   /* 0x000fe20000000800 */")
            lines.append("                                                  /* 0x000fe20000000800 */")
    return "\n".join(lines) + "\n"


def test_every_instruction_is_read_past_address_0xffff():
    body = ["IMAD R1, R2, R3, RZ"] * 5000 + ["EXIT"]
    kernels = sc.parse_sass(sass_text({"ac_long": body, "ac_short": ["NOP", "EXIT"]}))
    assert len(kernels["ac_long"]) == 5001  # addresses run to 0x13880: five hex digits
    assert kernels["ac_long"][-1] == "EXIT"
    assert kernels["ac_short"] == ["NOP", "EXIT"]


def test_summary_finds_the_first_load_copy_and_product():
    ins = ["S2R R0, SR_TID.X", "@P0 LDG.E R2, desc[UR4][R4.64]", "LDGSTS.E.BYPASS.128 [R1], desc[UR4][R2.64]",
           "STL [R1], R2", "HMMA.16816.F32.BF16 R4, R8, R12, R4", "LDL R3, [R1]", "EXIT"]
    k = sc.summary(ins)
    assert (k["instructions"], k["first_global_load"], k["first_async_copy"], k["first_matrix"], k["local_memory"]) == (7, 1, 2, 4, 2)
    assert sc.summary(["HGMMA.64x64x16.F32.BF16 R24, gdesc[UR4], RZ", "EXIT"])["first_matrix"] == 0
    assert sc.summary(["EXIT"])["first_global_load"] == -1


def test_registers_per_function():
    text = textwrap.dedent("""\
        Resource usage:
         Common:
          GLOBAL:0
         Function ac_a:
          REG:128 STACK:0 SHARED:1024 LOCAL:0 CONSTANT[0]:1040
         Function ac_b:
          REG:40 STACK:0 SHARED:0 LOCAL:0 CONSTANT[0]:1040
        """)
    assert sc.parse_registers(text) == {"ac_a": 128, "ac_b": 40}


@pytest.fixture
def fake_cuobjdump(tmp_path, monkeypatch):
    """A cuobjdump that prints the SASS and register files written beside each 'code object'."""
    tool = tmp_path / "cuobjdump"
    tool.write_text('#!/bin/sh\nif [ "$1" = -sass ]; then cat "$2.sass"; else cat "$2.res"; fi\n')
    tool.chmod(tool.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("CUOBJDUMP", str(tool))

    def build(name, kernels):
        co = tmp_path / name
        co.write_bytes(b"")
        (tmp_path / f"{name}.sass").write_text(sass_text(kernels))
        (tmp_path / f"{name}.res").write_text("".join(f" Function {k}:\n  REG:64 STACK:0\n" for k in kernels))
        return str(co)
    return build


def test_same_passes_only_when_every_kernel_matches(fake_cuobjdump, capsys):
    old = fake_cuobjdump("old.co", {"ac_keys": ["LDG.E R1", "EXIT"], "ac_rows": ["HMMA R1", "EXIT"]})
    same = fake_cuobjdump("same.co", {"ac_keys": ["LDG.E R1", "EXIT"], "ac_rows": ["HMMA R1", "EXIT"]})
    twin = fake_cuobjdump("twin.co", {"ac_keys": ["LDG.E R1", "EXIT"], "ac_keys_fold": ["LDG.E R1", "EXIT"]})
    moved = fake_cuobjdump("moved.co", {"ac_keys": ["NOP", "LDG.E R1", "EXIT"], "ac_rows": ["HMMA R1", "EXIT"]})
    assert sc.main(["same", same, old]) == 0
    assert "2 of 2 kernels" in capsys.readouterr().out
    assert sc.main(["same", twin, old]) == 1  # the twin has no counterpart without the rename
    assert "ac_keys_fold: no ac_keys_fold" in capsys.readouterr().out
    assert sc.main(["same", twin, old, "--rename", "_fold="]) == 0
    capsys.readouterr()
    assert sc.main(["same", moved, old]) == 1  # one instruction more before the load
    assert "ac_keys: differs from ac_keys (3 against 2 instructions)" in capsys.readouterr().out


def test_summary_command_and_a_missing_tool(fake_cuobjdump, capsys, monkeypatch):
    co = fake_cuobjdump("one.co", {"ac_keys": ["LDG.E R1", "LDGSTS [R2]", "HMMA R3", "EXIT"], "ac_rows": ["EXIT"]})
    assert sc.main(["summary", co, "--only", "keys"]) == 0
    out = capsys.readouterr().out
    assert "ac_keys: 4 instructions, 64 registers, first global load at 0, first async copy at 1, first matrix instruction at 2" in out
    assert "ac_rows" not in out
    monkeypatch.setattr(sc, "cuobjdump", lambda: None)
    assert sc.main(["summary", co]) == 2
    assert "no cuobjdump" in capsys.readouterr().err
