// The producer warpgroup's ring protocol (tiles_nvidia.hpp, produce; tiled_attention.hpp, the
// overlapped mainloop), played out on the host in the order the kernels issue it, for every tile
// count a call can give a ring: the producer waits for a stage to be free (tile a - stages), copies
// tile a, and announces tiles announce_lag() behind (over an fp8 cache; over a 16-bit one the
// copies announce themselves, lag 0); the computing warps wait for tile it to land
// and free tile it - 1 once its P V is in (the next tile's scores go out beside it), and the last
// tile after the loop. Nothing can make a GPU's shared-memory barriers wait forever that this
// model does not: each side blocks exactly where the kernel waits. It also checks the barriers'
// parities: a side never waits on a phase that the other side could complete twice before it
// looks (a parity names only the phase it waits for or the one before).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kernel_params.h"

namespace {

struct Outcome {
  bool finished = false;
  std::string problem;  // a stage reused early, or a phase completed twice before its wait
};

// The block's m-tiles, each with its count of tiles, through one ring that runs on across them
// (tile g of the ring: the m-tile's tile it plus the tiles of the m-tiles before). Q's tile is
// reloaded for an m-tile with tiles once the computing warps' last scores of the one before (with
// tiles) read it.
Outcome play_m_tiles(const std::vector<int>& tiles, int stages, int lag) {
  // The producer's steps per m-tile with tiles: wait for Q's tile (after the first), then wait
  // free(g - stages), copy g, announce g - lag; then the rest announced.
  enum Kind { kWaitQ, kWaitFree, kCopy, kAnnounce };
  struct Step { Kind kind; int tile; };
  std::vector<Step> producer;
  // The computing warps' steps: wait landed(g), then free g - 1 (tile g's scores and tile g - 1's
  // P V in flight together); after the m-tile's loop Q's tile freed, then its last tile.
  enum CKind { kWaitLanded, kFree, kFreeQ };
  struct CStep { CKind kind; int tile; };
  std::vector<CStep> consumer;
  int g0 = 0, loads = 0;
  for (int n : tiles) {
    if (n == 0) continue;
    if (loads > 0) producer.push_back({kWaitQ, loads - 1});
    for (int a = 0; a < n; ++a) {
      if (g0 + a >= stages) producer.push_back({kWaitFree, g0 + a - stages});
      producer.push_back({kCopy, g0 + a});
      if (a >= lag) producer.push_back({kAnnounce, g0 + a - lag});
    }
    for (int t = n > lag ? n - lag : 0; t < n; ++t) producer.push_back({kAnnounce, g0 + t});
    for (int it = 0; it < n; ++it) {
      consumer.push_back({kWaitLanded, g0 + it});
      if (it > 0) consumer.push_back({kFree, g0 + it - 1});
    }
    consumer.push_back({kFreeQ, loads});
    consumer.push_back({kFree, g0 + n - 1});
    g0 += n, ++loads;
  }
  const int n_tiles = g0;
  std::vector<bool> announced(n_tiles, false), freed(n_tiles, false), seen(n_tiles, false), free_waited(n_tiles, false);
  std::vector<bool> q_freed(loads, false), q_waited(loads, false);
  size_t pc = 0, cc = 0;
  for (;;) {
    bool moved = false;
    if (pc < producer.size()) {
      const Step s = producer[pc];
      if (s.kind == kWaitQ) {
        if (q_freed[s.tile]) q_waited[s.tile] = true, ++pc, moved = true;
      } else if (s.kind == kWaitFree) {
        if (freed[s.tile]) free_waited[s.tile] = true, ++pc, moved = true;
      } else if (s.kind == kCopy) {
        // Stage g % stages holds tile g - stages until the warps freed it.
        if (s.tile >= stages && !freed[s.tile - stages]) return {false, "tile " + std::to_string(s.tile) + " copied over a stage in use"};
        ++pc, moved = true;
      } else {
        // landed(t % stages) completes its phase t / stages; the warps must have seen the phase before.
        if (s.tile >= stages && !seen[s.tile - stages])
          return {false, "tile " + std::to_string(s.tile) + " announced before tile " + std::to_string(s.tile - stages) + " was seen"};
        announced[s.tile] = true, ++pc, moved = true;
      }
    }
    if (cc < consumer.size()) {
      const CStep s = consumer[cc];
      if (s.kind == kWaitLanded) {
        if (announced[s.tile]) seen[s.tile] = true, ++cc, moved = true;
      } else if (s.kind == kFreeQ) {
        // Q's barrier completes its phase k; the producer must have waited for phase k - 1.
        if (s.tile >= 1 && !q_waited[s.tile - 1])
          return {false, "Q freed twice before the producer's wait, m-tile " + std::to_string(s.tile)};
        q_freed[s.tile] = true, ++cc, moved = true;
      } else {
        // free(t % stages) completes its phase t / stages; the producer waits for the one before, if at all.
        const int before = s.tile - stages;
        if (before >= 0 && before + stages < n_tiles && !free_waited[before])
          return {false, "tile " + std::to_string(s.tile) + " freed before the wait for tile " + std::to_string(before)};
        freed[s.tile] = true, ++cc, moved = true;
      }
    }
    if (pc == producer.size() && cc == consumer.size()) return {true, ""};
    if (!moved) return {false, "both sides wait: producer at step " + std::to_string(pc) + ", warps at step " + std::to_string(cc)};
  }
}

Outcome play(int n_tiles, int stages, int lag) { return play_m_tiles({n_tiles}, stages, lag); }

TEST(ProducerRing, EveryTileCountFinishesWithTheShapesLag) {
  for (int d : {64, 128}) {
    const ac_tiled_shape s = ac_tiled_wgmma_producer_shape(d);
    ASSERT_GE(s.announce_lag(), 0);
    for (int n = 0; n <= 6 * s.stages + 3; ++n) {
      const Outcome o = play(n, s.stages, s.announce_lag());
      EXPECT_TRUE(o.finished) << "head dim " << d << ", " << n << " tiles: " << o.problem;
    }
  }
  for (int stages = 2; stages <= 8; ++stages)
    for (int n = 0; n <= 4 * stages + 3; ++n)
      EXPECT_TRUE(play(n, stages, ac_tiled_shape{8, 1, 1, 64, stages, 64, 1, 1, 32, 16, 0, 4}.announce_lag()).finished)
          << stages << " stages, " << n << " tiles";
}

// Over a 16-bit cache the copies announce their tile as they land (cp.async's arrival on the
// barrier): the producer never waits for them, the protocol with no lag, and it finishes too.
TEST(ProducerRing, CopiesThatAnnounceThemselvesFinish) {
  for (int stages = 2; stages <= 8; ++stages)
    for (int n = 0; n <= 4 * stages + 3; ++n) EXPECT_TRUE(play(n, stages, 0).finished) << stages << " stages, " << n << " tiles";
}

// A block's m-tiles through one ring: every mix of tile counts (none included) finishes, with
// the 16-bit protocol and with the shapes' fp8 lag.
TEST(ProducerRing, TheRingRunsOnAcrossMTiles) {
  for (int d : {64, 128}) {
    const ac_tiled_shape s = ac_tiled_wgmma_producer_shape(d);
    for (int lag : {0, s.announce_lag()})
      for (int a = 0; a <= 2 * s.stages + 1; ++a)
        for (int b = 0; b <= 2 * s.stages + 1; ++b)
          for (int c : {0, 1, s.stages, 3 * s.stages + 2}) {
            const Outcome o = play_m_tiles({a, b, c, 1}, s.stages, lag);
            EXPECT_TRUE(o.finished) << "head dim " << d << ", lag " << lag << ", m-tiles of " << a << ", " << b << ", " << c
                                    << ", 1 tiles: " << o.problem;
          }
  }
}

// The first cut's lag (stages - 1) waits forever once the ring wraps, and only then: the small
// cases of a self-test (at most `stages` tiles) pass with it.
TEST(ProducerRing, OneTileMoreLagWaitsForeverOnceTheRingWraps) {
  const int stages = ac_tiled_wgmma_producer_shape(64).stages;
  for (int n = 0; n <= stages; ++n) EXPECT_TRUE(play(n, stages, stages - 1).finished) << n << " tiles";
  const Outcome o = play(stages + 1, stages, stages - 1);
  EXPECT_FALSE(o.finished);
  EXPECT_NE(o.problem.find("both sides wait"), std::string::npos) << o.problem;
}

}  // namespace
