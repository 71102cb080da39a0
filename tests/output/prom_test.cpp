// The Prometheus textfile: structure, escaping, stale series, atomic
// replacement, faults; promtool and a real node_exporter when installed.
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sys/stat.h>

#include <chrono>
#include <fstream>
#include <map>
#include <set>
#include <thread>

#include "tests/output/fake_source.h"
#include "tests/output/fault_io.h"
#include "src/output/dump_sink.h"
#include "src/output/prom.h"
#include "tests/output/test_util.h"

namespace ni::out {
namespace {

using testing::FaultIo;
using testing::make_coll;
using testing::make_comm;
using testing::TempDir;

PromIdentity ident() { return PromIdentity{"job\"1\\", "node-a", 42, "0.1.0", "", false}; }

struct Prom {
  explicit Prom(Io& io, const std::string& dir)
      : w(io, dir, ident(), [this](ni::abi::LogLevel l, const std::string&) {
          if (l == ni::abi::kLogWarn) ++warns;
        }) {}
  PromWriter w;
  int warns = 0;
};

void feed(PromWriter& w) {
  CommInfo c1 = make_comm(1, 8, 3);
  c1.name = "dp \"x\"\nline\\";
  CommInfo c2 = make_comm(2, 4, 1);
  w.set_comm(c1);
  w.set_comm(c2);
  for (int i = 0; i < 100; ++i) w.add(make_coll(1, static_cast<uint64_t>(i), Func::kAllReduce, 1 << 20), &c1);
  for (int i = 0; i < 10; ++i) w.add(make_coll(1, static_cast<uint64_t>(i), Func::kAllReduce, 4096), &c1);
  for (int i = 0; i < 5; ++i) w.add(make_coll(2, static_cast<uint64_t>(i), Func::kAllGather, 1 << 16), &c2);
  OpRecord p = make_coll(2, 0, Func::kSend, 1 << 20);
  p.kind = static_cast<uint8_t>(OpKind::kP2p);
  p.peer = 1;
  w.add(p, &c2);
}

bool have(const char* tool) {
  std::string cmd = std::string("command -v ") + tool + " > /dev/null 2>&1";
  return std::system(cmd.c_str()) == 0;
}

TEST(PromTest, FamiliesHistogramsAndEscaping) {
  TempDir d;
  Prom p(posix_io(), d.path());
  feed(p.w);
  StatsSnapshot s;
  s.records_written = 116;
  s.core.dropped_ring_full = 3;
  std::string text = p.w.render(s, 1700000000000000000);
  // Every family has HELP and TYPE.
  for (const char* fam : {"nccl_inspector_info", "nccl_inspector_last_update_timestamp_seconds",
                          "nccl_inspector_records_written_total", "nccl_inspector_dropped_records_total",
                          "nccl_inspector_ops_total", "nccl_inspector_op_duration_seconds",
                          "nccl_inspector_op_busbw_bytes_per_second"}) {
    EXPECT_NE(text.find(std::string("# HELP ") + fam + " "), std::string::npos) << fam;
    EXPECT_NE(text.find(std::string("# TYPE ") + fam + " "), std::string::npos) << fam;
  }
  EXPECT_NE(text.find("comm_name=\"dp \\\"x\\\"\\nline\\\\\""), std::string::npos) << text.substr(0, 2000);
  EXPECT_NE(text.find("nccl_job=\"job\\\"1\\\\\""), std::string::npos);
  EXPECT_NE(text.find("size_bucket=\"1MiB-2MiB\""), std::string::npos);
  EXPECT_NE(text.find("size_bucket=\"4KiB-8KiB\""), std::string::npos);
  EXPECT_NE(text.find("algo_proto=\"RING_SIMPLE\""), std::string::npos);
  EXPECT_NE(text.find("op=\"Send\""), std::string::npos);
  // No launcher rank here: the pid tells the process apart.
  EXPECT_NE(text.find("nccl_inspector_dropped_records_total{host=\"node-a\",nccl_job=\"job\\\"1\\\\\",pid=\"42\",reason=\"ring_full\"} 3"),
            std::string::npos);
  // Buckets are cumulative, end in +Inf == _count.
  std::istringstream is(text);
  std::string line;
  std::map<std::string, uint64_t> last_bucket, inf_bucket, count;
  // (hand-parsed: std::regex trips a GCC 12 -Wmaybe-uninitialized false positive under ASan)
  size_t buckets = 0;
  while (std::getline(is, line)) {
    ASSERT_EQ(line.find("nan"), std::string::npos);
    if (line.rfind("nccl_inspector_op_", 0) != 0) continue;
    size_t brace = line.find('{');
    size_t close = line.rfind("} ");
    ASSERT_NE(brace, std::string::npos) << line;
    ASSERT_NE(close, std::string::npos) << line;
    std::string name = line.substr(0, brace);
    std::string labels = line.substr(brace + 1, close - brace - 1);
    uint64_t v = std::stoull(line.substr(close + 2));
    auto ends_with = [&](const std::string& suf) {
      return name.size() > suf.size() && name.compare(name.size() - suf.size(), suf.size(), suf) == 0;
    };
    if (ends_with("_bucket")) {
      size_t le = labels.rfind(",le=\"");
      ASSERT_NE(le, std::string::npos) << line;
      std::string key = name.substr(0, name.size() - 7) + "{" + labels.substr(0, le) + "}";
      EXPECT_GE(v, last_bucket[key]) << line;
      last_bucket[key] = v;
      if (labels.substr(le) == ",le=\"+Inf\"") inf_bucket[key] = v;
      ++buckets;
    } else if (ends_with("_count")) {
      count[name.substr(0, name.size() - 6) + "{" + labels + "}"] = v;
    }
  }
  EXPECT_GT(buckets, 0u);
  ASSERT_EQ(inf_bucket.size(), count.size());
  for (auto& [k, v] : count) EXPECT_EQ(inf_bucket[k], v) << k;
}

TEST(PromTest, AtomicWriteAndSeriesOutliveTheirCommunicator) {
  TempDir d;
  Prom p(posix_io(), d / "prom");
  feed(p.w);
  StatsSnapshot s;
  ASSERT_TRUE(p.w.write(s, 1, 0));
  EXPECT_EQ(p.w.path(), d / "prom/nccl_inspector_node-a_42.prom");
  EXPECT_EQ(testing::list_dir(d / "prom"), std::vector<std::string>{"nccl_inspector_node-a_42.prom"});
  const std::string first = testing::read_file(p.w.path());
  const std::string ag = "op=\"AllGather\"";  // comm 2's
  EXPECT_NE(first.find(ag), std::string::npos);
  // Comm 2 ends (the writer is not told: nothing changes for it; through the
  // sink, SinkWritesPromTogetherWithJson), and a new one of the same name and
  // rank takes its place: its ops go on counting in the same series.
  ASSERT_TRUE(p.w.write(s, 2, 0));
  const std::string second = testing::read_file(p.w.path());
  auto without_time = [](const std::string& t) {  // the file less its last_update sample
    const auto a = t.find("nccl_inspector_last_update_timestamp_seconds{");
    return t.substr(0, a) + t.substr(t.find('\n', a));
  };
  EXPECT_EQ(without_time(second), without_time(first));
  CommInfo again = make_comm(9, 4, 1);
  again.name = make_comm(2, 4, 1).name;
  p.w.set_comm(again);
  for (int i = 0; i < 3; ++i) p.w.add(make_coll(9, static_cast<uint64_t>(i), Func::kAllGather, 1 << 16), &again);
  ASSERT_TRUE(p.w.write(s, 3, 0));
  const std::string third = testing::read_file(p.w.path());
  const auto at = third.find("nccl_inspector_ops_total{host=\"node-a\",nccl_job=\"job\\\"1\\\\\",pid=\"42\",rank=\"1\"");
  ASSERT_NE(at, std::string::npos) << third;
  EXPECT_EQ(third.substr(third.find("} ", at), 4), "} 8\n");  // 5 + 3
  EXPECT_EQ(p.warns, 0);
}

// The labels follow Prometheus practice: no `job` (the scrape target's own
// label), no per-process or per-communicator ids when the launcher gives the
// process's rank; NCCL_INSPECTOR_PROM_EXTRA_LABELS adds pid and comm_hash.
// Series per GPU: stated in docs/configuration.md (the families of the
// counters + 41 lines per (communicator, op, algo_proto, size bucket)).
TEST(PromTest, LabelsAndCardinality) {
  TempDir d;
  auto labels_of = [](const std::string& text) {
    std::set<std::string> names;
    std::istringstream is(text);
    std::string line;
    while (std::getline(is, line)) {
      if (line.empty() || line[0] == '#') continue;
      const size_t b = line.find('{'), e = line.rfind("} ");
      for (size_t at = b + 1; at < e;) {
        const size_t eq = line.find('=', at);
        names.insert(line.substr(at, eq - at));
        at = line.find("\",", eq);
        at = at == std::string::npos || at > e ? e : at + 2;
      }
    }
    return names;
  };
  PromWriter plain(posix_io(), d / "a", PromIdentity{"77", "node-a", 42, "0.1.0", "5", false}, [](auto, auto&) {});
  feed(plain);
  StatsSnapshot s;
  const std::string text = plain.render(s, 1);
  const std::set<std::string> names = labels_of(text);
  for (const char* forbidden : {"job", "pid", "comm_hash", "instance", "exported_job"})
    EXPECT_EQ(names.count(forbidden), 0u) << forbidden;
  for (const char* expected : {"host", "nccl_job", "global_rank", "rank", "comm_name", "op", "algo_proto", "size_bucket", "reason", "le"})
    EXPECT_EQ(names.count(expected), 1u) << expected;
  // feed() makes 4 op series: (dp, AllReduce, 1MiB), (dp, AllReduce, 4KiB), (comm 2, AllGather), (comm 2, Send).
  std::size_t samples = 0;
  std::istringstream is(text);
  for (std::string line; std::getline(is, line);) samples += !line.empty() && line[0] != '#';
  const std::size_t per_op_series = 1 + (PromWriter::kDurBuckets + 3) + (PromWriter::kBwBuckets + 3);  // 41
  std::size_t counter_rows = 0;  // the exported rows of counters.h, one sample each
  for (const auto& c : ni::counters::kCounters) counter_rows += !c.prom_name.empty();
  const std::size_t fixed = 2 + counter_rows;  // + info and last_update
  EXPECT_EQ(samples, fixed + 4 * per_op_series) << text;

  PromWriter extra(posix_io(), d / "b", PromIdentity{"77", "node-a", 42, "0.1.0", "5", true}, [](auto, auto&) {});
  feed(extra);
  const std::set<std::string> more = labels_of(extra.render(s, 1));
  EXPECT_EQ(more.count("pid"), 1u);
  EXPECT_EQ(more.count("comm_hash"), 1u);
}

TEST(PromTest, FailingRenameWarnsOnceAndLeavesNoTemp) {
  TempDir d;
  FaultIo io;
  FaultIo::Script sc;
  sc.rename_errno = EXDEV;
  io.set(sc);
  Prom p(io, d.path());
  feed(p.w);
  StatsSnapshot s;
  EXPECT_FALSE(p.w.write(s, 1, 0));
  EXPECT_FALSE(p.w.write(s, 1, 2000000000));
  EXPECT_EQ(p.warns, 1);
  EXPECT_TRUE(testing::list_dir(d.path()).empty());
  io.set({});
  EXPECT_TRUE(p.w.write(s, 1, 4000000000));
  EXPECT_EQ(p.warns, 2);  // "works again"
  sc = {};
  sc.write_errno = ENOSPC;
  io.set(sc);
  EXPECT_FALSE(p.w.write(s, 1, 6000000000));
  EXPECT_EQ(testing::list_dir(d.path()), std::vector<std::string>{"nccl_inspector_node-a_42.prom"});
}

// Whoever can write the directory plants symlinks to a file of ours at the
// temporary name the writer used to use, at a name it would draw if the
// attacker guessed its randomness, and at the final name: none is followed,
// the victim is unchanged, and the .prom file is still written.
TEST(PromTest, PlantedSymlinksAreNeverFollowed) {
  TempDir d;
  const std::string victim = d / "victim";
  { std::ofstream(victim) << "precious\n"; }
  const std::string old_tmp = d / ".nccl_inspector_node-a_42.prom.tmp";
  const std::string guessed = d / ".nccl_inspector_node-a_42.prom.0000000000000000.tmp";
  const std::string final_name = d / "nccl_inspector_node-a_42.prom";
  ASSERT_EQ(symlink(victim.c_str(), old_tmp.c_str()), 0);
  ASSERT_EQ(symlink(victim.c_str(), guessed.c_str()), 0);
  ASSERT_EQ(symlink(victim.c_str(), final_name.c_str()), 0);
  FaultIo io;
  FaultIo::Script sc;
  sc.zero_random = 2;  // the first two draws hit the planted name
  io.set(sc);
  Prom p(io, d.path());
  feed(p.w);
  StatsSnapshot s;
  ASSERT_TRUE(p.w.write(s, 1, 0));
  EXPECT_EQ(testing::read_file(victim), "precious\n");
  struct stat st {};
  ASSERT_EQ(lstat(final_name.c_str(), &st), 0);
  EXPECT_TRUE(S_ISREG(st.st_mode));  // the symlink was replaced, not written through
  EXPECT_NE(testing::read_file(final_name).find("nccl_inspector_info{"), std::string::npos);
  ASSERT_EQ(lstat(old_tmp.c_str(), &st), 0);
  EXPECT_TRUE(S_ISLNK(st.st_mode));  // someone else's: left alone
  ASSERT_EQ(lstat(guessed.c_str(), &st), 0);
  EXPECT_TRUE(S_ISLNK(st.st_mode));
  EXPECT_EQ(testing::list_dir(d.path()).size(), 4u);  // no temporary file left
  EXPECT_EQ(p.warns, 0);
}

// Every draw guessed: the write gives up (one warning), still without
// touching the victim.
TEST(PromTest, EveryNameTakenFailsWithoutFollowing) {
  TempDir d;
  const std::string victim = d / "victim";
  { std::ofstream(victim) << "precious\n"; }
  const std::string guessed = d / ".nccl_inspector_node-a_42.prom.0000000000000000.tmp";
  ASSERT_EQ(symlink(victim.c_str(), guessed.c_str()), 0);
  FaultIo io;
  FaultIo::Script sc;
  sc.zero_random = 1000;
  io.set(sc);
  Prom p(io, d.path());
  feed(p.w);
  StatsSnapshot s;
  EXPECT_FALSE(p.w.write(s, 1, 0));
  EXPECT_EQ(p.warns, 1);
  EXPECT_EQ(testing::read_file(victim), "precious\n");
}

// A directory others may write without the sticky bit: one warning naming it
// and why, however often and by however many writers it is written;
// a private or sticky one: none.
TEST(PromTest, UnsafeDirectoryWarnsOnce) {
  TempDir d;
  std::vector<std::string> warnings;
  auto log = [&](ni::abi::LogLevel l, const std::string& m) {
    if (l == ni::abi::kLogWarn) warnings.push_back(m);
  };
  const std::string shared = d / "shared", priv = d / "private", sticky = d / "sticky";
  for (const auto& [dir, mode] : {std::pair{shared, 0777}, std::pair{priv, 0700}, std::pair{sticky, 01777}}) {
    ASSERT_EQ(mkdir(dir.c_str(), 0700), 0);
    ASSERT_EQ(chmod(dir.c_str(), static_cast<mode_t>(mode)), 0);  // chmod: the umask does not apply
  }
  StatsSnapshot s;
  for (const std::string& dir : {priv, sticky}) {
    PromWriter w(posix_io(), dir, ident(), log);
    feed(w);
    ASSERT_TRUE(w.write(s, 1, 0));
  }
  EXPECT_TRUE(warnings.empty());
  PromWriter a(posix_io(), shared, ident(), log);
  PromWriter b(posix_io(), shared, PromIdentity{"j", "node-b", 7, "0.1.0", "", false}, log);
  feed(a);
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(a.write(s, 1, 0));
    ASSERT_TRUE(b.write(s, 1, 0));
  }
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find(shared), std::string::npos) << warnings[0];
  EXPECT_NE(warnings[0].find("world-writable without the sticky bit (mode 0777)"), std::string::npos) << warnings[0];
}

TEST(PromTest, SinkWritesPromTogetherWithJson) {
  TempDir d;
  auto src = std::make_unique<testing::FakeSource>();
  auto* fake = src.get();
  SinkOptions o;
  o.host = "h1";
  o.exit_hook = false;
  DumpSink sink(std::move(src), o);
  Config c;
  c.dump_dir = d.path();
  c.prom_dir = d / "prom";
  c.prom_dump = true;
  c.dump_interval_us = 1000;
  sink.start(c, nullptr);
  fake->set_comm(make_comm(1));
  sink.comm_added(make_comm(1));
  for (int i = 0; i < 20; ++i) fake->push(make_coll(1, static_cast<uint64_t>(i)));
  sink.stop();  // the final write happens at stop and the file stays
  std::string text = testing::read_file(sink.prom_path());
  EXPECT_NE(text.find("nccl_inspector_records_written_total{host=\"h1\",nccl_job="), std::string::npos);
  // The job is over (its comm ended at stop): the totals and histograms stay.
  EXPECT_NE(text.find("nccl_inspector_ops_total{"), std::string::npos) << text;
  EXPECT_NE(text.find("nccl_inspector_op_duration_seconds_count{"), std::string::npos) << text;
  EXPECT_NE(text.find("} 20\n"), std::string::npos);
  EXPECT_EQ(testing::count_type(testing::read_log(sink.log_path()), "coll"), 20u);
}

TEST(PromTest, PromtoolCheckMetrics) {
  if (!have("promtool")) GTEST_SKIP() << "promtool not installed (apt-get install prometheus)";
  TempDir d;
  Prom p(posix_io(), d.path());
  feed(p.w);
  StatsSnapshot s;
  ASSERT_TRUE(p.w.write(s, 1700000000000000000, 0));
  std::string cmd = "promtool check metrics < '" + p.w.path() + "' > '" + d.path() + "/out' 2>&1";
  int rc = std::system(cmd.c_str());
  EXPECT_EQ(rc, 0) << testing::read_file(d / "out");
}

int free_port() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  int port = ntohs(a.sin_port);
  close(fd);
  return port;
}

TEST(PromTest, NodeExporterServesTheFile) {
  if (!have("prometheus-node-exporter") || !have("curl"))
    GTEST_SKIP() << "prometheus-node-exporter or curl not installed";
  TempDir d;
  Prom p(posix_io(), d / "textfile");
  feed(p.w);
  StatsSnapshot s;
  s.records_written = 116;
  ASSERT_TRUE(p.w.write(s, 1700000000000000000, 0));
  int port = free_port();
  std::string listen = "--web.listen-address=127.0.0.1:" + std::to_string(port);
  std::string dir = "--collector.textfile.directory=" + d.path() + "/textfile";
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    int devnull = ::open("/dev/null", O_WRONLY);
    dup2(devnull, 1);
    dup2(devnull, 2);
    execlp("prometheus-node-exporter", "prometheus-node-exporter", "--collector.disable-defaults",
           "--collector.textfile", dir.c_str(), listen.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  std::string out = d / "metrics";
  std::string cmd = "curl -sf http://127.0.0.1:" + std::to_string(port) + "/metrics > '" + out + "'";
  bool ok = false;
  for (int i = 0; i < 100 && !ok; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    ok = std::system(cmd.c_str()) == 0;
  }
  kill(pid, SIGTERM);
  waitpid(pid, nullptr, 0);
  ASSERT_TRUE(ok) << "node_exporter did not answer";
  std::string m = testing::read_file(out);
  EXPECT_NE(m.find("node_textfile_scrape_error 0"), std::string::npos) << m.substr(0, 3000);
  EXPECT_NE(m.find("nccl_inspector_op_duration_seconds_bucket{"), std::string::npos);
  EXPECT_NE(m.find("nccl_inspector_records_written_total{"), std::string::npos);
  EXPECT_NE(m.find("comm_name=\"dp \\\"x\\\"\\nline\\\\\""), std::string::npos);
}

}  // namespace
}  // namespace ni::out
