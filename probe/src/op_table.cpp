#include "aiter_compat/probe/op_table.hpp"

namespace aiter_compat {

const std::vector<OpSpec>& attention_ops() {
  static const std::vector<OpSpec> ops = {
      {"flash_attn_varlen_func", {"aiter.ops.mha"}, "sink_ptr", ""},
      {"flash_attn_func", {"aiter.ops.mha"}, "sink_ptr", ""},
      {"mha_batch_prefill_func", {"aiter.ops.mha"}, "sink_ptr", ""},
      // Moved in v0.1.10; the old path keeps working through aiter.ops.triton's compat map.
      {"unified_attention",
       {"aiter.ops.triton.attention.unified_attention", "aiter.ops.triton.unified_attention"},
       "sinks", ""},
      {"pa_fwd_asm", {"aiter.ops.attention"}, "",
       "AITer's paged decode kernels have never taken sinks"},
      // v0.1.1 and v0.1.2 have only the vLLM-style wrapper in aiter/paged_attn.py (its own
      // parameter list); from v0.1.3 aiter.ops.attention defines it too and is preferred.
      {"paged_attention_v1", {"aiter.ops.attention", "aiter.paged_attn"}, "",
       "AITer's paged decode kernels have never taken sinks"},
  };
  return ops;
}

const OpSpec* find_op(const std::string& name) {
  for (const auto& op : attention_ops())
    if (op.name == name) return &op;
  return nullptr;
}

}  // namespace aiter_compat
