// nccl_check: drives real NCCL on the GPUs of this machine so that scripts/gpu-check.sh can compare the NCCL
// Inspector plugin's records with CUDA-event timings of the same operations.
//
// One GPU: a communicator with nranks == 1 (ncclCommInitRank), then
//   * send/recv to self (a group of ncclSend + ncclRecv to peer 0),
//   * grouped P2P (one group holding several self send/recv pairs of different sizes),
//   * an AllReduce, which NCCL runs without any profiler event when nranks == 1 (checked: no record).
// Several GPUs: additionally one communicator over all of them (ncclCommInitAll) running AllReduce, AllGather and
// ReduceScatter.
// Every operation is bracketed by CUDA events on its stream; the times go to a CSV (one line per operation:
// phase,func,bytes,iter,event_us) read back by the check. Prints "nccl_version <code>" and "gpus <n>" on stdout.
//
// Pair mode (nccl_check --pair RANK IDFILE CSV ITERS): one rank of a 2-rank communicator on GPU 0. Two such
// processes started with different NCCL_HOSTID values look like two hosts to NCCL, so they pass NCCL's duplicate-GPU
// check and talk over its socket transport: KernelCh events with GPU timestamps, ProxyOp/ProxyStep events, on a
// machine with one GPU. Rank 0 writes the unique id to IDFILE, rank 1 waits for it. Runs AllReduce, AllGather,
// ReduceScatter, a Send/Recv exchange with the other rank, and an AlltoAll made of grouped Send/Recv (its parts to
// and from itself included: NCCL gives those no proxy op and so no KernelCh).
#include <cuda_runtime.h>
#include <nccl.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <chrono>
#include <vector>

#define CUDA_OK(x)                                                                                  \
  do {                                                                                              \
    cudaError_t e_ = (x);                                                                           \
    if (e_ != cudaSuccess) {                                                                        \
      std::fprintf(stderr, "nccl_check: %s failed: %s (%s:%d)\n", #x, cudaGetErrorString(e_), __FILE__, \
                   __LINE__);                                                                       \
      std::exit(1);                                                                                 \
    }                                                                                               \
  } while (0)
#define NCCL_OK(x)                                                                                  \
  do {                                                                                              \
    ncclResult_t r_ = (x);                                                                          \
    if (r_ != ncclSuccess) {                                                                        \
      std::fprintf(stderr, "nccl_check: %s failed: %s (%s:%d)\n", #x, ncclGetErrorString(r_), __FILE__, \
                   __LINE__);                                                                       \
      std::exit(1);                                                                                 \
    }                                                                                               \
  } while (0)

namespace {

FILE* g_csv = nullptr;

struct Timer {
  cudaEvent_t a{}, b{};
  Timer() {
    CUDA_OK(cudaEventCreate(&a));
    CUDA_OK(cudaEventCreate(&b));
  }
  ~Timer() {
    cudaEventDestroy(a);
    cudaEventDestroy(b);
  }
};

void emit(const char* phase, const char* func, size_t bytes, int iter, float ms) {
  std::fprintf(g_csv, "%s,%s,%zu,%d,%.3f\n", phase, func, bytes, iter, ms * 1000.0f);
}

// Send/recv to self on a nranks == 1 communicator: one group, one Send and one Recv of `bytes`.
void self_sendrecv(ncclComm_t comm, cudaStream_t s, char* sbuf, char* rbuf, size_t bytes, int iter, Timer& t) {
  CUDA_OK(cudaEventRecord(t.a, s));
  NCCL_OK(ncclGroupStart());
  NCCL_OK(ncclSend(sbuf, bytes, ncclInt8, 0, comm, s));
  NCCL_OK(ncclRecv(rbuf, bytes, ncclInt8, 0, comm, s));
  NCCL_OK(ncclGroupEnd());
  CUDA_OK(cudaEventRecord(t.b, s));
  CUDA_OK(cudaEventSynchronize(t.b));
  float ms = 0;
  CUDA_OK(cudaEventElapsedTime(&ms, t.a, t.b));
  emit("sendrecv", "SendRecv", bytes, iter, ms);
}

// Times one operation (fn enqueues it on s) with CUDA events and writes it to the CSV.
template <class Fn>
void timed(const char* phase, const char* func, size_t bytes, int iter, cudaStream_t s, Timer& t, Fn fn) {
  CUDA_OK(cudaEventRecord(t.a, s));
  fn();
  CUDA_OK(cudaEventRecord(t.b, s));
  CUDA_OK(cudaEventSynchronize(t.b));
  float ms = 0;
  CUDA_OK(cudaEventElapsedTime(&ms, t.a, t.b));
  emit(phase, func, bytes, iter, ms);
}

int pair_main(int rank, const char* id_path, int iters) {
  ncclUniqueId id;
  if (rank == 0) {
    NCCL_OK(ncclGetUniqueId(&id));
    const std::string tmp = std::string(id_path) + ".tmp";
    FILE* f = std::fopen(tmp.c_str(), "wb");
    if (f == nullptr || std::fwrite(&id, sizeof id, 1, f) != 1 || std::fclose(f) != 0 ||
        std::rename(tmp.c_str(), id_path) != 0) {
      std::perror(id_path);
      return 1;
    }
  } else {
    bool got = false;
    for (int i = 0; i < 1200 && !got; ++i) {  // 60 s
      if (FILE* f = std::fopen(id_path, "rb")) {
        got = std::fread(&id, sizeof id, 1, f) == 1;
        std::fclose(f);
      }
      if (!got) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    if (!got) {
      std::fprintf(stderr, "nccl_check: rank 1: no unique id in %s after 60 s\n", id_path);
      return 1;
    }
  }
  CUDA_OK(cudaSetDevice(0));
  cudaStream_t s;
  CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  const size_t kMax = 16u << 20;
  char *a = nullptr, *b = nullptr;
  CUDA_OK(cudaMalloc(&a, 2 * kMax));
  CUDA_OK(cudaMalloc(&b, 2 * kMax));
  CUDA_OK(cudaMemset(a, 0, 2 * kMax));
  ncclComm_t comm;
  NCCL_OK(ncclCommInitRank(&comm, 2, id, rank));
  std::printf("pair rank %d: communicator up\n", rank);
  std::fflush(stdout);
  Timer t;
  const int peer = 1 - rank;
  // Phase 1: no Send/Recv to itself yet, so NCCL's KernelCh stamps are each op's own.
  for (int i = -1; i < iters; ++i) {  // iteration -1: warm-up, not compared
    for (size_t bytes : {size_t(1) << 20, size_t(16) << 20}) {
      const size_t count = bytes / 4;
      timed("pair_coll", "AllReduce", bytes, i, s, t,
            [&] { NCCL_OK(ncclAllReduce(a, b, count, ncclFloat32, ncclSum, comm, s)); });
      timed("pair_coll", "AllGather", bytes, i, s, t,
            [&] { NCCL_OK(ncclAllGather(a, b, count / 2, ncclFloat32, comm, s)); });
      timed("pair_coll", "ReduceScatter", bytes, i, s, t,
            [&] { NCCL_OK(ncclReduceScatter(a, b, count / 2, ncclFloat32, ncclSum, comm, s)); });
      timed("pair_p2p", "SendRecv", bytes, i, s, t, [&] {
        NCCL_OK(ncclGroupStart());
        NCCL_OK(ncclSend(a, bytes, ncclInt8, peer, comm, s));
        NCCL_OK(ncclRecv(b, bytes, ncclInt8, peer, comm, s));
        NCCL_OK(ncclGroupEnd());
      });
    }
  }
  // Phase 2: AlltoAll as the application writes it before NCCL 2.28, one group of a Send and a Recv per rank,
  // itself included (`bytes` per peer); then AllReduce again. The part to itself puts NCCL's KernelCh work
  // counters out of step: the plugin must not take GPU times from them any more (kernel_desync).
  for (int i = 0; i < iters; ++i) {
    for (size_t bytes : {size_t(1) << 20, size_t(16) << 20}) {
      timed("pair_alltoall", "AlltoAll", 2 * bytes, i, s, t, [&] {
        NCCL_OK(ncclGroupStart());
        for (int p = 0; p < 2; ++p) {
          NCCL_OK(ncclSend(a + p * bytes, bytes, ncclInt8, p, comm, s));
          NCCL_OK(ncclRecv(b + p * bytes, bytes, ncclInt8, p, comm, s));
        }
        NCCL_OK(ncclGroupEnd());
      });
    }
  }
  for (int i = 0; i < iters; ++i)
    timed("pair_after", "AllReduce", 1u << 20, i, s, t,
          [&] { NCCL_OK(ncclAllReduce(a, b, (1u << 20) / 4, ncclFloat32, ncclSum, comm, s)); });
  NCCL_OK(ncclCommFinalize(comm));
  NCCL_OK(ncclCommDestroy(comm));
  CUDA_OK(cudaFree(a));
  CUDA_OK(cudaFree(b));
  CUDA_OK(cudaStreamDestroy(s));
  std::fclose(g_csv);
  std::printf("nccl_check: pair rank %d done\n", rank);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "--pair") == 0) {
    if (argc < 6) {
      std::fprintf(stderr, "usage: nccl_check --pair RANK IDFILE CSV ITERS\n");
      return 2;
    }
    g_csv = std::fopen(argv[4], "w");
    if (g_csv == nullptr) {
      std::perror(argv[4]);
      return 1;
    }
    std::fprintf(g_csv, "phase,func,bytes,iter,event_us\n");
    int version = 0;
    NCCL_OK(ncclGetVersion(&version));
    std::printf("nccl_version %d\n", version);
    return pair_main(std::atoi(argv[2]), argv[3], std::atoi(argv[5]));
  }
  const char* csv_path = argc > 1 ? argv[1] : "nccl_check.csv";
  int iters = argc > 2 ? std::atoi(argv[2]) : 20;
  g_csv = std::fopen(csv_path, "w");
  if (g_csv == nullptr) {
    std::perror(csv_path);
    return 1;
  }
  std::fprintf(g_csv, "phase,func,bytes,iter,event_us\n");

  int version = 0;
  NCCL_OK(ncclGetVersion(&version));
  int ngpu = 0;
  CUDA_OK(cudaGetDeviceCount(&ngpu));
  std::printf("nccl_version %d\ngpus %d\n", version, ngpu);
  std::fflush(stdout);
  if (ngpu < 1) return 1;

  const size_t kMax = 64u << 20;
  const std::vector<size_t> sizes = {1u << 16, 1u << 20, 16u << 20, 64u << 20};

  // --- one GPU, nranks == 1 --------------------------------------------------------------------------------------
  CUDA_OK(cudaSetDevice(0));
  cudaStream_t s;
  CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  char *sbuf = nullptr, *rbuf = nullptr;
  CUDA_OK(cudaMalloc(&sbuf, kMax));
  CUDA_OK(cudaMalloc(&rbuf, kMax));
  CUDA_OK(cudaMemset(sbuf, 1, kMax));
  ncclUniqueId id;
  NCCL_OK(ncclGetUniqueId(&id));
  ncclComm_t comm;
  NCCL_OK(ncclCommInitRank(&comm, 1, id, 0));
  Timer t;

  for (size_t bytes : sizes) self_sendrecv(comm, s, sbuf, rbuf, bytes, -1, t);  // warm-up (not compared)
  for (int i = 0; i < iters; ++i)
    for (size_t bytes : sizes) self_sendrecv(comm, s, sbuf, rbuf, bytes, i, t);

  // Grouped P2P: four self send/recv pairs in one group, timed as one unit. Sizes differ from the single ops'
  // so that analyze.py can tell the records apart.
  for (int i = 0; i < iters; ++i) {
    CUDA_OK(cudaEventRecord(t.a, s));
    NCCL_OK(ncclGroupStart());
    size_t off = 0;
    for (size_t bytes : {size_t(2) << 20, size_t(4) << 20, size_t(8) << 20, size_t(32) << 20}) {
      NCCL_OK(ncclSend(sbuf + off, bytes, ncclInt8, 0, comm, s));
      NCCL_OK(ncclRecv(rbuf + off, bytes, ncclInt8, 0, comm, s));
      off += bytes;
    }
    NCCL_OK(ncclGroupEnd());
    CUDA_OK(cudaEventRecord(t.b, s));
    CUDA_OK(cudaEventSynchronize(t.b));
    float ms = 0;
    CUDA_OK(cudaEventElapsedTime(&ms, t.a, t.b));
    emit("grouped", "GroupedP2P", (2u + 4u + 8u + 32u) << 20, i, ms);
  }

  // nranks == 1 AllReduce: NCCL copies locally and the profiler sees nothing.
  for (int i = 0; i < 3; ++i) {
    CUDA_OK(cudaEventRecord(t.a, s));
    NCCL_OK(ncclAllReduce(sbuf, rbuf, (1u << 20) / 4, ncclFloat32, ncclSum, comm, s));
    CUDA_OK(cudaEventRecord(t.b, s));
    CUDA_OK(cudaEventSynchronize(t.b));
    float ms = 0;
    CUDA_OK(cudaEventElapsedTime(&ms, t.a, t.b));
    emit("single_coll", "AllReduce", 1u << 20, i, ms);
  }
  NCCL_OK(ncclCommFinalize(comm));
  NCCL_OK(ncclCommDestroy(comm));
  CUDA_OK(cudaFree(sbuf));
  CUDA_OK(cudaFree(rbuf));
  CUDA_OK(cudaStreamDestroy(s));

  // --- several GPUs: real collectives ----------------------------------------------------------------------------
  if (ngpu > 1) {
    std::vector<ncclComm_t> comms(ngpu);
    std::vector<int> devs(ngpu);
    for (int d = 0; d < ngpu; ++d) devs[d] = d;
    NCCL_OK(ncclCommInitAll(comms.data(), ngpu, devs.data()));
    std::vector<cudaStream_t> st(ngpu);
    std::vector<char*> a(ngpu), b(ngpu);
    std::vector<cudaEvent_t> ea(ngpu), eb(ngpu);
    for (int d = 0; d < ngpu; ++d) {
      CUDA_OK(cudaSetDevice(d));
      CUDA_OK(cudaStreamCreateWithFlags(&st[d], cudaStreamNonBlocking));
      CUDA_OK(cudaMalloc(&a[d], kMax));
      CUDA_OK(cudaMalloc(&b[d], kMax * ngpu));
      CUDA_OK(cudaMemset(a[d], 0, kMax));
      CUDA_OK(cudaEventCreate(&ea[d]));
      CUDA_OK(cudaEventCreate(&eb[d]));
    }
    const char* funcs[] = {"AllReduce", "AllGather", "ReduceScatter"};
    for (int i = -1; i < iters; ++i) {
      for (const char* f : funcs) {
        for (size_t bytes : {size_t(1) << 20, size_t(64) << 20}) {
          const size_t count = bytes / 4;
          for (int d = 0; d < ngpu; ++d) {
            CUDA_OK(cudaSetDevice(d));
            CUDA_OK(cudaEventRecord(ea[d], st[d]));
          }
          NCCL_OK(ncclGroupStart());
          for (int d = 0; d < ngpu; ++d) {
            if (std::strcmp(f, "AllReduce") == 0)
              NCCL_OK(ncclAllReduce(a[d], b[d], count, ncclFloat32, ncclSum, comms[d], st[d]));
            else if (std::strcmp(f, "AllGather") == 0)
              NCCL_OK(ncclAllGather(a[d], b[d], count / ngpu, ncclFloat32, comms[d], st[d]));
            else
              NCCL_OK(ncclReduceScatter(b[d], a[d], count / ngpu, ncclFloat32, ncclSum, comms[d], st[d]));
          }
          NCCL_OK(ncclGroupEnd());
          float worst = 0;
          for (int d = 0; d < ngpu; ++d) {
            CUDA_OK(cudaSetDevice(d));
            CUDA_OK(cudaEventRecord(eb[d], st[d]));
            CUDA_OK(cudaEventSynchronize(eb[d]));
            float ms = 0;
            CUDA_OK(cudaEventElapsedTime(&ms, ea[d], eb[d]));
            if (ms > worst) worst = ms;
          }
          emit("multi_coll", f, bytes, i, worst);
        }
      }
    }
    // Finalize all comms of the clique together (one thread drives every rank), then destroy them.
    NCCL_OK(ncclGroupStart());
    for (int d = 0; d < ngpu; ++d) NCCL_OK(ncclCommFinalize(comms[d]));
    NCCL_OK(ncclGroupEnd());
    for (int d = 0; d < ngpu; ++d) {
      NCCL_OK(ncclCommDestroy(comms[d]));
      CUDA_OK(cudaSetDevice(d));
      cudaFree(a[d]);
      cudaFree(b[d]);
      cudaStreamDestroy(st[d]);
    }
  }
  std::fclose(g_csv);
  std::printf("nccl_check: done\n");
  return 0;
}
