"""AITer's Triton flash attention under its own names, routed like the rest of aiter_compat.

    from aiter_compat.triton_mha import flash_attn_varlen_func   # instead of:
    # from aiter.ops.triton.attention.mha import flash_attn_varlen_func

The signatures are AITer's newest (`sink=` for learned sinks, `window_size=(left, right)`,
`config=` a tuning dict that changes no result). A call goes to AITer's Triton function when
the installed release takes everything it sets (`sink` from v0.1.8), else to the fallback kernels
(the same ones as the CK names'), else raises AiterCompatError with every candidate's reasons.
"""
from ._aiter_compat import triton_flash_attn_func as flash_attn_func  # noqa: F401
from ._aiter_compat import triton_flash_attn_varlen_func as flash_attn_varlen_func  # noqa: F401

__all__ = ["flash_attn_func", "flash_attn_varlen_func"]
