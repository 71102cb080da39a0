// A named thread that runs posted jobs in order: the emulator's launcher,
// CUDA-callback, progress and socket-helper threads.
//
// Contract: post() may be called from any thread and never blocks on the job
// itself (only on the queue mutex, which is never held while a job runs, so
// jobs -- and the plugin calls they make -- run concurrently with the
// posting thread). drain() blocks until every job posted before it has run.
// The destructor drains and joins. An optional idle hook runs on the worker
// thread before it sleeps and after it wakes (ProxyCtrl sleep/wakeup events).
#pragma once

#include <pthread.h>

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace ni::emu {

class Worker {
 public:
  using Job = std::function<void()>;
  using IdleHook = std::function<void(bool going_to_sleep)>;

  explicit Worker(std::string name, IdleHook idle = {}) : name_(std::move(name)), idle_(std::move(idle)) {
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
  const std::string& name() const { return name_; }

 private:
  void loop() {
    pthread_setname_np(pthread_self(), name_.substr(0, 15).c_str());
    std::unique_lock<std::mutex> g(mu_);
    for (;;) {
      if (q_.empty()) {
        if (stop_) return;
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
      g.unlock();
      j();  // plugin calls happen here, outside the queue lock
      g.lock();
      ++done_;
      done_cv_.notify_all();
    }
  }

  std::string name_;
  IdleHook idle_;
  std::mutex mu_;  // guards q_, stop_, posted_, done_
  std::condition_variable cv_, done_cv_;
  std::deque<Job> q_;
  bool stop_ = false;
  uint64_t posted_ = 0, done_ = 0;
  std::thread th_;
};

}  // namespace ni::emu
