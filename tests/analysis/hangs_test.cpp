// `hangs` on hand-built logs, one per kind of hang, each with its culprit
// known, and on the runs that are not hangs (a clean end with ops in flight at
// finalize, a job killed while it ran, a long wait that ended). The same
// verdicts against the emulator's faults: scoring_test (HangsScoredAgainstTruth).
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "src/analysis/hangs.h"
#include "src/analysis/reader.h"
#include "tests/analysis/fixtures.h"

namespace ni::analysis {
namespace {

constexpr std::int64_t kT0 = 1800000000000000000;  // the job's start (wall ns)
constexpr std::int64_t kMs = 1000000;
constexpr const char* kHash = "0x00000000000000aa";
constexpr int kRanks = 8;
constexpr std::int64_t kHangAt = kT0 + 10 * kMs;  // the first rank enters the stuck collective

// One rank's log as lines.
struct RankLog {
  int rank = 0;
  std::vector<std::string> lines;
  void add(const std::string& l) { lines.push_back(l); }
};

std::string meta(int rank, std::int64_t hang_ms = 300) {
  return R"({"type":"meta","format":"nccl-inspector-log","format_version":1,"plugin_version":"0.2.0","host":"node)" +
         std::to_string(rank / 4) + R"(","pid":)" + std::to_string(100 + rank) + R"(,"file_seq":0,"wall_ns":)" +
         std::to_string(kT0) + R"(,"mono_ns":1,"job":{},"abi_version":5,"config":{"NCCL_INSPECTOR_HANG_MS":)" +
         std::to_string(hang_ms) + "}}";
}
std::string comm(int rank) {
  return R"({"type":"comm","wall_ns":)" + std::to_string(kT0) + R"(,"comm_id":1,"comm_hash":")" + kHash +
         R"(","comm_name":"dp","rank":)" + std::to_string(rank) + R"(,"nranks":8,"nnodes":2,"abi_version":5})";
}
std::string coll(int rank, int issue, const std::string& func = "AllReduce", int seq = -1, bool reclaimed = false) {
  const std::int64_t t = kT0 + issue * kMs;
  std::string s = R"({"type":"coll","comm_id":1,"comm_hash":")" + std::string(kHash) + R"(","rank":)" +
                  std::to_string(rank) + R"(,"nranks":8,"seq":)" + std::to_string(seq < 0 ? issue : seq) +
                  R"(,"issue":)" + std::to_string(issue) + R"(,"func":")" + func +
                  R"(","dtype":"float32","count":262144,"bytes":1048576,"algo":"RING","proto":"SIMPLE","nchannels":2,)"
                  R"("channels":[0,1],"start_wall_ns":)" + std::to_string(t) + R"(,"enqueue_wall_ns":)" +
                  std::to_string(t) + R"(,"dur_us":100,"timing":"gpu","transport":"network")";
  if (reclaimed) s += R"(,"reclaimed":true,"partial":true)";
  return s + "}";
}
// A stuck entry of a progress line.
std::string stuck(int issue, const std::string& func = "AllReduce", int seq = -1, const std::string& ch_started = "[0,1]",
                  const std::string& ch_done = "[]", const std::string& net = "") {
  std::string s = R"({"kind":"coll","func":")" + func + R"(","seq":)" + std::to_string(seq < 0 ? issue : seq) +
                  R"(,"issue":)" + std::to_string(issue) + R"(,"bytes":1048576,"dtype":"float32","enqueue_wall_ns":)" +
                  std::to_string(kHangAt) + R"(,"age_ms":300,"nchannels":2,"ch_started":)" + ch_started +
                  R"(,"ch_done":)" + ch_done;
  if (!net.empty()) s += R"(,"net":)" + net;
  return s + "}";
}
std::string progress(int rank, std::int64_t wall, int issued, const std::string& stuck_list, std::int64_t quiet_ms,
                     const std::string& last_func = "AllReduce") {
  return R"({"type":"progress","wall_ns":)" + std::to_string(wall) + R"(,"comm_id":1,"comm_hash":")" + kHash +
         R"(","rank":)" + std::to_string(rank) + R"(,"nranks":8,"issued":)" + std::to_string(issued) +
         R"(,"started":{")" + last_func + R"(":)" + std::to_string(issued - 1) + R"(},"last_func":")" + last_func +
         R"(","p2p_started":0,"in_flight":)" + (stuck_list == "[]" ? "0" : "1") + R"(,"quiet_ms":)" +
         std::to_string(quiet_ms) + R"(,"stuck":)" + stuck_list + "}";
}
std::string alive(std::int64_t wall) { return R"({"type":"alive","wall_ns":)" + std::to_string(wall) + "}"; }

// Eight ranks that completed collectives 0..4; `shape` adds each rank's end.
std::vector<RankLog> job(const std::function<void(RankLog&)>& shape) {
  std::vector<RankLog> v(kRanks);
  for (int r = 0; r < kRanks; ++r) {
    v[r].rank = r;
    v[r].add(meta(r));
    v[r].add(comm(r));
    for (int i = 0; i < 5; ++i) v[r].add(coll(r, i));
    shape(v[r]);
  }
  return v;
}
// A rank waiting in collective 5 until the watchdog: stuck progress line, alive lines for 2 s.
void waits(RankLog& l, const std::string& entry = "") {
  l.add(progress(l.rank, kHangAt + 300 * kMs, 6, "[" + (entry.empty() ? stuck(5) : entry) + "]", 300));
  for (int k = 1; k <= 6; ++k) l.add(alive(kHangAt + (300 + 300 * k) * kMs));
}

HangResult hangs_of(const std::vector<RankLog>& logs, const std::string& name) {
  const std::string dir = test::temp_dir(name);
  std::vector<std::string> files;
  for (const RankLog& l : logs) {
    std::string text;
    for (const std::string& s : l.lines) text += s + "\n";
    files.push_back(dir + "/node" + std::to_string(l.rank / 4) + "-pid" + std::to_string(100 + l.rank) + ".jsonl");
    test::write_text(files.back(), text);
  }
  ReadResult res;
  ReadOptions ro;
  ro.progress = 0;
  auto sink = read_merged<CollectSink>(files, ro, 2, res, false);
  return find_hangs(res);
}

const HangRank& rank_of(const HangFinding& f, int r) { return f.ranks.at(static_cast<std::size_t>(r)); }

// The one finding of h, which names the missing rank `culprit` with state `state`.
const HangFinding& one_missing(const HangResult& h, int culprit, const std::string& state) {
  EXPECT_EQ(h.findings.size(), 1u);
  const HangFinding& f = h.findings.at(0);
  EXPECT_EQ(f.kind, "missing_ranks");
  EXPECT_EQ(f.culprits, std::vector<int>{culprit});
  EXPECT_EQ(rank_of(f, culprit).state, state);
  return f;
}

// A rank of which no log was read (its process died before its first write,
// or its host's logs were not given): named, and the verdict says that its
// absence may be the analyzer's input, not the job.
TEST(Hangs, ARankWithoutALogIsNamedAndTheVerdictSaysWhy) {
  auto logs = job([](RankLog& l) { waits(l); });
  logs.erase(logs.begin() + 7);
  HangResult h = hangs_of(logs, "hang_no_log");
  ASSERT_EQ(h.findings.size(), 1u);
  const HangFinding& f = one_missing(h, 7, "no_log");
  EXPECT_NE(f.verdict.find("rank 7 never joined AllReduce seq 5"), std::string::npos) << f.verdict;
  EXPECT_NE(f.verdict.find("no log of it was read: if not every host's logs were given"), std::string::npos)
      << f.verdict;
}

TEST(Hangs, ARankThatNeverJoinedIsNamedAndWasAlive) {
  auto logs = job([](RankLog& l) {
    if (l.rank != 6) return waits(l);
    l.add(progress(6, kT0 + 310 * kMs, 5, "[]", 300));  // quiet after its last op
    for (int k = 1; k <= 7; ++k) l.add(alive(kHangAt + 300 * k * kMs));
  });
  HangResult h = hangs_of(logs, "hang_missing");
  ASSERT_EQ(h.findings.size(), 1u);
  const HangFinding& f = h.findings[0];
  EXPECT_EQ(f.kind, "missing_ranks");
  EXPECT_EQ(f.culprits, std::vector<int>{6});
  EXPECT_EQ(f.func, "AllReduce");
  EXPECT_TRUE(f.has_seq);
  EXPECT_EQ(f.seq, 5u);
  EXPECT_EQ(f.issue, 5);
  EXPECT_EQ(f.since_ns, kHangAt);
  EXPECT_EQ(rank_of(f, 6).state, "missing");
  EXPECT_EQ(rank_of(f, 6).started, 5);
  EXPECT_EQ(rank_of(f, 0).state, "waiting");
  EXPECT_NE(f.verdict.find("rank 6 never joined AllReduce seq 5 (issue 5)"), std::string::npos) << f.verdict;
  EXPECT_NE(f.evidence[0].find("node1 pid 106"), std::string::npos) << f.evidence[0];
}

TEST(Hangs, ARankWhoseLogStoppedBeforeTheHangDied) {
  auto logs = job([](RankLog& l) {
    if (l.rank != 2) return waits(l);  // rank 2's log simply ends after collective 4
  });
  HangResult h = hangs_of(logs, "hang_died");
  ASSERT_EQ(h.findings.size(), 1u);
  const HangFinding& f = one_missing(h, 2, "died");
  EXPECT_NE(f.verdict.find("rank 2 never joined AllReduce seq 5 (issue 5) (its process died"), std::string::npos)
      << f.verdict;
}

TEST(Hangs, ADifferentOpAtTheSameIssueIsADesyncWithBothSides) {
  auto logs = job([](RankLog& l) { waits(l, l.rank == 3 ? stuck(5, "AllGather", 0) : ""); });
  HangResult h = hangs_of(logs, "hang_desync");
  ASSERT_EQ(h.findings.size(), 1u);
  const HangFinding& f = h.findings[0];
  EXPECT_EQ(f.kind, "desync");
  EXPECT_EQ(f.culprits, std::vector<int>{3});
  EXPECT_EQ(f.func, "AllReduce");
  EXPECT_EQ(f.seq, 5u);
  EXPECT_NE(f.verdict.find("rank 3 issued AllGather"), std::string::npos) << f.verdict;
  EXPECT_NE(f.verdict.find("the others issued AllReduce"), std::string::npos) << f.verdict;
}

TEST(Hangs, AKernelThatNeverStartedOnOneRankIsTheCulprit) {
  auto logs = job([](RankLog& l) { waits(l, l.rank == 5 ? stuck(5, "AllReduce", -1, "[]") : ""); });
  HangResult h = hangs_of(logs, "hang_kernel");
  ASSERT_EQ(h.findings.size(), 1u);
  const HangFinding& f = h.findings[0];
  EXPECT_EQ(f.kind, "stuck_collective");
  EXPECT_EQ(f.culprits, std::vector<int>{5});
  EXPECT_EQ(f.seq, 5u);
  EXPECT_NE(f.verdict.find("kernel never started"), std::string::npos) << f.verdict;
}

TEST(Hangs, AReceiveThatNeverGotItsDataNamesThePeerAndLink) {
  auto logs = job([](RankLog& l) {
    const int r = l.rank, prev = (r + kRanks - 1) % kRanks, next = (r + 1) % kRanks;
    const bool bad_recv = r == 4, bad_send = r == 3;  // the link 3 -> 4
    const std::string net = R"([{"peer":)" + std::to_string(prev) + R"(,"dir":"recv","proxy_ops":1,"posted":8,"done":)" +
                            (bad_recv ? "2" : "8") + R"(},{"peer":)" + std::to_string(next) +
                            R"(,"dir":"send","proxy_ops":1,"posted":8,"done":)" + (bad_send ? "2" : "8") + "}]";
    waits(l, stuck(5, "AllReduce", -1, "[0,1]", "[]", net));
  });
  HangResult h = hangs_of(logs, "hang_link");
  ASSERT_EQ(h.findings.size(), 1u);
  const HangFinding& f = h.findings[0];
  EXPECT_EQ(f.kind, "stuck_collective");
  EXPECT_EQ(f.culprits, std::vector<int>{4});
  EXPECT_EQ(f.peer, 3);
  EXPECT_NE(f.verdict.find("rank 4's receives from rank 3 never completed (2 of 8 steps arrived)"), std::string::npos)
      << f.verdict;
}

TEST(Hangs, NoRankStandingOutIsSaidSoWithoutACulprit) {
  auto logs = job([](RankLog& l) { waits(l); });
  HangResult h = hangs_of(logs, "hang_nobody");
  ASSERT_EQ(h.findings.size(), 1u);
  EXPECT_EQ(h.findings[0].kind, "stuck_collective");
  EXPECT_TRUE(h.findings[0].culprits.empty());
  EXPECT_NE(h.findings[0].verdict.find("no rank, link or channel stands out"), std::string::npos);
}

// The same line on a second communicator "pp" of 2 ranks (hash 0x...bb), as `rank` there.
std::string on_pp(std::string line, int rank) {
  auto swap = [&](const std::string& a, const std::string& b) {
    for (std::size_t at; (at = line.find(a)) != std::string::npos;) line.replace(at, a.size(), b);
  };
  swap(kHash, "0x00000000000000bb");
  swap(R"("comm_name":"dp")", R"("comm_name":"pp")");
  swap(R"("nranks":8)", R"("nranks":2)");
  const auto at = line.find(R"("rank":)");
  const auto end = line.find_first_of(",}", at + 7);
  line.replace(at, end - at, R"("rank":)" + std::to_string(rank));
  return line;
}

// Rank 6 never joined dp's collective because its process waits in another
// hang (pp's, which began earlier and whose rank 1 never came): both found,
// the earlier first, and dp's verdict says where rank 6 waits.
TEST(Hangs, AMissingRankWaitingInAnEarlierHangIsTracedToIt) {
  auto logs = job([](RankLog& l) {
    if (l.rank == 6 || l.rank == 7) {
      const int pr = l.rank - 6;
      l.add(on_pp(comm(l.rank), pr));
      for (int i = 0; i < 3; ++i) l.add(on_pp(coll(l.rank, i), pr));
    }
    if (l.rank == 6) {
      std::string st = stuck(3);
      st.replace(st.find(std::to_string(kHangAt)), std::to_string(kHangAt).size(), std::to_string(kHangAt - 5 * kMs));
      l.add(on_pp(progress(6, kHangAt + 300 * kMs, 4, "[" + st + "]", 300), 0));
      l.add(progress(6, kT0 + 310 * kMs, 5, "[]", 300));
      for (int k = 1; k <= 7; ++k) l.add(alive(kHangAt + 300 * k * kMs));
      return;
    }
    if (l.rank == 7) l.add(on_pp(progress(7, kT0 + 320 * kMs, 3, "[]", 300), 1));
    waits(l);
  });
  HangResult h = hangs_of(logs, "hang_chain");
  ASSERT_EQ(h.findings.size(), 2u);
  EXPECT_EQ(h.findings[0].comm_name.substr(0, 2), "pp");
  EXPECT_EQ(h.findings[0].kind, "missing_ranks");
  EXPECT_EQ(h.findings[0].culprits, std::vector<int>{1});
  EXPECT_EQ(h.findings[0].issue, 3);
  const HangFinding& f = h.findings[1];
  EXPECT_EQ(f.culprits, std::vector<int>{6});
  EXPECT_NE(rank_of(f, 6).note.find("it waits in pp"), std::string::npos) << rank_of(f, 6).note;
  EXPECT_NE(rank_of(f, 6).note.find("the cause"), std::string::npos) << rank_of(f, 6).note;
}

// The watchdog kills long after the timeout reclaimed the hung op: the last
// progress lines list nothing stuck any more, the reclaimed records carry no
// channels; what an earlier line showed still names the culprit.
TEST(Hangs, TheDetailOfAnOpReclaimedByTheTimeoutStillNamesTheCulprit) {
  auto logs = job([](RankLog& l) {
    waits(l, l.rank == 5 ? stuck(5, "AllReduce", -1, "[]") : "");
    l.add(coll(l.rank, 5, "AllReduce", -1, true));  // reclaimed at OP_TIMEOUT
    l.add(progress(l.rank, kHangAt + 20000 * kMs, 6, "[]", 10000));
    l.add(alive(kHangAt + 600000 * kMs));
  });
  HangResult h = hangs_of(logs, "hang_reclaimed");
  ASSERT_EQ(h.findings.size(), 1u);
  EXPECT_EQ(h.findings[0].kind, "stuck_collective");
  EXPECT_EQ(h.findings[0].culprits, std::vector<int>{5});
  EXPECT_NE(h.findings[0].verdict.find("kernel never started"), std::string::npos) << h.findings[0].verdict;
}

// A watchdog that aborts the communicators (ncclCommAbort writes comm_end like
// a destroy): the hang is still judged.
TEST(Hangs, ACommAbortedWhileStuckIsStillJudged) {
  auto logs = job([](RankLog& l) {
    if (l.rank != 6) waits(l);
    else l.add(progress(6, kT0 + 310 * kMs, 5, "[]", 300));
    l.add(R"({"type":"comm_end","wall_ns":)" + std::to_string(kHangAt + 3000 * kMs) + R"(,"comm_id":1,"comm_hash":")" +
          kHash + R"(","rank":)" + std::to_string(l.rank) + "}");
  });
  HangResult h = hangs_of(logs, "hang_aborted");
  ASSERT_EQ(h.findings.size(), 1u);
  EXPECT_EQ(h.findings[0].kind, "missing_ranks");
  EXPECT_EQ(h.findings[0].culprits, std::vector<int>{6});
}

// Every rank waited long in collective 5 (say, connection setup), which then
// completed; the job was killed later with the ranks one collective apart:
// the old stuck lines are no hang.
TEST(Hangs, AnOldStuckLineAndRanksOneApartAtTheKillAreNoHang) {
  auto logs = job([](RankLog& l) {
    waits(l);
    l.add(coll(l.rank, 5));
    if (l.rank % 2 == 0) l.add(coll(l.rank, 6));
  });
  HangResult h = hangs_of(logs, "hang_old_stuck");
  EXPECT_TRUE(h.findings.empty()) << h.findings[0].verdict;
}

// A receive that once waited long (and was reclaimed) on a P2P communicator,
// later ones completed, the processes exited without destroying it: no hang.
TEST(Hangs, AnOldStuckReceiveFollowedByCompletedOnesIsNoHang) {
  std::vector<RankLog> logs(2);
  for (int r = 0; r < 2; ++r) {
    RankLog& l = logs[r];
    l.rank = r;
    l.add(meta(r));
    l.add(comm(r));
    auto p2p = [&](int seq, std::int64_t t, bool reclaimed) {
      return R"({"type":"p2p","comm_id":1,"comm_hash":")" + std::string(kHash) + R"(","rank":)" + std::to_string(r) +
             R"(,"nranks":8,"seq":)" + std::to_string(seq) + R"(,"func":")" + (r == 0 ? "Send" : "Recv") +
             R"(","peer":)" + std::to_string(1 - r) + R"(,"dtype":"float32","count":1,"bytes":4,"start_wall_ns":)" +
             std::to_string(t) + R"(,"enqueue_wall_ns":)" + std::to_string(t) + R"(,"dur_us":5,"timing":"gpu")" +
             (reclaimed ? R"(,"reclaimed":true)" : "") + "}";
    };
    l.add(p2p(0, kT0, true));
    l.add(p2p(1, kT0 + 20000 * kMs, false));
    l.add(R"({"type":"end","wall_ns":)" + std::to_string(kT0 + 21000 * kMs) + R"(,"records_written":2,"dropped_total":0})");
  }
  EXPECT_TRUE(hangs_of(logs, "hang_old_recv").findings.empty());
}

// A collective too small to be recorded (DUMP_MIN_SIZE_BYTES): no op in flight
// on record, but the ranks' settled counters disagree.
TEST(Hangs, AFilteredCollectiveIsFoundFromTheIssueCounters) {
  auto logs = job([](RankLog& l) {
    const int issued = l.rank == 1 ? 5 : 6;
    l.add(progress(l.rank, kHangAt + 300 * kMs, issued, "[]", 300, "Broadcast"));
    for (int k = 1; k <= 6; ++k) l.add(alive(kHangAt + (300 + 300 * k) * kMs));
  });
  HangResult h = hangs_of(logs, "hang_filtered");
  ASSERT_EQ(h.findings.size(), 1u);
  const HangFinding& f = h.findings[0];
  EXPECT_EQ(f.kind, "missing_ranks");
  EXPECT_EQ(f.culprits, std::vector<int>{1});
  EXPECT_EQ(f.func, "Broadcast");
  EXPECT_EQ(f.seq, 5u);
  EXPECT_EQ(f.issue, 5);
  EXPECT_EQ(rank_of(f, 0).state, "waiting");
}

// Not hangs.
TEST(Hangs, OpsInFlightAtACleanFinalizeAreNoHang) {
  auto logs = job([](RankLog& l) {
    l.add(coll(l.rank, 5, "AllReduce", -1, true));  // reclaimed at finalize
    l.add(R"({"type":"comm_end","wall_ns":)" + std::to_string(kT0 + 20 * kMs) + R"(,"comm_id":1,"comm_hash":")" +
          kHash + R"(","rank":)" + std::to_string(l.rank) + "}");
    l.add(R"({"type":"end","wall_ns":)" + std::to_string(kT0 + 21 * kMs) + R"(,"records_written":6,"dropped_total":0})");
  });
  HangResult h = hangs_of(logs, "hang_clean");
  EXPECT_TRUE(h.findings.empty());
  EXPECT_EQ(h.comms_finalized, 1u);
}

TEST(Hangs, AJobKilledWhileItRanIsNoHang) {
  // The ranks were one collective apart when the kill came; their last
  // progress lines are checkpoints of a running comm (quiet 0 ms).
  auto logs = job([](RankLog& l) {
    l.add(progress(l.rank, kT0 + 5 * kMs, 5, "[]", 0));
    if (l.rank % 2 == 0) l.add(coll(l.rank, 5));
  });
  HangResult h = hangs_of(logs, "hang_killed_running");
  EXPECT_TRUE(h.findings.empty()) << h.findings[0].verdict;
}

TEST(Hangs, ALongWaitThatEndedIsNoHang) {
  auto logs = job([](RankLog& l) {
    waits(l);               // stuck for a while in collective 5 ...
    l.add(coll(l.rank, 5)); // ... which then completed,
    l.add(coll(l.rank, 6)); // and the job went on
    l.add(progress(l.rank, kHangAt + 3000 * kMs, 7, "[]", 400));
    l.add(R"({"type":"comm_end","wall_ns":)" + std::to_string(kHangAt + 3100 * kMs) + R"(,"comm_id":1,"comm_hash":")" +
          kHash + R"(","rank":)" + std::to_string(l.rank) + "}");
  });
  EXPECT_TRUE(hangs_of(logs, "hang_long_wait").findings.empty());
  // Without comm_end (killed after it went on): still no hang.
  auto logs2 = job([](RankLog& l) {
    waits(l);
    l.add(coll(l.rank, 5));
    l.add(coll(l.rank, 6));
  });
  EXPECT_TRUE(hangs_of(logs2, "hang_long_wait2").findings.empty());
}

// The CLI: exit 4 with the verdict in every format; 0 on a clean job.
TEST(Hangs, CliExitsFourWithTheVerdictInEveryFormat) {
  auto logs = job([](RankLog& l) {
    if (l.rank != 6) return waits(l);
    l.add(progress(6, kT0 + 310 * kMs, 5, "[]", 300));
    for (int k = 1; k <= 7; ++k) l.add(alive(kHangAt + 300 * k * kMs));
  });
  (void)hangs_of(logs, "hang_cli");
  const std::string dir = test::temp_dir("hang_cli_read");
  for (const RankLog& l : logs) {
    std::string text;
    for (const std::string& s : l.lines) text += s + "\n";
    test::write_text(dir + "/r" + std::to_string(l.rank) + ".jsonl", text);
  }
  for (const char* fmt : {"table", "json", "csv", "markdown"}) {
    const std::string out = dir + "/out." + fmt;
    const std::string cmd = std::string(NI_CLI) + " hangs " + dir + " --no-progress -f " + fmt + " -o " + out;
    const int st = std::system(cmd.c_str());
    ASSERT_TRUE(WIFEXITED(st));
    EXPECT_EQ(WEXITSTATUS(st), 4) << fmt;
    const std::string text = test::read_text(out);
    EXPECT_NE(text.find("missing_ranks"), std::string::npos) << fmt;
    if (std::string(fmt) == "json") {
      auto j = nlohmann::json::parse(text);
      ASSERT_EQ(j["hangs"]["rows"].size(), 1u);
      const auto& row = j["hangs"]["rows"][0];
      EXPECT_EQ(row["culprit_ranks"], "6");
      EXPECT_EQ(row["func"], "AllReduce");
      EXPECT_EQ(row["seq"], 5);
      EXPECT_EQ(row["issue"], 5);
      EXPECT_EQ(j["hang_ranks"]["rows"].size(), 8u);
      EXPECT_EQ(j["hang_ranks"]["rows"][6]["state"], "missing");
    }
  }
  // summary shows the verdict too (its own exit code stays 0).
  {
    const std::string out = dir + "/summary.json";
    const int st = std::system((std::string(NI_CLI) + " summary " + dir + " --no-progress -f json -o " + out +
                                " 2>/dev/null").c_str());
    ASSERT_TRUE(WIFEXITED(st));
    EXPECT_EQ(WEXITSTATUS(st), 0);
    auto j = nlohmann::json::parse(test::read_text(out));
    ASSERT_TRUE(j.contains("hangs"));
    EXPECT_EQ(j["hangs"]["rows"][0]["culprit_ranks"], "6");
  }
  const std::string clean = test::temp_dir("hang_cli_clean");
  auto ok = job([](RankLog& l) {
    l.add(R"({"type":"comm_end","wall_ns":)" + std::to_string(kT0 + 20 * kMs) + R"(,"comm_id":1,"comm_hash":")" +
          kHash + R"(","rank":)" + std::to_string(l.rank) + "}");
  });
  for (const RankLog& l : ok) {
    std::string text;
    for (const std::string& s : l.lines) text += s + "\n";
    test::write_text(clean + "/r" + std::to_string(l.rank) + ".jsonl", text);
  }
  const int st = std::system((std::string(NI_CLI) + " hangs " + clean + " --no-progress > /dev/null").c_str());
  ASSERT_TRUE(WIFEXITED(st));
  EXPECT_EQ(WEXITSTATUS(st), 0);
}

}  // namespace
}  // namespace ni::analysis
