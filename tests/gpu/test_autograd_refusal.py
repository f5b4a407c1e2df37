"""The fallback kernels compute the forward pass only: an input that requires grad with autograd
on is refused at the call, naming the argument (before, the output sat outside the graph and
backward failed later with torch's 'element 0 of tensors does not require grad'); under
torch.no_grad(), or detached, the same call runs."""
import pytest

import aiter_compat

torch = pytest.importorskip("torch")


def test_requires_grad_is_refused_by_name_and_no_grad_runs():
    q = torch.randn(40, 8, 64, dtype=torch.bfloat16, device="cuda", requires_grad=True)
    k = torch.randn(40, 2, 64, dtype=torch.bfloat16, device="cuda")
    cu = torch.tensor([0, 40], dtype=torch.int32, device="cuda")
    sinks = torch.randn(8, device="cuda")
    with pytest.raises(aiter_compat.AiterCompatError) as e:
        aiter_compat.flash_attn_varlen_func(q, k, k, cu, cu, 40, 40, causal=True, sink_ptr=sinks)
    assert e.value.argument == "q" and "forward pass only" in e.value.needed, str(e.value)
    with torch.no_grad():
        out = aiter_compat.flash_attn_varlen_func(q, k, k, cu, cu, 40, 40, causal=True, sink_ptr=sinks)
    detached = aiter_compat.flash_attn_varlen_func(q.detach(), k, k, cu, cu, 40, 40, causal=True, sink_ptr=sinks)
    torch.cuda.synchronize()
    assert torch.equal(out, detached)
