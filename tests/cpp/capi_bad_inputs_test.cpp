// The shared table of bad inputs (tests/cases/bad_inputs.json) through the C API: each case is
// refused with AITER_COMPAT_INVALID_ARGUMENT and a message naming the argument and the value
// found, as the Python module refuses it (tests/python/test_bad_inputs_shared.py).
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <map>
#include <random>

#include <nlohmann/json.hpp>

#include "aiter_compat.h"
#include "host_tensor.hpp"

using namespace aiter_compat;
using namespace aiter_compat::testing_support;
using nlohmann::json;

namespace {

struct Spec {
  std::string dtype;
  std::vector<int64_t> shape;   // random data of this shape, or
  std::vector<double> values;   // these values (1-D, or [2, 2] for block_table)
  bool has_values = false;
};

// Each op's base call, as in the Python harness.
std::map<std::string, Spec> base_tensors(const std::string& op) {
  auto r = [](std::vector<int64_t> s) { return Spec{"float32", std::move(s), {}, false}; };
  auto v = [](const char* d, std::vector<double> x) { return Spec{d, {}, std::move(x), true}; };
  if (op == "varlen")
    return {{"q", r({6, 8, 16})}, {"k", r({6, 2, 16})}, {"v", r({6, 2, 16})}, {"cu_seqlens_q", v("int32", {0, 2, 6})},
            {"cu_seqlens_k", v("int32", {0, 2, 6})}, {"sinks", v("float32", std::vector<double>(8, 0.0))},
            {"out", r({6, 8, 16})}};
  if (op == "batch")
    return {{"q", r({2, 5, 4, 16})}, {"k", r({2, 7, 2, 16})}, {"v", r({2, 7, 2, 16})},
            {"sinks", v("float32", std::vector<double>(4, 0.0))}, {"out", r({2, 5, 4, 16})}};
  if (op == "paged")
    return {{"q", r({3, 4, 16})}, {"k_cache", r({5, 16, 2, 16})}, {"v_cache", r({5, 16, 2, 16})},
            {"cu_seqlens_q", v("int32", {0, 1, 3})}, {"seqused_k", v("int32", {20, 3})},
            {"block_table", v("int32", {0, 1, 2, 3})}, {"sinks", v("float32", std::vector<double>(4, 0.0))},
            {"out", r({3, 4, 16})}};
  if (op == "decode")
    return {{"q", r({2, 4, 16})}, {"k_cache", r({5, 16, 2, 16})}, {"v_cache", r({5, 16, 2, 16})},
            {"block_table", v("int32", {0, 1, 2, 3})}, {"seqused_k", v("int32", {20, 3})},
            {"sinks", v("float32", std::vector<double>(4, 0.0))}, {"out", r({2, 4, 16})}};
  return {{"output", r({3, 2, 8})}, {"prefix_output", r({3, 2, 8})}, {"prefix_lse", r({2, 3})},
          {"suffix_output", r({3, 2, 8})}, {"suffix_lse", r({2, 3})}, {"sinks", v("float32", {0.0, 0.0})}};
}

std::map<std::string, double> base_scalars(const std::string& op) {
  if (op == "varlen") return {{"max_seqlen_q", 4}, {"max_seqlen_k", 4}, {"causal", 1}, {"window_left", -1},
                              {"window_right", -1}, {"softmax_scale", 0}};
  if (op == "batch") return {{"causal", 1}, {"window_left", -1}, {"window_right", -1}, {"softmax_scale", 0}};
  if (op == "paged") return {{"max_seqlen_q", 2}, {"max_seqlen_k", 20}, {"causal", 1}, {"window_left", -1},
                             {"window_right", -1}, {"softmax_scale", 0.25}};
  if (op == "decode") return {{"window_left", -1}, {"window_right", -1}, {"softmax_scale", 0}};
  return {};
}

double number(const json& x) {
  if (x.is_string()) return x == "nan" ? NAN : x == "inf" ? INFINITY : x == "-inf" ? -INFINITY : std::stod(x.get<std::string>());
  return x.get<double>();
}

DType dtype_named(const std::string& name) { return dtype_from_name(name); }


struct Call {
  std::map<std::string, HostTensor> host;
  std::map<std::string, std::unique_ptr<Dl>> dl;
  std::map<std::string, double> s;
  DLTensor* t(const char* name) { return dl.count(name) ? &dl[name]->t : nullptr; }

  Call(const std::string& op, const json& c) {
    std::map<std::string, Spec> spec = base_tensors(op);
    // (Bound to locals: a range-for over a temporary's items() would outlive the temporary.)
    const json dtypes = c.value("dtype", json::object()), shapes = c.value("shape", json::object()),
               values_of = c.value("values", json::object()), aliases = c.value("alias", json::object()),
               scalars = c.value("scalars", json::object());
    for (auto& [name, d] : dtypes.items()) spec[name].dtype = d.get<std::string>();
    for (auto& [name, shape] : shapes.items()) {
      spec[name].shape = shape.get<std::vector<int64_t>>();
      spec[name].has_values = false;
    }
    for (auto& [name, values] : values_of.items()) {
      spec[name].values.clear();
      for (const auto& x : values) spec[name].values.push_back(number(x));
      spec[name].has_values = true;
    }
    std::mt19937 rng(7);
    for (auto& [name, sp] : spec) {
      std::vector<int64_t> shape = sp.has_values ? std::vector<int64_t>{static_cast<int64_t>(sp.values.size())} : sp.shape;
      if (sp.has_values && name == "block_table") shape = {2, 2};
      HostTensor h(dtype_named(sp.dtype), shape);
      if (sp.has_values)
        for (size_t i = 0; i < sp.values.size(); ++i) h.set(static_cast<int64_t>(i), sp.values[i]);
      else
        h.fill_random(rng);
      host.emplace(name, std::move(h));
    }
    for (auto& [name, h] : host) dl[name] = std::make_unique<Dl>(h);
    for (auto& [name, other] : aliases.items()) dl[name] = std::make_unique<Dl>(host.at(other.get<std::string>()));
    s = base_scalars(op);
    for (auto& [name, x] : scalars.items()) s[name] = number(x);
  }

  aiter_compat_status run(const std::string& op) {
    const int64_t wl = static_cast<int64_t>(s["window_left"]), wr = static_cast<int64_t>(s["window_right"]);
    if (op == "varlen") {
      aiter_compat_varlen_args a{t("q"), t("k"), t("v"), t("cu_seqlens_q"), t("cu_seqlens_k"), t("sinks"), t("out"),
                                 nullptr, static_cast<int64_t>(s["max_seqlen_q"]), static_cast<int64_t>(s["max_seqlen_k"]),
                                 s["softmax_scale"], static_cast<int>(s["causal"]), wl, wr, 0.0};
      return aiter_compat_varlen_attention(&a, nullptr);
    }
    if (op == "batch") {
      aiter_compat_batch_args a{t("q"), t("k"), t("v"), t("sinks"), t("out"), nullptr, s["softmax_scale"],
                                static_cast<int>(s["causal"]), wl, wr};
      return aiter_compat_batch_attention(&a, nullptr);
    }
    if (op == "paged") {
      aiter_compat_paged_args a{t("q"), t("k_cache"), t("v_cache"), t("cu_seqlens_q"), t("seqused_k"), t("block_table"),
                                t("sinks"), t("out"), nullptr, static_cast<int64_t>(s["max_seqlen_q"]),
                                static_cast<int64_t>(s["max_seqlen_k"]), s["softmax_scale"], static_cast<int>(s["causal"]),
                                wl, wr, 0.0};
      return aiter_compat_paged_attention(&a, nullptr);
    }
    if (op == "decode") {
      aiter_compat_decode_args a{t("q"), t("k_cache"), t("v_cache"), t("block_table"), t("seqused_k"), nullptr,
                                 t("sinks"), t("out"), nullptr, s["softmax_scale"], wl, wr};
      return aiter_compat_paged_decode(&a, nullptr);
    }
    aiter_compat_merge_args a{t("output"), t("prefix_output"), t("prefix_lse"), t("suffix_output"), t("suffix_lse"),
                              nullptr, t("sinks")};
    return aiter_compat_merge_attn_states(&a, nullptr);
  }
};

json cases() {
  std::ifstream f(SHARED_CASES);
  return json::parse(f)["cases"];
}

}  // namespace

TEST(CApiBadInputs, BaseCallsAreGood) {
  for (const char* op : {"varlen", "batch", "paged", "decode", "merge"}) {
    Call c(op, json::object());
    EXPECT_EQ(c.run(op), AITER_COMPAT_OK) << op << ": " << aiter_compat_last_error();
  }
}

TEST(CApiBadInputs, EachIsNamedAsThroughPython) {
  const json all = cases();
  ASSERT_GT(all.size(), 20u);
  for (const auto& c : all) {
    const std::string op = c.at("op").get<std::string>(), name = c.at("name").get<std::string>();
    SCOPED_TRACE(name);
    Call call(op, c);
    EXPECT_EQ(call.run(op), AITER_COMPAT_INVALID_ARGUMENT) << name << ": " << aiter_compat_last_error();
    const std::string msg = aiter_compat_last_error();
    const std::string want = c["argument"].get<std::string>() + ": found ";
    EXPECT_EQ(msg.rfind(want, 0), 0u) << name << ": " << msg;
    EXPECT_NE(msg.find(c["found"].get<std::string>()), std::string::npos) << name << ": " << msg;
  }
}
