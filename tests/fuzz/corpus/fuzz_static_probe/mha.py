import torch


def flash_attn_varlen_func(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, min_seqlen_q=0,
                           dropout_p=0.0, softmax_scale=None, causal=False, window_size=(-1, -1, 0), sink_ptr=None):
    return q


@compile_ops("module_mha_fwd")
def flash_attn_func(q, k, v, *args, **kwargs): ...


__all__ = ["flash_attn_varlen_func"]
