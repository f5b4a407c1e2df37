// What the tiled mainloop (tiled_attention.hpp) asks of an arch's tiles, as C++20 concepts,
// checked where TiledAttention instantiates them: an arch that lacks a piece fails to compile
// there, with the concept's name. Three parts, each over the shared building blocks (kv_rows.hpp,
// key_range.hpp, row_finish.hpp), which no arch writes again:
//   fragments  where each element of a thread's scores and output is (row slot, key, column),
//              and the reductions over the lanes that share a row;
//   loader     the pipeline hooks that bring Q, K and V in over the page addresser, and the
//              validity of each key of a tile;
//   mma        the two products, S = Q K^T and O += P V, on the tile in shared memory.
// Plus where the epilogue starts: registers straight to memory (kDirectStore), or shared memory.
// Models: CuTe's mma_traits (layouts as types), ThunderKittens' tile "ducks".
#pragma once

#include "tile_context.hpp"

namespace {

template <class X, class Y>
concept ac_is = ac_same<X, Y>::value;

template <class A>
concept TileFragments = requires(A a, typename A::Scores& s, typename A::Out& o, int i, float v) {
  requires A::kRowSlots > 0 && A::kScoreElems > 0 && A::kOutElems > 0 && A::kKeys > 0 && A::kLanes > 0;
  { a.at(s, i) } -> ac_is<float&>;
  { a.at(o, i) } -> ac_is<float&>;
  { a.score_slot(i) } -> ac_is<int>;
  { a.score_key(i, i, i) } -> ac_is<int>;  // (warp_n, lane, element): the key within the tile
  { a.key_index(i) } -> ac_is<int>;        // which of the thread's distinct keys an element is
  { a.key_at(i, i, i) } -> ac_is<int>;
  { a.out_slot(i) } -> ac_is<int>;
  { a.out_col(i, i) } -> ac_is<int>;
  { a.slot_row(i, i, i) } -> ac_is<int>;   // (warp_m, lane, slot): the row within the block
  { a.row_max(v) } -> ac_is<float>;
  { a.row_sum(v) } -> ac_is<float>;
  { a.slot_writer(i) } -> ac_is<bool>;
};

template <class A>
concept TileLoader = requires(A a, const TileContext& c, unsigned char* smem, int i, int32_t t) {
  a.setup(smem);
  a.prologue(c, i, t);       // Q and the first tiles on their way
  a.ready(c, i, t);          // tile t in shared memory for every thread
  { a.q_landed(c) } -> ac_is<float>;  // what Q was divided by (1 unless the tiles rescaled it)
  a.issue_next(c, i, t, t);  // the loads of the tiles ahead
  a.done_with(c, i, t, t);   // tile t's memory may be refilled
  static_cast<bool>(a.valid_keys(t)[i]);  // key i of tile t holds a row of the cache (bytes or bits)
  { a.pages_masked(t) } -> ac_is<bool>;
  a.drain();
  { a.sink_s } -> ac_is<float*&>;  // each row's sink, read early (log2 units)
  requires A::kEarlySinks == true || A::kEarlySinks == false;
};

template <class A>
concept TileMma = requires(A a, typename A::Scores& s, typename A::Out& o, int32_t t, int i) {
  a.begin(i, i, i);
  a.scores(s, t, i);
  a.accumulate(o, s, t, i);
  // true: the softmax rescales the output only where a row's reference max moved past the slack
  // (online_softmax.hpp); false: the running max itself, a rescale in every tile.
  requires A::kSkipsRescale == true || A::kSkipsRescale == false;
};

template <class A>
concept TileEpilogue = requires(A a, const TileContext& c, typename A::Out& o, float v, int32_t t, int i) {
  requires A::kDirectStore == false || requires { a.store_direct(c, o, v, v, t, i, i, v); };
  requires A::kDirectStore == true || requires { { a.epilogue_buffer() } -> ac_is<float*>; };
};

template <class A>
concept ArchTilesContract = TileFragments<A> && TileLoader<A> && TileMma<A> && TileEpilogue<A>;

}  // namespace
