#include "symbolize/module_prefetcher.h"

#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>

#include <condition_variable>
#include <deque>
#include <mutex>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "base/file_util.h"
#include "base/scheduling.h"
#include "module/module_opener.h"
#include "module/module_path.h"

namespace nativeprof::symbolize {
namespace {

// Below the target's threads (nice 0) when they want every CPU, never starved outright.
constexpr int kPrefetchNice = 10;
constexpr int kCapSysNice = 23;  // linux/capability.h

// Whether this thread may lower its nice back to `nice` after raising it: RLIMIT_NICE allows
// it (setrlimit(2): the floor is 20 - rlim_cur), or CAP_SYS_NICE does (root).
bool MayLowerNiceTo(const SchedulerCalls& calls, int nice) {
  if (calls.nice_floor() <= nice) return true;
  absl::StatusOr<std::string> status = ReadSmallFile("/proc/thread-self/status");
  if (!status.ok()) return false;
  for (absl::string_view line : absl::StrSplit(*status, '\n')) {
    if (!absl::ConsumePrefix(&line, "CapEff:")) continue;
    uint64_t caps = 0;
    return absl::SimpleHexAtoi(absl::StripAsciiWhitespace(line), &caps) &&
           (caps >> kCapSysNice & 1) != 0;
  }
  return false;
}

// Gives thread `tid` the calling thread's policy (SCHED_FIFO when the drain thread was boosted)
// or nice. Best effort: refused, the thread keeps its own, which was then not lowered.
void GiveCallersScheduling(pid_t tid) {
  const SchedulerCalls calls = SchedulerCalls::Real();
  const int policy = calls.get_policy();
  sched_param param{};
  if (policy == SCHED_FIFO || policy == SCHED_RR) {
    if (::sched_getparam(0, &param) == 0) (void)::sched_setscheduler(tid, policy, &param);
    return;
  }
  const int nice = calls.get_nice();
  if (errno == 0) (void)::setpriority(PRIO_PROCESS, static_cast<id_t>(tid), nice);
}

}  // namespace

struct ModulePrefetcher::Shared {
  struct Job {
    sampler::ModuleId module = 0;
    sampler::ModuleInfo info;
    ScopedFd held_fd;
  };

  Shared(ModuleLoadOptions o, NamingOptions n) : options(std::move(o)), naming(n) {}

  const ModuleLoadOptions options;
  const NamingOptions naming;
  std::mutex mu;
  std::condition_variable wake;
  std::condition_variable idle;
  std::deque<Job> queue;
  std::deque<unwind::CollectedFrame> addresses;  // to prepare once `queue` is empty
  bool busy = false;  // the thread is loading a module or preparing an address
  pid_t tid = 0;      // the thread's, once it runs
  size_t added = 0;
  size_t addresses_added = 0;
  bool stopping = false;
  absl::flat_hash_map<sampler::ModuleId, LoadedModule> results;
  absl::flat_hash_map<std::string, std::unique_ptr<ModuleSymbols>> symbols_by_key;

  void Run();
  void Load(Job job);
  // The symbols `module` was loaded into, or null (not loaded, or unreadable). Under mu.
  ModuleSymbols* LoadedSymbols(sampler::ModuleId module);
};

void ModulePrefetcher::Shared::Run() {
  {
    std::lock_guard<std::mutex> lock(mu);
    tid = ::gettid();
  }
  // A tid's nice is its own (setpriority(2) on a tid). Lowered only where Stop() can raise it
  // back; else it runs at the nice it started with, the caller's, and waiting for it costs no
  // more than the caller doing its work.
  const SchedulerCalls calls = SchedulerCalls::Real();
  const int start_nice = calls.get_nice();
  if (errno == 0 && start_nice < kPrefetchNice && MayLowerNiceTo(calls, start_nice)) {
    (void)calls.set_nice(kPrefetchNice);
  }
  // Each address once: stacks share most of their frames.
  absl::flat_hash_set<unwind::CollectedFrame> prepared;
  for (;;) {
    std::optional<Job> job;
    unwind::CollectedFrame frame;
    ModuleSymbols* symbols = nullptr;
    {
      std::unique_lock<std::mutex> lock(mu);
      busy = false;
      idle.notify_all();
      wake.wait(lock, [this] { return stopping || !queue.empty() || !addresses.empty(); });
      if (stopping) return;
      busy = true;
      if (!queue.empty()) {
        job = std::move(queue.front());
        queue.pop_front();
      } else {
        frame = addresses.front();
        addresses.pop_front();
        if (prepared.insert(frame).second) symbols = LoadedSymbols(frame.module());
      }
    }
    if (job.has_value()) {
      Load(*std::move(job));
    } else if (symbols != nullptr) {
      // Only this thread touches loaded symbols until Stop() has joined it.
      symbols->PrepareNames(frame.file_offset(), naming);
    }
  }
}

void ModulePrefetcher::Shared::Load(Job job) {
  absl::StatusOr<std::unique_ptr<module::ElfImage>> file = module::OpenModuleImage(
      module::ModuleRequest{.info = &job.info, .held_fd = job.held_fd.get()});
  job.held_fd.Reset();
  LoadedModule loaded;
  loaded.status = file.status();
  std::unique_ptr<ModuleSymbols> symbols;
  if (file.ok()) {
    const std::string path = module::PathOnDisk(job.info.path);
    loaded.key = ModuleSymbols::KeyOf(**file, path);
    bool known;
    {
      std::lock_guard<std::mutex> lock(mu);
      known = symbols_by_key.contains(loaded.key);
    }
    // Only this thread adds keys, so one checked absent stays absent while it loads.
    if (!known) symbols = ModuleSymbols::Load(*std::move(file), path, options);
  }
  std::lock_guard<std::mutex> lock(mu);
  if (symbols != nullptr) symbols_by_key.emplace(loaded.key, std::move(symbols));
  results.emplace(job.module, std::move(loaded));
}

ModuleSymbols* ModulePrefetcher::Shared::LoadedSymbols(sampler::ModuleId module) {
  auto result = results.find(module);
  if (result == results.end() || !result->second.status.ok()) return nullptr;
  auto it = symbols_by_key.find(result->second.key);
  return it == symbols_by_key.end() ? nullptr : it->second.get();
}

ModulePrefetcher::ModulePrefetcher(ModuleLoadOptions options, NamingOptions naming)
    : shared_(std::make_unique<Shared>(std::move(options), naming)) {}

ModulePrefetcher::~ModulePrefetcher() { Stop(); }

void ModulePrefetcher::Add(sampler::ModuleId module, const sampler::ModuleInfo& info,
                           ScopedFd held_fd) {
  std::lock_guard<std::mutex> lock(shared_->mu);
  if (shared_->stopping || shared_->added >= kMaxModules) return;
  ++shared_->added;
  shared_->queue.push_back(Shared::Job{module, info, std::move(held_fd)});
  if (!thread_.joinable()) {
    thread_ = std::thread([shared = shared_.get()] { shared->Run(); });
  } else {
    shared_->wake.notify_one();
  }
}

void ModulePrefetcher::PrepareNames(absl::Span<const unwind::CollectedFrame> frames) {
  std::lock_guard<std::mutex> lock(shared_->mu);
  // Before the thread exists there is no module to prepare names in.
  if (shared_->stopping || !thread_.joinable()) return;
  const size_t before = shared_->addresses.size();
  for (const unwind::CollectedFrame& frame : frames) {
    if (shared_->addresses_added >= kMaxAddresses) break;
    if (!frame.in_module()) continue;
    ++shared_->addresses_added;
    shared_->addresses.push_back(frame);
  }
  if (shared_->addresses.size() != before) shared_->wake.notify_one();
}

void ModulePrefetcher::WaitUntilIdle() {
  std::unique_lock<std::mutex> lock(shared_->mu);
  shared_->idle.wait(lock, [this] {
    return shared_->stopping ||
           (shared_->queue.empty() && shared_->addresses.empty() && !shared_->busy);
  });
}

void ModulePrefetcher::Stop() {
  {
    std::lock_guard<std::mutex> lock(shared_->mu);
    if (shared_->stopping) return;
    shared_->stopping = true;
    shared_->queue.clear();
    shared_->addresses.clear();
    // Under the lock: a thread still busy cannot exit (and free its tid) until it is released.
    if (shared_->busy && shared_->tid != 0) GiveCallersScheduling(shared_->tid);
  }
  shared_->wake.notify_one();
  shared_->idle.notify_all();
  if (thread_.joinable()) thread_.join();
}

std::optional<LoadedModule> ModulePrefetcher::Take(sampler::ModuleId module) {
  std::lock_guard<std::mutex> lock(shared_->mu);
  auto it = shared_->results.find(module);
  if (it == shared_->results.end()) return std::nullopt;
  LoadedModule loaded = std::move(it->second);
  shared_->results.erase(it);
  return loaded;
}

std::unique_ptr<ModuleSymbols> ModulePrefetcher::TakeSymbols(const std::string& key) {
  std::lock_guard<std::mutex> lock(shared_->mu);
  auto it = shared_->symbols_by_key.find(key);
  if (it == shared_->symbols_by_key.end()) return nullptr;
  std::unique_ptr<ModuleSymbols> symbols = std::move(it->second);
  shared_->symbols_by_key.erase(it);
  return symbols;
}

}  // namespace nativeprof::symbolize
