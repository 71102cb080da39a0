// The gzip log writer through the I/O seam: members, truncation, naming,
// rotation, permissions and every injected fault.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cerrno>

#include "tests/output/fault_io.h"
#include "src/output/gzip_log.h"
#include "tests/output/test_util.h"

namespace ni::out {
namespace {

using testing::FaultIo;
using testing::TempDir;

struct Harness {
  explicit Harness(Io& io, std::string dir, uint64_t rotate = 0) {
    LogFileOptions o;
    o.dir = std::move(dir);
    o.base = "host-pid1-20250101T000000Z";
    o.rotate_bytes = rotate;
    o.retry_ns = 0;  // retry on every flush
    log = std::make_unique<GzipLog>(
        io, o, [this](ni::abi::LogLevel l, const std::string& m) {
          msgs.push_back(m);
          if (l == ni::abi::kLogWarn) ++warns;
        },
        [](Buf& b, uint32_t seq) {
          b.put(std::string_view("{\"type\":\"meta\",\"file_seq\":"));
          b.put_int(seq);
          b.put(std::string_view("}\n"));
        });
  }
  // Appends lines "{"type":"coll","i":N}" [from, to) as one member.
  void member(int from, int to) {
    Buf b;
    for (int i = from; i < to; ++i) {
      b.put(std::string_view("{\"type\":\"coll\",\"i\":"));
      b.put_int(i);
      b.put(std::string_view("}\n"));
    }
    log->add_member(b.data(), b.size());
  }
  std::unique_ptr<GzipLog> log;
  std::vector<std::string> msgs;
  int warns = 0;
};

std::vector<int> coll_ids(const std::vector<nlohmann::json>& v) {
  std::vector<int> ids;
  for (const auto& j : v)
    if (j["type"] == "coll") ids.push_back(j["i"].get<int>());
  return ids;
}
std::vector<int> range(int a, int b) {
  std::vector<int> v;
  for (int i = a; i < b; ++i) v.push_back(i);
  return v;
}

TEST(GzipLogTest, MembersConcatenateAndGunzip) {
  TempDir d;
  Harness h(posix_io(), d / "sub/dir");  // mkdir -p
  h.member(0, 10);
  ASSERT_TRUE(h.log->flush(0));
  h.member(10, 20);
  h.member(20, 30);
  ASSERT_TRUE(h.log->flush(0));
  h.log->close(true);
  std::string path = h.log->path();
  EXPECT_EQ(path, d / "sub/dir/host-pid1-20250101T000000Z.jsonl.gz");
  testing::Gunzipped g = testing::gunzip(testing::read_file(path));
  EXPECT_TRUE(g.clean);
  EXPECT_EQ(g.members, 4u);  // header + 3
  auto lines = testing::parse_lines(g.text);
  EXPECT_EQ(lines[0]["type"], "meta");
  EXPECT_EQ(coll_ids(lines), range(0, 30));
  EXPECT_EQ(h.warns, 0);
  // zcat reads concatenated members too.
  std::string cmd = "zcat '" + path + "' | wc -l > '" + d.path() + "/n'";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  EXPECT_EQ(std::stoi(testing::read_file(d / "n")), 31);
}

TEST(GzipLogTest, TruncatedFileKeepsEveryCompleteMember) {
  TempDir d;
  Harness h(posix_io(), d.path());
  std::vector<size_t> ends;
  for (int m = 0; m < 5; ++m) {
    h.member(m * 100, (m + 1) * 100);
    ASSERT_TRUE(h.log->flush(0));
    ends.push_back(h.log->file_bytes());
  }
  std::string data = testing::read_file(h.log->path());
  // Cut in the middle of member 4 (index 3): members 0..2 survive intact.
  size_t cut = ends[2] + (ends[3] - ends[2]) / 2;
  testing::Gunzipped g = testing::gunzip(data.substr(0, cut));
  EXPECT_FALSE(g.clean);
  EXPECT_EQ(coll_ids(testing::parse_lines(g.text)), range(0, 300));
  // zcat prints the complete part and complains about the rest.
  std::string cut_path = d / "cut.jsonl.gz";
  {
    std::ofstream f(cut_path, std::ios::binary);
    f << data.substr(0, cut);
  }
  std::string cmd = "zcat '" + cut_path + "' 2>/dev/null | grep -c coll > '" + d.path() + "/n'";
  (void)std::system(cmd.c_str());
  EXPECT_GE(std::stoi(testing::read_file(d / "n")), 300);
}

TEST(GzipLogTest, ExistingFileIsNeverTruncated) {
  TempDir d;
  std::string first = d / "host-pid1-20250101T000000Z.jsonl.gz";
  {
    std::ofstream f(first);
    f << "old data";
  }
  Harness h(posix_io(), d.path());
  h.member(0, 3);
  ASSERT_TRUE(h.log->flush(0));
  EXPECT_EQ(testing::read_file(first), "old data");
  EXPECT_EQ(h.log->path(), d / "host-pid1-20250101T000000Z.1.jsonl.gz");
  EXPECT_EQ(h.log->file_seq(), 1u);
  auto lines = testing::read_log(h.log->path());
  EXPECT_EQ(lines[0]["file_seq"], 1);
}

// A symlink planted at the log's first name (even a dangling one) is skipped
// like an existing file: its target is never written or created.
TEST(GzipLogTest, SymlinkAtTheLogNameIsNeverFollowed) {
  TempDir d;
  const std::string victim = d / "victim", absent = d / "absent";
  { std::ofstream(victim) << "precious"; }
  ASSERT_EQ(symlink(victim.c_str(), (d / "host-pid1-20250101T000000Z.jsonl.gz").c_str()), 0);
  ASSERT_EQ(symlink(absent.c_str(), (d / "host-pid1-20250101T000000Z.1.jsonl.gz").c_str()), 0);
  Harness h(posix_io(), d.path());
  h.member(0, 3);
  ASSERT_TRUE(h.log->flush(0));
  EXPECT_EQ(testing::read_file(victim), "precious");
  struct stat st {};
  EXPECT_NE(stat(absent.c_str(), &st), 0);
  EXPECT_EQ(h.log->path(), d / "host-pid1-20250101T000000Z.2.jsonl.gz");
  EXPECT_EQ(h.warns, 0);
}

// A dump directory others may write without the sticky bit: one warning,
// however many files are opened there.
TEST(GzipLogTest, UnsafeDumpDirectoryWarnsOnce) {
  TempDir d;
  const std::string shared = d / "shared";
  ASSERT_EQ(mkdir(shared.c_str(), 0700), 0);
  ASSERT_EQ(chmod(shared.c_str(), 0777), 0);
  Harness h(posix_io(), shared, 512);  // rotates: several files
  for (int m = 0; m < 20; ++m) {
    h.member(m * 50, (m + 1) * 50);
    ASSERT_TRUE(h.log->flush(0));
  }
  ASSERT_GE(testing::list_dir(shared).size(), 2u);
  ASSERT_EQ(h.warns, 1);
  EXPECT_NE(h.msgs[0].find(shared + " is unsafe"), std::string::npos) << h.msgs[0];
}

TEST(GzipLogTest, RotationStartsEachFileWithHeader) {
  TempDir d;
  Harness h(posix_io(), d.path(), 1024);
  for (int m = 0; m < 40; ++m) {
    h.member(m * 50, (m + 1) * 50);
    ASSERT_TRUE(h.log->flush(0));
  }
  h.log->close(false);
  auto files = testing::list_dir(d.path());
  ASSERT_GE(files.size(), 3u);
  std::vector<int> all;
  for (uint32_t seq = 0; seq < files.size(); ++seq) {
    std::string p = h.log->path_for(seq);
    struct stat st {};
    ASSERT_EQ(stat(p.c_str(), &st), 0) << p;
    auto lines = testing::read_log(p);
    ASSERT_FALSE(lines.empty());
    EXPECT_EQ(lines[0]["type"], "meta");
    EXPECT_EQ(lines[0]["file_seq"], seq);
    for (int i : coll_ids(lines)) all.push_back(i);
    if (seq + 1 < files.size()) {
      EXPECT_LE(st.st_size, 1024 + 1024);
    }
  }
  EXPECT_EQ(all, range(0, 2000));
}

TEST(GzipLogTest, PermissionsComeFromTheUmask) {
  TempDir d;
  mode_t old = umask(027);
  Harness h(posix_io(), d / "new");
  h.member(0, 1);
  ASSERT_TRUE(h.log->flush(0));
  umask(old);
  struct stat st {};
  ASSERT_EQ(stat(h.log->path().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0640u);
  ASSERT_EQ(stat((d / "new").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0750u);
}

TEST(GzipLogTest, EintrAndShortWritesAreRetried) {
  TempDir d;
  FaultIo io;
  FaultIo::Script s;
  s.eintr_writes = 3;
  s.short_write_max = 7;
  io.set(s);
  Harness h(io, d.path());
  h.member(0, 500);
  ASSERT_TRUE(h.log->flush(0));
  EXPECT_EQ(io.eintrs(), 3u);
  EXPECT_GT(io.writes(), 50u);
  EXPECT_EQ(coll_ids(testing::read_log(h.log->path())), range(0, 500));
  EXPECT_EQ(h.warns, 0);
}

TEST(GzipLogTest, EnospcMidMemberRollsBackThenRecovers) {
  TempDir d;
  FaultIo io;
  Harness h(io, d.path());
  h.member(0, 100);
  ASSERT_TRUE(h.log->flush(0));
  FaultIo::Script s;
  s.write_errno = ENOSPC;
  s.fail_after_bytes = 10;  // a partial member reaches the file, then ENOSPC
  io.set(s);
  h.member(100, 200);
  EXPECT_FALSE(h.log->flush(0));
  h.member(200, 300);
  EXPECT_FALSE(h.log->flush(0));
  EXPECT_EQ(h.warns, 1) << "one warning per failure episode";
  EXPECT_TRUE(h.log->failing());
  io.set({});  // space is back
  h.member(300, 400);
  EXPECT_TRUE(h.log->flush(0));
  EXPECT_FALSE(h.log->failing());
  EXPECT_EQ(h.warns, 2);  // "works again"
  bool clean = false;
  auto lines = testing::read_log(h.log->path(), &clean);
  EXPECT_TRUE(clean) << "the partial member was rolled back";
  std::vector<int> want = range(0, 100);
  for (int i = 300; i < 400; ++i) want.push_back(i);
  EXPECT_EQ(coll_ids(lines), want);
}

TEST(GzipLogTest, EioWithFailingTruncateMovesToNextFile) {
  TempDir d;
  FaultIo io;
  Harness h(io, d.path());
  h.member(0, 10);
  ASSERT_TRUE(h.log->flush(0));
  std::string first = h.log->path();
  FaultIo::Script s;
  s.write_errno = EIO;
  s.fail_after_bytes = 5;
  s.ftruncate_errno = EIO;
  io.set(s);
  h.member(10, 20);
  EXPECT_FALSE(h.log->flush(0));
  io.set({});
  h.member(20, 30);
  EXPECT_TRUE(h.log->flush(0));
  EXPECT_NE(h.log->path(), first);
  EXPECT_EQ(h.log->file_seq(), 1u);
  // The first file ends in a torn member; everything before it reads.
  bool clean = true;
  EXPECT_EQ(coll_ids(testing::read_log(first, &clean)), range(0, 10));
  EXPECT_FALSE(clean);
  auto second = testing::read_log(h.log->path());
  EXPECT_EQ(second[0]["type"], "meta");
  EXPECT_EQ(coll_ids(second), range(20, 30));
}

TEST(GzipLogTest, UnwritableDirectoryWarnsOnceAndRetries) {
  TempDir d;
  // A regular file where a directory should be: fails even for root.
  {
    std::ofstream f(d / "file");
    f << "x";
  }
  Harness h(posix_io(), d / "file/sub");
  for (int i = 0; i < 5; ++i) {
    h.member(i, i + 1);
    EXPECT_FALSE(h.log->flush(0));
  }
  EXPECT_EQ(h.warns, 1);
  ASSERT_FALSE(h.msgs.empty());
  EXPECT_NE(h.msgs[0].find("file/sub"), std::string::npos) << h.msgs[0];
  EXPECT_NE(h.msgs[0].find("write_error"), std::string::npos);

  FaultIo io;
  FaultIo::Script s;
  s.open_errno = EACCES;
  io.set(s);
  Harness h2(io, d.path());
  h2.member(0, 1);
  EXPECT_FALSE(h2.log->flush(0));
  h2.member(1, 2);
  EXPECT_FALSE(h2.log->flush(0));
  EXPECT_EQ(h2.warns, 1);
  io.set({});
  h2.member(2, 3);
  EXPECT_TRUE(h2.log->flush(0));
  EXPECT_EQ(coll_ids(testing::read_log(h2.log->path())), range(2, 3));
}

TEST(GzipLogTest, RetriesArePacedWhileFailing) {
  TempDir d;
  FaultIo io;
  LogFileOptions o;
  o.dir = d.path();
  o.base = "b";
  o.retry_ns = 1000;
  int warns = 0;
  GzipLog log(io, o, [&](ni::abi::LogLevel, const std::string&) { ++warns; }, [](Buf&, uint32_t) {});
  FaultIo::Script s;
  s.open_errno = ENOSPC;
  io.set(s);
  Buf b;
  b.put(std::string_view("x\n"));
  log.add_member(b.data(), b.size());
  EXPECT_FALSE(log.flush(100));
  io.set({});
  log.add_member(b.data(), b.size());
  EXPECT_FALSE(log.flush(500));  // inside the pacing window: discarded without I/O
  log.add_member(b.data(), b.size());
  EXPECT_TRUE(log.flush(1200));
  EXPECT_EQ(warns, 2);
}

TEST(GzipLogTest, FailingCloseIsReportedNotFatal) {
  TempDir d;
  FaultIo io;
  Harness h(io, d.path());
  h.member(0, 10);
  ASSERT_TRUE(h.log->flush(0));
  FaultIo::Script s;
  s.close_errno = EIO;
  io.set(s);
  h.log->close(true);
  EXPECT_EQ(h.warns, 1);
  io.set({});
  EXPECT_EQ(coll_ids(testing::read_log(h.log->path())), range(0, 10));
  // The next flush opens the next file.
  h.member(10, 11);
  EXPECT_TRUE(h.log->flush(0));
  EXPECT_EQ(h.log->file_seq(), 1u);
}

}  // namespace
}  // namespace ni::out
