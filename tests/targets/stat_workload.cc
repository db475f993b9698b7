// Workloads with known counter values for the `nativeprof stat` tests:
//   stat_workload spin MS              burn MS milliseconds of CPU time on one thread
//   stat_workload pages N              touch N fresh anonymous pages (about N page faults)
//   stat_workload threads N UNITS      N named threads ("stat-w1".."stat-wN"); thread i burns
//                                      i * UNITS iterations, so their task-clocks rise with i
//   stat_workload fork MS              a child process burns MS ms, then the parent does too
//   stat_workload exit CODE            exit with CODE
//   stat_workload signal SIG           kill itself with SIG
//   stat_workload sleep MS             sleep (off-CPU) for MS milliseconds
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

volatile unsigned long g_sink = 0;

double ThreadCpuMs() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

__attribute__((noinline)) void BurnIterations(unsigned long n) {
  unsigned long x = 1;
  for (unsigned long i = 0; i < n; ++i) x = x * 6364136223846793005UL + 1442695040888963407UL;
  g_sink += x;
}

__attribute__((noinline)) void SpinMs(double ms) {
  const double end = ThreadCpuMs() + ms;
  while (ThreadCpuMs() < end) BurnIterations(20000);
}

void TouchPages(long n) {
  const long page = sysconf(_SC_PAGESIZE);
  auto* p = static_cast<volatile char*>(
      mmap(nullptr, n * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  if (p == MAP_FAILED) {
    perror("mmap");
    exit(1);
  }
  for (long i = 0; i < n; ++i) p[i * page] = 1;
}

void Threads(int n, unsigned long units) {
  std::vector<std::thread> threads;
  for (int i = 1; i <= n; ++i) {
    threads.emplace_back([i, units] {
      std::string name = "stat-w" + std::to_string(i);
      pthread_setname_np(pthread_self(), name.c_str());
      BurnIterations(units * i);
    });
  }
  for (std::thread& t : threads) t.join();
}

// Rounds of `n` equal threads that start and exit together: many tasks begin and end on both
// CPUs at the same moment, which is when per-thread side-band records are most at risk.
void Churn(int n, long rounds, unsigned long units) {
  for (long r = 0; r < rounds; ++r) {
    std::vector<std::thread> threads;
    for (int i = 1; i <= n; ++i) {
      threads.emplace_back([i, units] {
        std::string name = "stat-c" + std::to_string(i);
        pthread_setname_np(pthread_self(), name.c_str());
        BurnIterations(units);
      });
    }
    for (std::thread& t : threads) t.join();
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: stat_workload spin|pages|threads|churn|fork|exit|signal|sleep ARG...\n");
    return 2;
  }
  const std::string mode = argv[1];
  const long arg = atol(argv[2]);
  if (mode == "spin") {
    SpinMs(static_cast<double>(arg));
  } else if (mode == "pages") {
    TouchPages(arg);
  } else if (mode == "threads") {
    Threads(static_cast<int>(arg), argc > 3 ? strtoul(argv[3], nullptr, 10) : 10000000UL);
  } else if (mode == "churn") {
    Churn(static_cast<int>(arg), argc > 3 ? atol(argv[3]) : 10,
          argc > 4 ? strtoul(argv[4], nullptr, 10) : 100000UL);
  } else if (mode == "fork") {
    pid_t child = fork();
    if (child == 0) {
      SpinMs(static_cast<double>(arg));
      _exit(0);
    }
    SpinMs(static_cast<double>(arg));
    int status = 0;
    waitpid(child, &status, 0);
  } else if (mode == "exit") {
    return static_cast<int>(arg);
  } else if (mode == "signal") {
    signal(static_cast<int>(arg), SIG_DFL);
    raise(static_cast<int>(arg));
  } else if (mode == "sleep") {
    usleep(static_cast<useconds_t>(arg) * 1000);
  } else {
    fprintf(stderr, "stat_workload: unknown mode '%s'\n", mode.c_str());
    return 2;
  }
  return 0;
}
