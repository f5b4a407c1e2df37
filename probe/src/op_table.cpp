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
       "this ASM paged decode has never taken sinks (pa_decode_gluon and pa_decode_bf16_asm are AITer's paged "
       "decodes that do)"},
      // v0.1.1 and v0.1.2 have only the vLLM-style wrapper in aiter/paged_attn.py (its own
      // parameter list); from v0.1.3 aiter.ops.attention defines it too and is preferred.
      {"paged_attention_v1", {"aiter.ops.attention", "aiter.paged_attn"}, "",
       "this paged decode has never taken sinks (pa_decode_gluon and pa_decode_bf16_asm are AITer's paged "
       "decodes that do)"},
      // Triton's flash attention (sink= from v0.1.8); moved to aiter.ops.triton.attention in v0.1.10, the old
      // path kept by aiter.ops.triton's compat map. Same function names as CK's in aiter.ops.mha.
      {"triton_flash_attn_varlen_func", {"aiter.ops.triton.attention.mha", "aiter.ops.triton.mha"}, "sink", "",
       "flash_attn_varlen_func", "aiter.ops.triton"},
      {"triton_flash_attn_func", {"aiter.ops.triton.attention.mha", "aiter.ops.triton.mha"}, "sink", "",
       "flash_attn_func", "aiter.ops.triton"},
      // fp8 q/k/v with per-tensor descales (inserted at positions 4-6 in v0.1.7.post3); sink_ptr from v0.1.10.
      {"flash_attn_varlen_fp8_pertensor_func", {"aiter.ops.mha"}, "sink_ptr", ""},
      {"flash_attn_fp8_pertensor_func", {"aiter.ops.mha"}, "sink_ptr", ""},
      // Gluon paged decode over 5-D "vectorized" caches (v0.1.8; signature changed at v0.1.10).
      {"pa_decode_gluon", {"aiter.ops.triton.gluon.pa_decode_gluon"}, "sinks", "", "", "aiter.ops.triton"},
      // ASM bf16 paged decode for gfx1250 (v0.1.16), its sink in scaled-logit units.
      {"pa_decode_bf16_asm", {"aiter.ops.attention"}, "sink", ""},
  };
  return ops;
}

const OpSpec* find_op(const std::string& name) {
  for (const auto& op : attention_ops())
    if (op.name == name) return &op;
  return nullptr;
}

}  // namespace aiter_compat
