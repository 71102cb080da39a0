// Hostile and oversized input (issue: bounded memory on hostile logs): lines
// over the reader's limit are skipped and counted, a gzip bomb next to a good
// job costs no memory, and running out of memory in one file is that file's
// error, not the process's.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <tuple>
#include <vector>

#include "src/analysis/reader.h"
#include "src/analysis/summary.h"
#include "src/analysis/validate.h"
#include "tests/analysis/fixtures.h"

namespace ana = ni::analysis;

namespace {

const std::string kOp = R"({"type":"coll","comm_hash":"0x01","func":"AllReduce","seq":1,"bytes":8,"dur_us":3.5})";

// An op line of exactly n bytes (padded with an unknown field the reader ignores).
std::string op_of_size(std::size_t n) {
  const std::string head = R"({"type":"coll","comm_hash":"0x01","func":"AllReduce","seq":2,"bytes":8,"dur_us":3.5,"pad":")";
  return head + std::string(n - head.size() - 2, 'p') + "\"}";
}

// Streams `bytes` bytes of 'x' (no newline: one endless line) as a single gzip member.
void write_bomb(const std::string& path, std::size_t bytes) {
  gzFile f = gzopen(path.c_str(), "wb1R");  // level 1, run-length strategy: fast to write
  ASSERT_NE(f, nullptr);
  const std::string block(1u << 20, 'x');
  for (std::size_t done = 0; done < bytes; done += block.size())
    ASSERT_EQ(gzwrite(f, block.data(), static_cast<unsigned>(block.size())), static_cast<int>(block.size()));
  ASSERT_EQ(gzclose(f), Z_OK);
}

struct Child {
  int rc = -1;
  std::string out, err;
  long maxrss_kib = 0;
};

// Runs argv with stdout and stderr captured; address_space > 0 limits the
// child's virtual memory (RLIMIT_AS). Reports its peak resident size.
Child spawn(const std::vector<std::string>& argv, rlim_t address_space = 0) {
  Child c;
  char out_path[] = "/tmp/ni-hostile-outXXXXXX";
  char err_path[] = "/tmp/ni-hostile-errXXXXXX";
  const int out_fd = mkstemp(out_path), err_fd = mkstemp(err_path);
  if (out_fd < 0 || err_fd < 0) return c;
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(out_fd, 1);
    dup2(err_fd, 2);
    if (address_space > 0) {
      const rlimit lim{address_space, address_space};
      setrlimit(RLIMIT_AS, &lim);
      setenv("MALLOC_ARENA_MAX", "2", 1);  // per-thread arenas reserve 64 MiB of address space each
    }
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  int status = 0;
  rusage ru{};
  if (pid > 0 && wait4(pid, &status, 0, &ru) == pid) {
    c.rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    c.maxrss_kib = ru.ru_maxrss;
  }
  ::close(out_fd);
  ::close(err_fd);
  c.out = ni::test::read_text(out_path);
  c.err = ni::test::read_text(err_path);
  std::remove(out_path);
  std::remove(err_path);
  return c;
}

// The summary's health row `item` as JSON (null when absent).
nlohmann::json health_row(const nlohmann::json& summary, const std::string& item) {
  for (const auto& row : summary["health"]["rows"])
    if (row["item"] == item) return row;
  return nullptr;
}

}  // namespace

// Lines over kMaxLineBytes, wherever they fall (inside one chunk, across plain
// text's 1 MiB chunks, inside a gzip member, as the last line without '\n'),
// are skipped and counted as bad lines; a line of exactly the limit is read.
TEST(Hostile, OverlongLinesAreSkippedAndCounted) {
  const std::string dir = ni::test::temp_dir("hostile_long");
  const std::size_t kMax = ana::kMaxLineBytes;
  std::string text;
  for (int i = 0; i < 10; ++i) text += kOp + "\n";
  text += std::string(3 * kMax, 'j') + "\n";  // longer than a plain-text chunk
  text += op_of_size(kMax) + "\n";             // at the limit: read
  text += op_of_size(kMax + 1) + "\n";         // one byte over: skipped
  for (int i = 0; i < 10; ++i) text += kOp + "\n";
  text += std::string(kMax + kMax / 2, '{');  // the last line, cut and too long
  ni::test::write_text(dir + "/plain.jsonl", text);
  ni::test::write_gz_split(dir + "/members.jsonl.gz", text, 5u << 20);  // lines straddle members
  ni::test::write_gz_split(dir + "/one.jsonl.gz", text, 64u << 20);     // one member, whole lines in it

  const auto d = ana::discover_files({dir});
  ASSERT_EQ(d.files.size(), 3u);
  ana::ReadOptions ro;
  ro.progress = 0;
  ana::ReadResult res;
  auto sink = ana::read_merged<ana::CollectSink>(d.files, ro, 2, res, false);
  for (const auto& f : res.files) {
    EXPECT_EQ(f.ops, 21u) << f.path;
    EXPECT_EQ(f.long_lines, 3u) << f.path;
    EXPECT_EQ(f.bad_lines, 3u) << f.path;
    EXPECT_EQ(f.lines, 24u) << f.path;
    EXPECT_FALSE(f.failed) << f.path;
  }
  EXPECT_EQ(res.long_lines, 9u);
  EXPECT_EQ(sink->ops.size(), 63u);

  // validate names the limit.
  const auto v = ana::validate_files(d.files, 2, ro, false);
  EXPECT_FALSE(v.valid);
}

// A gzip bomb (512 MiB of one line from ~0.5 MiB on disk) next to a good job:
// the job is analysed, the bomb is one long line, and the analyzer's peak
// resident memory stays far below the bomb's size (before the line limit it
// grew past the whole line).
TEST(Hostile, GzipBombNextToAGoodJobCostsNoMemory) {
  const std::string dir = ni::test::temp_dir("hostile_bomb");
  ni::test::JobSpec s;
  s.iterations = 20;
  const auto truth = ni::test::write_job(dir, s);
  write_bomb(dir + "/bomb.jsonl.gz", 512u << 20);
  const Child c = spawn({NI_CLI, "summary", "--no-progress", "-j", "2", "-f", "json", dir});
  ASSERT_EQ(c.rc, 0) << c.err;
  EXPECT_LT(c.maxrss_kib, 256 * 1024) << "peak RSS of the analyzer, KiB";
  const auto js = nlohmann::json::parse(c.out);
  const auto ops = health_row(js, "ops");
  ASSERT_FALSE(ops.is_null());
  EXPECT_EQ(ops["value"].get<std::uint64_t>(), truth.ops);
  const auto bad = health_row(js, "bad lines");
  ASSERT_FALSE(bad.is_null());
  EXPECT_EQ(bad["value"].get<std::uint64_t>(), 1u);
  EXPECT_NE(bad["detail"].get<std::string>().find("1 over the 1 MiB line limit"), std::string::npos) << bad.dump();
}

// Memory runs out while one file is read (millions of marks with long labels
// under a 1 GiB address-space limit): that file is reported as not read to the
// end, with why; the good job beside it is analysed in full; exit status 0.
TEST(Hostile, OutOfMemoryInOneFileIsThatFilesError) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "the sanitizers reserve terabytes of address space: an RLIMIT_AS test cannot run under them";
#endif
  const std::string dir = ni::test::temp_dir("hostile_oom");
  ni::test::JobSpec s;
  s.iterations = 20;
  const auto truth = ni::test::write_job(dir, s);
  {
    gzFile f = gzopen((dir + "/marks.jsonl.gz").c_str(), "wb1");
    ASSERT_NE(f, nullptr);
    const std::string meta = R"({"type":"meta","format":"nccl-inspector-log","format_version":1,"host":"m","pid":9})";
    gzputs(f, (meta + "\n").c_str());
    const std::string mark =
        R"({"type":"mark","wall_ns":1735689600000000000,"label":")" + std::string(200, 'L') + "\"}\n";
    for (int i = 0; i < 6'000'000; ++i) ASSERT_GT(gzputs(f, mark.c_str()), 0);
    ASSERT_EQ(gzclose(f), Z_OK);
  }
  const Child c = spawn({NI_CLI, "summary", "--no-progress", "-j", "2", "-f", "json", dir}, rlim_t{1} << 30);
  ASSERT_EQ(c.rc, 0) << c.err;
  EXPECT_NE(c.err.find("marks.jsonl.gz: out of memory after"), std::string::npos) << c.err;
  const auto js = nlohmann::json::parse(c.out);
  const auto failed = health_row(js, "files not read to the end");
  ASSERT_FALSE(failed.is_null());
  EXPECT_EQ(failed["value"].get<std::uint64_t>(), 1u);
  EXPECT_NE(failed["detail"].get<std::string>().find("marks.jsonl.gz"), std::string::npos);
  EXPECT_EQ(health_row(js, "ops")["value"].get<std::uint64_t>(), truth.ops);
}

// Logs concatenated into one file (`cat *.gz > all.gz`, or plain text) are
// read as the files they were: each its own host, pid, ops, comms and last
// time; a later log's meta record (here 10 s after the others' ops) is that
// log's time, not the one before it. A meta record after bad lines alone
// stays in its file and validate reports it.
std::string gunzip(const std::string& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  std::string out;
  char buf[65536];
  for (int n; f != nullptr && (n = gzread(f, buf, sizeof buf)) > 0;) out.append(buf, static_cast<std::size_t>(n));
  if (f != nullptr) gzclose(f);
  return out;
}
TEST(Hostile, ConcatenatedLogsAreReadAsTheFilesTheyWere) {
  const std::string dir = ni::test::temp_dir("concat");
  ni::test::JobSpec spec;
  spec.ranks_per_host = 2;
  spec.iterations = 30;
  spec.marks = true;
  const std::string job = ni::test::temp_dir("concat_job");
  const auto truth = ni::test::write_job(job, spec);
  ASSERT_EQ(truth.files.size(), 4u);
  std::vector<std::string> apart;
  std::string all;
  for (std::size_t i = 0; i < truth.files.size(); ++i) {
    std::string text = gunzip(truth.files[i]);
    const std::string t0 = "\"wall_ns\":1767225600000000000";
    ASSERT_EQ(text.find(t0), std::string("{\"type\":\"meta\",").size()) << "the meta record comes first with its time";
    if (i > 0) text.replace(text.find(t0), t0.size(), "\"wall_ns\":1767225610000000000");
    apart.push_back(dir + "/log" + std::to_string(i) + ".jsonl");
    ni::test::write_text(apart.back(), text);
    all += text;
  }
  ni::test::write_text(dir + "/all.jsonl", all);
  ana::ReadOptions ro;
  ro.progress = 0;
  ana::ReadResult one, many;
  auto a = ana::read_merged<ana::CollectSink>(std::vector<std::string>{dir + "/all.jsonl"}, ro, 2, one, false);
  auto b = ana::read_merged<ana::CollectSink>(apart, ro, 2, many, false);
  ASSERT_EQ(one.files.size(), many.files.size());
  for (std::size_t i = 0; i < one.files.size(); ++i) {
    const ana::FileInfo& x = one.files[i];
    const ana::FileInfo& y = many.files[i];
    EXPECT_EQ(x.path, i == 0 ? dir + "/all.jsonl" : dir + "/all.jsonl (log " + std::to_string(i + 1) + ")");
    EXPECT_EQ(x.host, y.host) << i;
    EXPECT_EQ(x.pid, y.pid) << i;
    EXPECT_EQ(x.ops, y.ops) << i;
    EXPECT_EQ(x.lines, y.lines) << i;
    EXPECT_EQ(x.comms.size(), y.comms.size()) << i;
    EXPECT_EQ(x.marks.size(), y.marks.size()) << i;
    EXPECT_EQ(x.last_wall_ns, y.last_wall_ns) << "log " << i << ": the next log's meta time is not this one's";
    EXPECT_TRUE(x.meta_first) << i;
  }
  auto keys = [](const ana::CollectSink& s, const ana::ReadResult& r) {
    std::vector<std::tuple<std::string, std::int64_t, std::uint64_t, int, std::uint64_t, double>> k;
    for (const ana::Op& op : s.ops)
      k.emplace_back(r.files[op.file_idx].host, r.files[op.file_idx].pid, op.comm_hash, op.rank, op.seq, op.dur_us);
    std::sort(k.begin(), k.end());
    return k;
  };
  EXPECT_EQ(keys(*a, one), keys(*b, many));
  EXPECT_EQ(a->ops.size(), truth.ops);

  // Bad lines, then a meta record: one file, and validate says where the meta record is.
  ni::test::write_text(dir + "/odd.jsonl", "not json\n" + gunzip(truth.files[0]));
  ana::ReadOptions vo = ro;
  vo.validate = true;
  ana::ReadResult odd;
  ana::read_merged<ana::CollectSink>(std::vector<std::string>{dir + "/odd.jsonl"}, vo, 1, odd, false);
  ASSERT_EQ(odd.files.size(), 1u);
  bool said = false;
  for (const auto& p : odd.files[0].problems) said = said || p.find("not on the first line") != std::string::npos;
  EXPECT_TRUE(said);
}

// A log that says it is format_version 2^32 + 1 is not shown as "v1" (the
// number was once cut to 32 bits), and the health table says this analyzer
// does not read that version.
TEST(Hostile, FormatVersionBeyond32BitsIsShownWhole) {
  const std::string dir = ni::test::temp_dir("hostile_version");
  ni::test::write_text(dir + "/x.jsonl",
                       R"({"type":"meta","format":"nccl-inspector-log","format_version":4294967297,"host":"h","pid":1})"
                       "\n" + kOp + "\n");
  const Child c = spawn({NI_CLI, "summary", "--no-progress", "-f", "json", dir});
  ASSERT_EQ(c.rc, 0) << c.err;
  const auto files = health_row(nlohmann::json::parse(c.out), "files");
  ASSERT_FALSE(files.is_null()) << c.out;
  const std::string detail = files["detail"].get<std::string>();
  EXPECT_NE(detail.find("(v4294967297 (not a version this analyzer reads))"), std::string::npos) << detail;
  EXPECT_EQ(detail.find("(v1)"), std::string::npos) << detail;
}

namespace {
// One plugin output's file: meta (host h, pid 7, the instance), n ops, one
// stats record, and the end record when `end`.
void write_output(const std::string& path, const std::string& instance, int n_ops, std::uint64_t completed,
                  std::uint64_t written, std::uint64_t ring_full, bool end) {
  std::string t = R"({"type":"meta","format":"nccl-inspector-log","format_version":1,"host":"h","pid":7,"instance":")" +
                  instance + "\"}\n";
  for (int i = 0; i < n_ops; ++i) t += kOp + "\n";
  t += R"({"type":"stats","wall_ns":)" + std::to_string(1000 + n_ops) + R"(,"records_written":)" +
       std::to_string(written) + R"(,"ops_completed":)" + std::to_string(completed) +
       R"(,"records_pending":0,"dropped":{"ring_full":)" + std::to_string(ring_full) +
       R"(,"pool_exhausted":0,"write_error":0,"at_exit":0}})" + "\n";
  if (end) t += R"({"type":"end","wall_ns":5000,"records_written":)" + std::to_string(written) + "}\n";
  ni::test::write_text(path, t);
}
}  // namespace

// Drops and ends are counted per plugin output (meta.instance), not per
// (host, pid): a process that started the plugin twice, or two containers
// with the same pid, lose nothing from the health table. And the table says
// when stats do not add up: records neither written nor dropped in an output
// that ended, records counted as written that are not in the files.
TEST(Hostile, DropsArePerPluginOutputAndEveryMismatchIsShown) {
  const std::string dir = ni::test::temp_dir("hostile_instances");
  write_output(dir + "/a.jsonl", "000000000000000a", 3, 5, 3, 2, true);     // 2 dropped
  write_output(dir + "/b.jsonl", "000000000000000b", 2, 6, 2, 4, true);     // same pid, 4 dropped
  write_output(dir + "/c.jsonl", "000000000000000c", 1, 1, 1, 0, false);    // killed: no end
  write_output(dir + "/d.jsonl", "000000000000000d", 4, 10, 4, 0, true);    // 6 completed, nowhere
  write_output(dir + "/e.jsonl", "000000000000000e", 3, 9, 9, 0, true);     // 6 written, not in the file
  const auto d = ana::discover_files({dir});
  ana::ReadOptions ro;
  ro.progress = 0;
  ana::ReadResult res;
  ana::read_merged<ana::CollectSink>(d.files, ro, 1, res, false);
  const ana::DropTotals t = ana::drop_totals(res);
  EXPECT_EQ(t.outputs, 5u);
  EXPECT_EQ(t.outputs_without_end, 1u);
  EXPECT_EQ(t.dropped.at("ring_full"), 6u);  // keyed by (host, pid) it read 4 or 2
  EXPECT_EQ(t.unaccounted, 6u);
  EXPECT_EQ(t.outputs_unaccounted, 1u);
  EXPECT_EQ(t.written_not_read, 6u);
  EXPECT_EQ(t.outputs_not_read, 1u);

  const Child c = spawn({NI_CLI, "summary", "--no-progress", "-f", "json", dir});
  ASSERT_EQ(c.rc, 0) << c.err;
  const auto js = nlohmann::json::parse(c.out);
  EXPECT_EQ(health_row(js, "dropped records")["value"].get<std::uint64_t>(), 6u);
  EXPECT_EQ(health_row(js, "records lost uncounted")["value"].get<std::uint64_t>(), 6u);
  EXPECT_EQ(health_row(js, "written records not read")["value"].get<std::uint64_t>(), 6u);
  EXPECT_EQ(health_row(js, "outputs without end record")["value"].get<std::uint64_t>(), 1u);
}

// Without mismatches the two rows are absent (a clean job's table stays short).
TEST(Hostile, NoMismatchRowsWhenTheStatsAddUp) {
  const std::string dir = ni::test::temp_dir("hostile_instances_ok");
  write_output(dir + "/a.jsonl", "000000000000000a", 3, 5, 3, 2, true);
  const Child c = spawn({NI_CLI, "summary", "--no-progress", "-f", "json", dir});
  ASSERT_EQ(c.rc, 0) << c.err;
  const auto js = nlohmann::json::parse(c.out);
  EXPECT_TRUE(health_row(js, "records lost uncounted").is_null());
  EXPECT_TRUE(health_row(js, "written records not read").is_null());
  EXPECT_EQ(health_row(js, "dropped records")["value"].get<std::uint64_t>(), 2u);
}
