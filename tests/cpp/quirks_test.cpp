// Which quirks the probe reports, for every condition of every quirk in the matrix: a release at
// each end of its version range, inside and out, an arch it names and one it does not, and an
// entry point without the parameter it requires. A condition ignored by the matcher makes one of
// the "absent" rows fail.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>

#include "aiter_compat/probe/probe.hpp"
#include "test_readings.hpp"

using namespace aiter_compat;
using namespace aiter_compat::testing_support;

namespace {

// "absent" when the probe does not report the quirk: a missing quirk is a failure, not a crash.
std::string status_of(const ProbeReport& r, const std::string& id) {
  auto it = std::find_if(r.quirks.begin(), r.quirks.end(), [&](const QuirkHit& q) { return q.id == id; });
  return it == r.quirks.end() ? "absent" : it->status;
}

const QuirkHit* hit(const ProbeReport& r, const std::string& id) {
  auto it = std::find_if(r.quirks.begin(), r.quirks.end(), [&](const QuirkHit& q) { return q.id == id; });
  return it == r.quirks.end() ? nullptr : &*it;
}

// condition: what the row shows ("version" at or past an end of the range, "arch", or "" for a
// row where every condition holds).
struct Row {
  const char* quirk;
  const char* version;
  const char* arch;  // nullptr: no GPU found
  const char* status;
  const char* condition;
};

const std::vector<Row>& rows() {
  static const std::vector<Row> table = {
      {"v3-asm-drops-sinks", "0.1.10", "gfx942", "applies", ""},
      {"v3-asm-drops-sinks", "0.1.20.post1", "gfx950", "applies", ""},
      {"v3-asm-drops-sinks", "main", "gfx942", "applies", ""},
      {"v3-asm-drops-sinks", "0.1.12", nullptr, "possible", "arch"},  // no GPU: may apply
      {"v3-asm-drops-sinks", "0.1.9.post1", "gfx942", "absent", "version"},
      {"v3-asm-drops-sinks", "0.1.12", "gfx90a", "absent", "arch"},
      {"v3-asm-drops-sinks", "0.1.12", "sm_90", "absent", "arch"},
      {"ck-sink-only-via-mask", "0.1.10", "gfx942", "applies", ""},
      {"ck-sink-only-via-mask", "0.1.17", "gfx90a", "applies", ""},  // any arch
      {"ck-sink-only-via-mask", "0.1.17", nullptr, "applies", ""},
      {"ck-sink-only-via-mask", "0.1.9.post1", "gfx942", "absent", "version"},
      {"ck-sink-only-via-mask", "0.1.18", "gfx942", "absent", "version"},
      {"sink-ptr-typeerror", "0.1.1", nullptr, "applies", ""},
      {"sink-ptr-typeerror", "0.1.9.post1", "gfx942", "applies", ""},
      {"sink-ptr-typeerror", "0.1.10", "gfx942", "absent", "version"},
      {"window-size-arity-3", "0.1.8", nullptr, "applies", ""},
      {"window-size-arity-3", "main", "gfx950", "applies", ""},
      {"window-size-arity-3", "0.1.7.post5", nullptr, "absent", "version"},
      {"unified-attention-q-scales-shift", "0.1.15.post1", nullptr, "applies", ""},
      {"unified-attention-q-scales-shift", "0.1.15", nullptr, "absent", "version"},
      {"pa-fwd-asm-6th-param", "0.1.5", nullptr, "applies", ""},
      {"pa-fwd-asm-6th-param", "0.1.4", nullptr, "absent", "version"},
      {"unified-attention-causal-only", "0.1.6.post2", nullptr, "applies", ""},
      {"unified-attention-causal-only", "0.1.20.post1", "gfx942", "applies", ""},
      {"unified-attention-causal-only", "0.1.6.post1", nullptr, "absent", "version"},  // not present yet
      {"unified-attention-fp8-q-ignores-kv-descales", "0.1.6.post2", nullptr, "applies", ""},
      {"unified-attention-fp8-q-ignores-kv-descales", "0.1.11.post1", "gfx942", "applies", ""},
      {"unified-attention-fp8-q-ignores-kv-descales", "0.1.12", "gfx942", "absent", "version"},
      {"unified-attention-fp8-q-ignores-kv-descales", "0.1.6.post1", nullptr, "absent", "version"},
      {"unified-attention-q-descale-asserted", "0.1.10", "gfx950", "applies", ""},
      {"unified-attention-q-descale-asserted", "0.1.11.post1", nullptr, "applies", ""},
      {"unified-attention-q-descale-asserted", "0.1.12", nullptr, "absent", "version"},
      {"batch-prefill-sink-needs-sink-size", "0.1.14", nullptr, "applies", ""},
      {"batch-prefill-sink-needs-sink-size", "main", "gfx942", "applies", ""},
      {"batch-prefill-sink-needs-sink-size", "0.1.13.post1", "gfx942", "absent", "version"},
      {"fp8-v3-asm-drops-sinks", "0.1.19", "gfx942", "applies", ""},
      {"fp8-v3-asm-drops-sinks", "0.1.20.post1", "gfx950", "applies", ""},
      {"fp8-v3-asm-drops-sinks", "0.1.20.post1", nullptr, "possible", "arch"},
      {"fp8-v3-asm-drops-sinks", "0.1.18", "gfx942", "absent", "version"},
      {"fp8-v3-asm-drops-sinks", "0.1.19", "gfx90a", "absent", "arch"},
      {"fp8-v3-asm-drops-sinks-d256", "0.1.19", "gfx950", "applies", ""},
      {"fp8-v3-asm-drops-sinks-d256", "0.1.18", "gfx950", "absent", "version"},
      {"fp8-v3-asm-drops-sinks-d256", "0.1.19", "gfx942", "absent", "arch"},
      // archs_not: every GPU but the two it names.
      {"pa-decode-gluon-cdna3-4-only", "0.1.8", "gfx90a", "applies", ""},
      {"pa-decode-gluon-cdna3-4-only", "0.1.20.post1", "gfx1250", "applies", ""},
      {"pa-decode-gluon-cdna3-4-only", "0.1.20.post1", nullptr, "possible", "arch"},
      {"pa-decode-gluon-cdna3-4-only", "0.1.20.post1", "gfx942", "absent", "arch"},
      {"pa-decode-gluon-cdna3-4-only", "0.1.13", "gfx950", "absent", "arch"},
      {"pa-decode-gluon-cdna3-4-only", "0.1.7.post5", "gfx90a", "absent", "version"},  // no pa_decode_gluon yet
      {"pa-decode-gluon-query-length-4", "0.1.8", nullptr, "applies", ""},
      {"pa-decode-gluon-query-length-4", "0.1.20.post1", "gfx942", "applies", ""},
      {"pa-decode-gluon-query-length-4", "0.1.7.post5", nullptr, "absent", "version"},
      {"pa-decode-gluon-query-rows-64", "0.1.13", "gfx950", "applies", ""},
      {"pa-decode-gluon-query-rows-64", "0.1.7.post5", nullptr, "absent", "version"},
      {"pa-decode-bf16-asm-gfx1250-only", "0.1.16", "gfx942", "applies", ""},
      {"pa-decode-bf16-asm-gfx1250-only", "0.1.20.post1", nullptr, "possible", "arch"},
      {"pa-decode-bf16-asm-gfx1250-only", "0.1.20.post1", "gfx1250", "absent", "arch"},
      {"pa-decode-bf16-asm-gfx1250-only", "0.1.15.post1", "gfx942", "absent", "version"},  // no pa_decode_bf16_asm yet
      {"pa-decode-bf16-asm-fp8-only", "0.1.16", "gfx1250", "applies", ""},
      {"pa-decode-bf16-asm-fp8-only", "0.1.15.post1", "gfx1250", "absent", "version"},
      {"pa-decode-bf16-asm-head-dim-64", "0.1.20.post1", "gfx1250", "applies", ""},
      {"pa-decode-bf16-asm-head-dim-64", "0.1.13", "gfx1250", "absent", "version"},
      {"pa-decode-bf16-asm-gqa-8", "0.1.19", nullptr, "applies", ""},
      {"pa-decode-bf16-asm-gqa-8", "0.1.15.post1", nullptr, "absent", "version"},
      {"pa-decode-bf16-asm-mtp-0-1", "0.1.17", "gfx1250", "applies", ""},
      {"pa-decode-bf16-asm-mtp-0-1", "0.1.15.post1", "gfx1250", "absent", "version"},
  };
  return table;
}

}  // namespace

TEST(Quirks, EachConditionOfEachQuirkDecides) {
  for (const Row& row : rows()) {
    SCOPED_TRACE(std::string(row.quirk) + " on " + row.version + " / " + (row.arch ? row.arch : "no GPU"));
    EXPECT_EQ(status_of(report_for_release(row.version, row.arch), row.quirk), row.status) << row.condition;
  }
}

// The table above keeps up with the matrix: every quirk has a row where it applies and one
// outside its version range, and one on a GPU it does not name when it names any.
TEST(Quirks, EveryQuirkInTheMatrixHasMustNotApplyRows) {
  for (const MatrixQuirk& q : CompatMatrix::builtin().quirks()) {
    std::set<std::string> shown;
    for (const Row& row : rows())
      if (row.quirk == q.id) shown.insert(std::string(row.status) == "absent" ? row.condition : "applies");
    EXPECT_TRUE(shown.count("applies")) << q.id << ": add a row where it applies";
    EXPECT_TRUE(shown.count("version")) << q.id << ": add a row outside " << q.versions.text();
    if (!q.archs.empty() || !q.archs_not.empty()) {
      EXPECT_TRUE(shown.count("arch")) << q.id << ": add a row on a GPU it does not name (or excludes)";
    }
  }
}

// requires_param: a release in range whose entry point lacks the parameter (a build that
// reports a release in range but an older signature) does not get the quirk; the same report
// with the parameter does.
TEST(Quirks, RequiredParameterMissingMeansNoQuirk) {
  for (const MatrixQuirk& q : CompatMatrix::builtin().quirks()) {
    if (q.requires_param.empty()) continue;
    SCOPED_TRACE(q.id);
    std::string in_range;  // the oldest release the quirk covers
    for (const auto& rel : CompatMatrix::builtin().releases())
      if (in_range.empty() && q.versions.contains(rel.version)) in_range = rel.version.text;
    ASSERT_FALSE(in_range.empty());
    ProbeReport r = report_for_release(in_range.c_str(), q.archs.empty() ? "gfx942" : q.archs.front().c_str());
    r.quirks = match_quirks(CompatMatrix::builtin(), r);
    ASSERT_EQ(status_of(r, q.id), "applies");
    for (auto& op : r.ops) {
      if (!op.params) continue;
      auto& ps = *op.params;
      ps.erase(std::remove_if(ps.begin(), ps.end(), [&](const Param& p) { return p.name == q.requires_param; }),
               ps.end());
    }
    r.quirks = match_quirks(CompatMatrix::builtin(), r);
    EXPECT_EQ(status_of(r, q.id), "absent");
  }
}

TEST(Quirks, WeakVersionMatchesByParameters) {
  FakePythonReader py;
  py.static_reading = reading_from_matrix(*CompatMatrix::builtin().find_exact("0.1.14"));
  py.static_reading.install.metadata_version = "0.1.0";
  ProbeOptions o;
  o.native = o.device = false;
  ProbeReport r = run_probe(o, py);
  r.device.present = true;
  r.device.arch = "gfx942";
  r.quirks = match_quirks(CompatMatrix::builtin(), r);
  const QuirkHit* q = hit(r, "v3-asm-drops-sinks");
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(q->status, "applies");
  EXPECT_NE(q->why.find("version unknown"), std::string::npos);
}
