// Runs a fuzz target over files (a crash reproducer or a seed corpus) without
// libFuzzer: `target FILE_OR_DIR...`.
#include <dirent.h>
#include <sys/stat.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

static int run_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) {
    std::fprintf(stderr, "cannot read %s\n", path.c_str());
    return 1;
  }
  std::vector<uint8_t> buf((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  LLVMFuzzerTestOneInput(buf.data(), buf.size());
  return 0;
}

int main(int argc, char** argv) {
  int runs = 0, bad = 0;
  for (int i = 1; i < argc; ++i) {
    struct stat st;
    if (stat(argv[i], &st) != 0) {
      std::fprintf(stderr, "no such file: %s\n", argv[i]);
      return 2;
    }
    if (S_ISDIR(st.st_mode)) {
      DIR* d = opendir(argv[i]);
      while (dirent* e = d ? readdir(d) : nullptr) {
        if (e->d_name[0] == '.') continue;
        bad += run_file(std::string(argv[i]) + "/" + e->d_name);
        ++runs;
      }
      if (d) closedir(d);
    } else {
      bad += run_file(argv[i]);
      ++runs;
    }
  }
  std::printf("replayed %d inputs\n", runs);
  return bad ? 1 : 0;
}
