#include "aiter_compat/shim/features.hpp"

#include <cstring>

namespace aiter_compat {

std::vector<std::pair<std::string, std::string>> CallFeatures::describe() const {
  auto yes = [](bool b) { return std::string(b ? "yes" : "no"); };
  std::string window = !window_left && !window_right ? "none"
                       : std::string("left ") + (window_left ? "set" : "unbounded") + ", right " +
                             (window_right ? "set" : "unbounded");
  if (window_sink_size) window += ", sink_size > 0";
  std::vector<std::pair<std::string, std::string>> rows = {
      {"op", to_string(op)},
      {"dtype", to_string(dtype)},
      {"device", to_string(device)},
      {"head_dim (q/k, v)", std::to_string(head_dim_qk) + ", " + std::to_string(head_dim_v)},
      {"heads (q, kv)", std::to_string(q_heads) + ", " + std::to_string(kv_heads)},
      {"causal", yes(causal)},
      {"window", window},
      {"sinks", yes(sinks)},
      {"dropout", yes(dropout)},
      {"bias / alibi", yes(bias) + " / " + yes(alibi)},
      {"softcap", yes(softcap)},
      {"return_lse", yes(return_lse)},
  };
  if (block_size) rows.push_back({"block_size", std::to_string(block_size)});
  if (return_attn_probs) rows.push_back({"return_attn_probs", "yes"});
  if (descale) rows.push_back({"descale / q_scales", "given"});
  std::string given;
  const auto& sig = signature(op);
  for (size_t i = 0; i < sig.params.size() && i < 32; ++i)
    if ((nondefault >> i) & 1u && sig.params[i].default_kind != DefaultKind::value)
      given += (given.empty() ? "" : ", ") + sig.params[i].name;
  rows.push_back({"optional arguments given", given.empty() ? "none" : given});
  return rows;
}

size_t CallFeaturesHash::operator()(const CallFeatures& f) const {
  // FNV-1a over the fields; CallFeatures is small and hashed once per call.
  uint64_t h = 1469598103934665603ull;
  auto mix = [&](uint64_t v) {
    h ^= v;
    h *= 1099511628211ull;
  };
  mix(static_cast<uint64_t>(f.op) | static_cast<uint64_t>(f.dtype) << 8 | static_cast<uint64_t>(f.device) << 16 |
      static_cast<uint64_t>(static_cast<uint8_t>(f.window_arity)) << 24);
  mix(static_cast<uint64_t>(static_cast<uint32_t>(f.head_dim_qk)) | static_cast<uint64_t>(static_cast<uint32_t>(f.head_dim_v)) << 32);
  mix(static_cast<uint64_t>(static_cast<uint32_t>(f.q_heads)) | static_cast<uint64_t>(static_cast<uint32_t>(f.kv_heads)) << 32);
  uint64_t bits = 0;
  for (bool b : {f.causal, f.window_left, f.window_right, f.window_sink_size, f.sinks, f.dropout, f.bias, f.alibi,
                 f.softcap, f.return_lse, f.return_attn_probs, f.descale})
    bits = bits << 1 | static_cast<uint64_t>(b);
  mix(bits | static_cast<uint64_t>(static_cast<uint32_t>(f.block_size)) << 16);
  mix(f.nondefault);
  return static_cast<size_t>(h);
}

}  // namespace aiter_compat
