#pragma once
// An independent formulation of attention for the tests to compare with: a dense score matrix,
// masked, with the sink as one more column of a plain softmax whose value vector is zero. It
// shares no code with the kernels, so a fault in theirs cannot hide in it.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "aiter_compat/shim/attention_args.hpp"
#include "host_tensor.hpp"

namespace aiter_compat::testing_support {

constexpr double kNoSink = -std::numeric_limits<double>::infinity();

struct Dense {
  // Row-major [Sq][Dv] output and [Sq] lse of one sequence and one query head.
  std::vector<double> out, lse;
};

using Rows = std::vector<std::vector<double>>;

// q: [Sq][D], k: [Sk][D], v: [Sk][Dv]; query i sits at key position i + Sk - Sq.
inline Dense dense_attention(const Rows& q, const Rows& k, const Rows& v, int64_t dv, double scale, bool causal,
                             Window w, double sink, double softcap = 0) {
  const int64_t sq = static_cast<int64_t>(q.size()), sk = static_cast<int64_t>(k.size());
  Dense r;
  r.out.assign(static_cast<size_t>(sq * dv), 0.0);
  r.lse.assign(static_cast<size_t>(sq), kNoSink);
  for (int64_t i = 0; i < sq; ++i) {
    std::vector<double> logits(static_cast<size_t>(sk + 1), kNoSink);  // last column: the sink
    const int64_t pos = i + sk - sq;
    for (int64_t j = 0; j < sk; ++j) {
      bool allowed = (!causal || j <= pos) && (w.left < 0 || j >= pos - w.left) && (w.right < 0 || j <= pos + w.right);
      if (!allowed) continue;
      double s = 0;
      for (size_t e = 0; e < q[i].size(); ++e) s += q[i][e] * k[j][e];
      s *= scale;
      if (softcap > 0) s = softcap * std::tanh(s / softcap);
      logits[j] = s;
    }
    logits[sk] = sink;
    double m = *std::max_element(logits.begin(), logits.end());
    if (m == kNoSink) continue;  // nothing to attend to: output 0, lse -inf
    double z = 0;
    for (double l : logits) z += std::exp(l - m);
    r.lse[i] = m + std::log(z);
    for (int64_t j = 0; j < sk; ++j) {
      double p = std::exp(logits[j] - m) / z;
      for (int64_t e = 0; e < dv; ++e) r.out[i * dv + e] += p * v[j][e];
    }
  }
  return r;
}

// Rows token0 .. token0 + count - 1 of one head of a [tokens, heads, dim] tensor.
inline Rows rows(const HostTensor& t, int64_t token0, int64_t count, int64_t head) {
  const int64_t heads = t.view.shape[t.view.ndim - 2], d = t.view.shape[t.view.ndim - 1];
  Rows out;
  for (int64_t i = 0; i < count; ++i) {
    std::vector<double> row;
    for (int64_t e = 0; e < d; ++e) row.push_back(t.get(((token0 + i) * heads + head) * d + e));
    out.push_back(row);
  }
  return out;
}

}  // namespace aiter_compat::testing_support
