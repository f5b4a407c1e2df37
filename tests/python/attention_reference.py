"""An independent float64 reference: a dense masked score matrix with the sink as one more
column of a plain softmax whose value vector is zero."""
import numpy as np


def attention(q, k, v, scale, causal, window=(-1, -1), sink=None, softcap=0.0):
    """q [Sq, Hq, D], k [Sk, Hk, D], v [Sk, Hk, Dv] -> out [Sq, Hq, Dv], lse [Hq, Sq]."""
    q, k, v = (np.asarray(x, dtype=np.float64) for x in (q, k, v))
    sq, hq, _ = q.shape
    sk, hk, dv = v.shape
    group = hq // hk
    k = np.repeat(k, group, axis=1)
    v = np.repeat(v, group, axis=1)
    s = np.einsum("qhd,khd->hqk", q, k) * scale
    if softcap > 0:
        s = softcap * np.tanh(s / softcap)
    pos = np.arange(sq)[:, None] + (sk - sq)
    j = np.arange(sk)[None, :]
    allowed = np.ones((sq, sk), dtype=bool)
    if causal:
        allowed &= j <= pos
    if window[0] >= 0:
        allowed &= j >= pos - window[0]
    if window[1] >= 0:
        allowed &= j <= pos + window[1]
    s = np.where(allowed[None], s, -np.inf)
    sink_col = np.full((hq, sq, 1), -np.inf) if sink is None else np.broadcast_to(
        np.asarray(sink, np.float64)[:, None, None], (hq, sq, 1))
    full = np.concatenate([s, sink_col], axis=2)
    m = full.max(axis=2, keepdims=True)
    safe = np.where(np.isinf(m), 0.0, m)
    e = np.exp(full - safe)
    z = e.sum(axis=2, keepdims=True)
    p = np.where(z > 0, e / np.where(z > 0, z, 1), 0.0)
    out = np.einsum("hqk,khd->qhd", p[:, :, :sk], v)
    lse = np.where(z[..., 0] > 0, safe[..., 0] + np.log(np.where(z[..., 0] > 0, z[..., 0], 1)), -np.inf)
    return out, lse
