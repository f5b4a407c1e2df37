// The C API's calls that write into a caller's buffer, at the buffer's boundaries (room for the
// text and its NUL, exactly the text's length, one byte short, zero bytes, NULL), with guard
// bytes after the buffer's end so that a write one byte too far is seen; and its per-thread
// state, the last-error message, read by one thread while another thread's calls succeed and fail.
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "aiter_compat.h"
#include "host_tensor.hpp"

using namespace aiter_compat;
using namespace aiter_compat::testing_support;

namespace {

constexpr char kFill = '\x5a';  // what no call writes: the buffer's bytes before the call

// A buffer of `size` bytes followed by guard bytes, all kFill: what a call writes past `size`
// lands in the guard.
struct GuardedBuffer {
  static constexpr size_t kGuard = 32;
  size_t size;
  std::vector<char> bytes;
  explicit GuardedBuffer(size_t n) : size(n), bytes(n + kGuard, kFill) {}
  char* data() { return bytes.data(); }
  bool guard_intact() const {
    for (size_t i = size; i < bytes.size(); ++i)
      if (bytes[i] != kFill) return false;
    return true;
  }
  bool untouched() const {
    for (char c : bytes)
      if (c != kFill) return false;
    return true;
  }
  std::string text() const { return std::string(bytes.data()); }  // up to the first NUL
};

// Small CPU tensors for each op's struct: enough for the checks that explain() makes before it
// decides (shapes, dtypes); their values are never read.
struct Tensors {
  std::vector<std::unique_ptr<HostTensor>> host;
  std::vector<std::unique_ptr<Dl>> dl;
  DLTensor* f32(std::vector<int64_t> shape) { return add(HostTensor(DType::f32, std::move(shape))); }
  DLTensor* i32(std::vector<int64_t> values, std::vector<int64_t> shape = {}) {
    return add(i32_tensor(values, std::move(shape)));
  }
  DLTensor* add(HostTensor h) {
    host.push_back(std::make_unique<HostTensor>(std::move(h)));
    dl.push_back(std::make_unique<Dl>(*host.back()));
    return &dl.back()->t;
  }
};

// One call that fills a caller's buffer with text: a name, and the call.
struct Writer {
  std::string name;
  std::function<aiter_compat_status(char*, size_t)> call;
};

// Every explain entry point over a valid call of its op (the structs live as long as this).
struct ExplainCalls {
  Tensors t;
  aiter_compat_varlen_args varlen{t.f32({6, 4, 8}), t.f32({6, 2, 8}), t.f32({6, 2, 8}), t.i32({0, 2, 6}), t.i32({0, 2, 6}),
                                  t.f32({4}), t.f32({6, 4, 8}), nullptr, 4, 4, 0.0, 1, -1, -1, 0.0};
  aiter_compat_batch_args batch{t.f32({2, 3, 4, 8}), t.f32({2, 5, 2, 8}), t.f32({2, 5, 2, 8}), t.f32({4}),
                                t.f32({2, 3, 4, 8}), nullptr, 0.0, 1, -1, -1};
  aiter_compat_paged_args paged{t.f32({3, 4, 8}), t.f32({4, 16, 2, 8}), t.f32({4, 16, 2, 8}), t.i32({0, 1, 3}),
                                t.i32({20, 3}), t.i32({0, 1, 2, 3}, {2, 2}), t.f32({4}), t.f32({3, 4, 8}), nullptr, 2, 20,
                                0.0, 1, -1, -1, 0.0};
  aiter_compat_decode_args decode{t.f32({2, 4, 8}), t.f32({4, 16, 2, 8}), t.f32({4, 16, 2, 8}),
                                  t.i32({0, 1, 2, 3}, {2, 2}), t.i32({20, 3}), nullptr, t.f32({4}), t.f32({2, 4, 8}),
                                  nullptr, 0.0, -1, -1};
  aiter_compat_merge_args merge{t.f32({3, 2, 8}), t.f32({3, 2, 8}), t.f32({2, 3}), t.f32({3, 2, 8}), t.f32({2, 3}),
                                nullptr, t.f32({2})};
  aiter_compat_batch_prefill_args prefill{};
  aiter_compat_gluon_decode_args gluon{};
  aiter_compat_asm_decode_args asm_decode{};

  ExplainCalls() {
    gluon.output = t.f32({2, 4, 8}), gluon.query = t.f32({2, 4, 8}), gluon.key_cache = t.f32({4, 2, 2, 16, 4});
    gluon.value_cache = t.f32({4, 2, 8, 16}), gluon.context_lengths = t.i32({20, 3});
    gluon.block_tables = t.i32({0, 1, 2, 3}, {2, 2}), gluon.query_length = 1, gluon.max_context_partition_num = 1;
    asm_decode.Q = t.f32({2, 1, 2, 2, 8}), asm_decode.out = t.f32({2, 1, 2, 2, 8});
    asm_decode.K = t.f32({4, 2, 2, 16, 4}), asm_decode.V = t.f32({4, 2, 4, 8, 4});
    asm_decode.kv_indices = t.i32({0, 1, 2}), asm_decode.kv_indptr = t.i32({0, 2, 3}), asm_decode.context_lens = t.i32({20, 3});
    asm_decode.gqa = 2, asm_decode.mtp = 0;
    prefill.q = t.f32({3, 4, 8}), prefill.k = t.f32({4, 4, 2, 8}), prefill.v = t.f32({4, 4, 2, 8});
    prefill.cu_seqlens_q = t.i32({0, 2, 3}), prefill.kv_indptr = t.i32({0, 2, 3});
    prefill.kv_page_indices = t.i32({3, 0, 1}), prefill.kv_last_page_lens = t.i32({2, 4});
    prefill.out = t.f32({3, 4, 8});
    prefill.max_seqlen_q = 2, prefill.max_seqlen_k = 6, prefill.causal = 1;
    prefill.window_left = -1, prefill.window_right = -1;
  }

  std::vector<Writer> writers() {
    return {{"aiter_compat_explain_varlen", [this](char* b, size_t n) { return aiter_compat_explain_varlen(&varlen, b, n); }},
            {"aiter_compat_explain_batch", [this](char* b, size_t n) { return aiter_compat_explain_batch(&batch, b, n); }},
            {"aiter_compat_explain_paged", [this](char* b, size_t n) { return aiter_compat_explain_paged(&paged, b, n); }},
            {"aiter_compat_explain_decode", [this](char* b, size_t n) { return aiter_compat_explain_decode(&decode, b, n); }},
            {"aiter_compat_explain_merge", [this](char* b, size_t n) { return aiter_compat_explain_merge(&merge, b, n); }},
            {"aiter_compat_explain_batch_prefill",
             [this](char* b, size_t n) { return aiter_compat_explain_batch_prefill(&prefill, b, n); }},
            {"aiter_compat_explain_gluon_decode",
             [this](char* b, size_t n) { return aiter_compat_explain_gluon_decode(&gluon, b, n); }},
            {"aiter_compat_explain_asm_decode",
             [this](char* b, size_t n) { return aiter_compat_explain_asm_decode(&asm_decode, b, n); }},
            {"aiter_compat_explain_triton_varlen",
             [this](char* b, size_t n) { return aiter_compat_explain_triton_varlen(&varlen, b, n); }},
            {"aiter_compat_explain_triton_batch",
             [this](char* b, size_t n) { return aiter_compat_explain_triton_batch(&batch, b, n); }}};
  }
};

// The whole text a writer gives, from a buffer with room to spare.
std::string full_text(const Writer& w) {
  GuardedBuffer big(1 << 16);
  EXPECT_EQ(w.call(big.data(), big.size), AITER_COMPAT_OK) << w.name << ": " << aiter_compat_last_error();
  return big.text();
}

}  // namespace

// explain() truncates to the buffer and always terminates: size bytes at most, the NUL included.
TEST(CApiBuffers, ExplainTruncatesWithinTheBufferAndTerminates) {
  ExplainCalls calls;
  for (const Writer& w : calls.writers()) {
    SCOPED_TRACE(w.name);
    const std::string text = full_text(w);
    ASSERT_GT(text.size(), 40u) << text;
    ASSERT_NE(text.find("route: "), std::string::npos) << text;
    const size_t n = text.size();
    // (size, the text expected: the first size - 1 characters)
    for (size_t size : {n + 1, n, n - 1, size_t{2}, size_t{1}}) {
      SCOPED_TRACE("buffer of " + std::to_string(size) + " bytes for " + std::to_string(n) + " characters");
      GuardedBuffer b(size);
      ASSERT_EQ(w.call(b.data(), b.size), AITER_COMPAT_OK) << aiter_compat_last_error();
      EXPECT_TRUE(b.guard_intact()) << "written past the buffer's end";
      EXPECT_EQ(b.text(), text.substr(0, size - 1));
      EXPECT_EQ(b.bytes[size - 1], '\0') << "the last byte must be the terminator";
    }
    GuardedBuffer zero(0);
    EXPECT_EQ(w.call(zero.data(), 0), AITER_COMPAT_OK) << aiter_compat_last_error();
    EXPECT_TRUE(zero.untouched()) << "a buffer of 0 bytes was written to";
    EXPECT_EQ(w.call(nullptr, 64), AITER_COMPAT_OK) << "NULL buffer: " << aiter_compat_last_error();
    EXPECT_EQ(w.call(nullptr, 0), AITER_COMPAT_OK) << "NULL buffer of 0 bytes: " << aiter_compat_last_error();
  }
}

namespace {

// Calls that refuse a buffer too small for the whole text (nothing written, the size needed in
// the message) and fill one that holds the text and its NUL.
void expect_whole_or_refused(const Writer& w) {
  SCOPED_TRACE(w.name);
  const std::string text = full_text(w);
  ASSERT_FALSE(text.empty());
  const size_t n = text.size();
  GuardedBuffer fits(n + 1);
  ASSERT_EQ(w.call(fits.data(), fits.size), AITER_COMPAT_OK) << aiter_compat_last_error();
  EXPECT_TRUE(fits.guard_intact()) << "written past the buffer's end";
  EXPECT_EQ(fits.text(), text);
  for (size_t size : {n, n - 1, size_t{0}}) {
    SCOPED_TRACE("buffer of " + std::to_string(size) + " bytes for " + std::to_string(n) + " characters and the NUL");
    GuardedBuffer b(size);
    EXPECT_EQ(w.call(b.data(), b.size), AITER_COMPAT_INVALID_ARGUMENT);
    EXPECT_TRUE(b.untouched()) << "a refused buffer was written to";
    const std::string msg = aiter_compat_last_error();
    EXPECT_EQ(msg, "buffer: found " + std::to_string(size) + " bytes, needed at least " + std::to_string(n + 1) +
                       " bytes for the " + (w.name == "aiter_compat_stats" ? "stats'" : "verdicts'") + " JSON");
  }
  EXPECT_EQ(w.call(nullptr, n + 1), AITER_COMPAT_INVALID_ARGUMENT);
  EXPECT_NE(std::string(aiter_compat_last_error()).find("buffer: found 0 bytes"), std::string::npos)
      << aiter_compat_last_error();
}

}  // namespace

TEST(CApiBuffers, StatsFillAWholeBufferOrRefuseIt) {
  // A call first, so the JSON is more than {}.
  ExplainCalls calls;
  ASSERT_EQ(aiter_compat_merge_attn_states(&calls.merge, nullptr), AITER_COMPAT_OK) << aiter_compat_last_error();
  expect_whole_or_refused({"aiter_compat_stats", [](char* b, size_t n) { return aiter_compat_stats(b, n); }});
}

TEST(CApiBuffers, SelftestVerdictsFillAWholeBufferOrRefuseIt) {
  // No GPU here: the JSON is "[]", two characters: the boundaries are 3, 2, 1 and 0 bytes.
  expect_whole_or_refused(
      {"aiter_compat_selftest_verdicts", [](char* b, size_t n) { return aiter_compat_selftest_verdicts(b, n); }});
}

namespace {

// Two threads taking turns: each step waits for the other's.
struct Turns {
  std::mutex m;
  std::condition_variable cv;
  int step = 0;
  void wait_for(int s) {
    std::unique_lock lock(m);
    ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(60), [&] { return step >= s; })) << "step " << s << " never came";
  }
  void reach(int s) {
    {
      std::lock_guard lock(m);
      step = s;
    }
    cv.notify_all();
  }
};

}  // namespace

// The last-error message is the calling thread's: another thread's calls, succeeding (which
// clears that thread's message) or failing with another message, leave it as it was, and the
// pointer the thread was given stays valid until its own next call.
TEST(CApiThreadState, LastErrorIsPerThread) {
  Tensors t;
  aiter_compat_varlen_args good{t.f32({6, 4, 8}), t.f32({6, 2, 8}), t.f32({6, 2, 8}), t.i32({0, 2, 6}), t.i32({0, 2, 6}),
                                t.f32({4}), t.f32({6, 4, 8}), nullptr, 4, 4, 0.0, 1, -1, -1, 0.0};
  aiter_compat_varlen_args no_q = good;
  no_q.q = nullptr;
  const std::string mine = "q: found NULL, needed a tensor";
  Turns turns;
  std::string seen_first, seen_after, other_seen;
  const char* pointer = nullptr;
  std::thread first([&] {
    EXPECT_EQ(aiter_compat_varlen_attention(&no_q, nullptr), AITER_COMPAT_INVALID_ARGUMENT);
    pointer = aiter_compat_last_error();
    seen_first = pointer;
    turns.reach(1);
    turns.wait_for(2);  // the other thread succeeded, then failed with its own message
    seen_after = pointer;
    EXPECT_EQ(std::string(aiter_compat_last_error()), seen_first);
    turns.reach(3);
  });
  std::thread second([&] {
    turns.wait_for(1);
    EXPECT_STREQ(aiter_compat_last_error(), "") << "a thread that has made no call has no message";
    EXPECT_EQ(aiter_compat_varlen_attention(&good, nullptr), AITER_COMPAT_OK) << aiter_compat_last_error();
    EXPECT_STREQ(aiter_compat_last_error(), "");
    EXPECT_EQ(aiter_compat_set_policy("fastest"), AITER_COMPAT_INVALID_ARGUMENT);
    other_seen = aiter_compat_last_error();
    turns.reach(2);
    turns.wait_for(3);
    EXPECT_EQ(std::string(aiter_compat_last_error()), other_seen) << "the first thread's reads changed it";
  });
  first.join();
  second.join();
  EXPECT_EQ(seen_first, mine);
  EXPECT_EQ(seen_after, mine) << "another thread's calls changed this thread's message";
  EXPECT_EQ(other_seen.rfind("policy: found 'fastest'", 0), 0u) << other_seen;
}
