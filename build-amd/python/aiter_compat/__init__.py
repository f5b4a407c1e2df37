"""aiter_compat: AITer's attention entry points that work on every AITer release.

    from aiter_compat import flash_attn_varlen_func   # instead of: from aiter import ...

Each call goes to AITer by keyword (only the parameters the installed release accepts) when it
can serve the call correctly, to a bundled fallback kernel when it cannot, or raises
AiterCompatError listing every candidate route and why it was refused; never a TypeError from
a keyword an old release lacks, never a result that silently ignored the sinks.

AITer's Triton names (aiter.ops.triton.attention.mha's flash_attn_varlen_func and flash_attn_func,
`sink=`) are aiter_compat.triton_mha's, also here as triton_flash_attn_varlen_func and
triton_flash_attn_func.

probe() describes the install, routes() shows the decisions so far, explain(name, **call) shows
the decision for a call without running it, stats() counts the calls per route.
AITER_COMPAT_POLICY (auto, prefer-fallback, aiter-only) or set_policy() chooses between AITer
and the fallbacks. AITER_COMPAT_TRACE=FILE writes each new route decision, and the counts at
exit, as JSON lines (docs/trace.md).

Every fallback GPU kernel family checks itself against the CPU reference on its device before
its first use (docs/selftest.md); warmup() runs those checks now, as it must be before CUDA/HIP
graph capture, and selftest_verdicts() lists the verdicts (AITER_COMPAT_SELFTEST=first-use,
always or off).

install() puts the same routing under AITer's own names (aiter.flash_attn_varlen_func, ...), for
engines that call AITer directly; uninstall() puts AITer's functions back. bound_elsewhere()
lists the names other modules bound to AITer's functions before install() ran, which it rebinds. The vLLM plugin
(aiter_compat.vllm_plugin) calls install() in every vLLM process.

`aiter-compat` (the console script) and `python -m aiter_compat` run the command line.
"""
from ._aiter_compat import (  # noqa: F401
    AiterCompatError,
    explain,
    flash_attn_fp8_pertensor_func,
    flash_attn_func,
    flash_attn_varlen_fp8_pertensor_func,
    flash_attn_varlen_func,
    get_policy,
    merge_attn_states,
    mha_batch_prefill_func,
    pa_decode_bf16_asm,
    pa_decode_gluon,
    paged_attention_decode,
    probe,
    reset,
    routes,
    selftest_verdicts,
    set_policy,
    stats,
    triton_flash_attn_func,
    triton_flash_attn_varlen_func,
    unified_attention,
    warmup,
)
from ._aiter_compat import _force_kernel_row  # noqa: F401 (the benchmark's: each family timed alone)
from ._install import bound_elsewhere, install, uninstall  # noqa: F401
from ._process_hooks import register as _register_process_hooks

_register_process_hooks()

__all__ = [
    "AiterCompatError", "bound_elsewhere", "explain", "flash_attn_fp8_pertensor_func", "flash_attn_func",
    "flash_attn_varlen_fp8_pertensor_func", "flash_attn_varlen_func", "get_policy", "merge_attn_states",
    "mha_batch_prefill_func", "install", "pa_decode_bf16_asm", "pa_decode_gluon", "paged_attention_decode", "probe", "reset", "routes", "selftest_verdicts", "set_policy", "stats",
    "triton_flash_attn_func", "triton_flash_attn_varlen_func", "uninstall", "unified_attention", "warmup",
]


def __getattr__(name):
    # __version__ is read on first use: finding the distribution's metadata scans sys.path.
    if name == "__version__":
        from ._version import version
        return version()
    raise AttributeError(f"module 'aiter_compat' has no attribute {name!r}")
