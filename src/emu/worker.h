// A named thread that runs posted jobs in order: the emulator's launcher,
// CUDA-callback, progress and socket-helper threads.
//
// Contract: post() may be called from any thread and never blocks on the job
// itself (only on the queue mutex, which is never held while a job runs, so
// jobs -- and the plugin calls they make -- run concurrently with the
// posting thread). drain() blocks until every job posted before it has run.
// The destructor drains and joins. An optional idle hook runs on the worker
// thread before it sleeps and after it wakes (ProxyCtrl sleep/wakeup events).
//
// A polling worker (NCCL 2.31+'s profiler thread, profiler-abi §13.3) does not
// sleep on its condition variable as soon as its queue is empty: it polls,
// backing off 1, 2, 4, 8, 16 us and then 10 us between looks, and sleeps only
// after `idle_polls` looks found nothing. A job posted while it backs off waits
// for the next look, as a completion waits for NCCL's next poll of its
// counters; the first look after a job is 1 us again.
#pragma once

#include <pthread.h>

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <time.h>

namespace ni::emu {

class Worker {
 public:
  using Job = std::function<void()>;
  using IdleHook = std::function<void(bool going_to_sleep)>;
  struct Polling {
    int idle_polls = 0;                        // 0: not a polling worker
    std::function<void(uint32_t us)> sleep;    // default: nanosleep (tests record instead)
  };
  // The pause before the n-th look (0-based) since the last job.
  static uint32_t backoff_us(int n) { return n < 5 ? (1u << n) : 10u; }

  explicit Worker(std::string name, IdleHook idle = {}) : Worker(std::move(name), std::move(idle), Polling()) {}
  Worker(std::string name, IdleHook idle, Polling polling)
      : name_(std::move(name)), idle_(std::move(idle)), polling_(std::move(polling)) {
    th_ = std::thread([this] { loop(); });
  }
  ~Worker() {
    {
      std::lock_guard<std::mutex> g(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    th_.join();
  }
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  void post(Job j) {
    {
      std::lock_guard<std::mutex> g(mu_);
      q_.push_back(std::move(j));
      ++posted_;
    }
    cv_.notify_all();
  }
  void drain() {
    std::unique_lock<std::mutex> g(mu_);
    const uint64_t target = posted_;
    done_cv_.wait(g, [&] { return done_ >= target; });
  }
  std::thread::id id() const { return th_.get_id(); }
  // Looks that found the queue empty, and spells that ended on the condition variable.
  uint64_t empty_polls() {
    std::lock_guard<std::mutex> g(mu_);
    return empty_polls_;
  }
  uint64_t sleeps() {
    std::lock_guard<std::mutex> g(mu_);
    return sleeps_;
  }
  const std::string& name() const { return name_; }

 private:
  void loop() {
    pthread_setname_np(pthread_self(), name_.substr(0, 15).c_str());
    std::unique_lock<std::mutex> g(mu_);
    for (;;) {
      if (q_.empty()) {
        if (stop_) return;
        if (polls_ < polling_.idle_polls) {
          const uint32_t us = backoff_us(polls_++);
          ++empty_polls_;
          g.unlock();
          if (polling_.sleep) {
            polling_.sleep(us);
          } else {
            const timespec ts{0, static_cast<long>(us) * 1000};
            nanosleep(&ts, nullptr);
          }
          g.lock();
          continue;
        }
        ++sleeps_;
        if (idle_) {
          g.unlock();
          idle_(true);
          g.lock();
        }
        cv_.wait(g, [&] { return stop_ || !q_.empty(); });
        if (idle_) {
          g.unlock();
          idle_(false);
          g.lock();
        }
        continue;
      }
      Job j = std::move(q_.front());
      q_.pop_front();
      polls_ = 0;
      g.unlock();
      j();  // plugin calls happen here, outside the queue lock
      g.lock();
      ++done_;
      done_cv_.notify_all();
    }
  }

  std::string name_;
  IdleHook idle_;
  Polling polling_;
  std::mutex mu_;  // guards q_, stop_, posted_, done_, polls_, empty_polls_, sleeps_
  std::condition_variable cv_, done_cv_;
  std::deque<Job> q_;
  bool stop_ = false;
  uint64_t posted_ = 0, done_ = 0, empty_polls_ = 0, sleeps_ = 0;
  int polls_ = 0;
  std::thread th_;
};

}  // namespace ni::emu
