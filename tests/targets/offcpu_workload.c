// Off-CPU ground truth (issue 12). Each mode prints, at exit, what its threads measured
// themselves, so a test can compare nativeprof's off-CPU profile with it.
//
//   offcpu_workload block ROUNDS MS
//     three threads block ROUNDS times for about MS ms each, each in its own function:
//     block_in_nanosleep (nanosleep), block_in_pipe_read (read of a pipe a feeder thread writes
//     every MS ms) and block_in_mutex_lock (a mutex a holder thread keeps for MS ms at a time).
//     Prints "blocked FUNCTION NS" per function: the time spent inside the blocking call.
//   offcpu_workload runqueue THREADS MS
//     THREADS threads spin for MS ms in spin_on_one_cpu, all pinned to CPU 0. Prints
//     "runqueue TID NS" per thread: its run-queue wait (/proc/thread-self/schedstat, field 2)
//     while spinning, and "lifetime TID NS".
//   offcpu_workload pingpong SECONDS [WORK_US]
//     two threads hand a byte back and forth over two pipes, each computing WORK_US us (default
//     0: as fast as they can, the worst case of switches per second) before handing it back.
//     Each hand-off is a voluntary switch. Prints "switches N" (hand-offs).
//   offcpu_workload churn THREADS US
//     THREADS threads, one after another, each spinning US us in churn_spin and exiting: most
//     run for less than a sampling period and get no CPU sample.
//   offcpu_workload threadexec MS PROGRAM ARGS...
//     a thread other than the main one sleeps MS ms, then execs PROGRAM while main sleeps.
//   offcpu_workload spawn MS
//     spawn_with_vfork: a vfork child sleeps MS ms before it execs /bin/true, the parent waiting
//     in vfork all along; then spawn_with_posix_spawn starts /bin/true 50 times (the parent
//     waits in clone3 until each child execs).
//   With OFFCPU_START_DELAY_MS set, any mode prints "ready" and sleeps that long first, so a
//   profiler can attach before its threads start (attach tests); with OFFCPU_START_DELAY_IN_MAIN
//   also set, main sleeps in nanosleep itself rather than in sleep_ms.
#define _GNU_SOURCE
#include <pthread.h>
#include <spawn.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

static int g_rounds, g_ms;
static uint64_t g_sleep_ns, g_read_ns, g_lock_ns;
static int g_pipe[2];
static pthread_mutex_t g_mutex = PTHREAD_MUTEX_INITIALIZER;
static volatile int g_holder_started, g_done;

__attribute__((noinline)) void block_in_nanosleep(int ms) { sleep_ms(ms); }

__attribute__((noinline)) void block_in_pipe_read(void) {
  char c;
  if (read(g_pipe[0], &c, 1) != 1) abort();
}

__attribute__((noinline)) void block_in_mutex_lock(void) { pthread_mutex_lock(&g_mutex); }

static void* sleeper(void* arg) {
  (void)arg;
  pthread_setname_np(pthread_self(), "sleeper");
  for (int i = 0; i < g_rounds; ++i) {
    uint64_t t = now_ns();
    block_in_nanosleep(g_ms);
    g_sleep_ns += now_ns() - t;
  }
  return NULL;
}

static void* feeder(void* arg) {
  (void)arg;
  pthread_setname_np(pthread_self(), "feeder");
  for (int i = 0; i < g_rounds; ++i) {
    sleep_ms(g_ms);
    if (write(g_pipe[1], "x", 1) != 1) abort();
  }
  return NULL;
}

static void* reader(void* arg) {
  (void)arg;
  pthread_setname_np(pthread_self(), "reader");
  for (int i = 0; i < g_rounds; ++i) {
    uint64_t t = now_ns();
    block_in_pipe_read();
    g_read_ns += now_ns() - t;
  }
  return NULL;
}

static void* holder(void* arg) {
  (void)arg;
  pthread_setname_np(pthread_self(), "holder");
  for (int i = 0; i < g_rounds; ++i) {
    pthread_mutex_lock(&g_mutex);
    g_holder_started = 1;
    sleep_ms(g_ms);
    pthread_mutex_unlock(&g_mutex);
    // Let the locker take it; it then releases at once, and the holder takes it again.
    sleep_ms(1);
  }
  return NULL;
}

static void* locker(void* arg) {
  (void)arg;
  pthread_setname_np(pthread_self(), "locker");
  while (!g_holder_started) sleep_ms(1);
  for (int i = 0; i < g_rounds; ++i) {
    uint64_t t = now_ns();
    block_in_mutex_lock();
    g_lock_ns += now_ns() - t;
    pthread_mutex_unlock(&g_mutex);
    // Back in line after the holder took the mutex again (its pause is 1 ms), so each lock
    // waits for most of a hold.
    sleep_ms(5);
  }
  return NULL;
}

static int run_block(void) {
  if (pipe(g_pipe) != 0) return 1;
  pthread_t t[5];
  void* (*fns[5])(void*) = {sleeper, feeder, reader, holder, locker};
  for (int i = 0; i < 5; ++i) pthread_create(&t[i], NULL, fns[i], NULL);
  for (int i = 0; i < 5; ++i) pthread_join(t[i], NULL);
  printf("blocked block_in_nanosleep %llu\n", (unsigned long long)g_sleep_ns);
  printf("blocked block_in_pipe_read %llu\n", (unsigned long long)g_read_ns);
  printf("blocked block_in_mutex_lock %llu\n", (unsigned long long)g_lock_ns);
  return 0;
}

static uint64_t run_queue_ns(void) {
  FILE* f = fopen("/proc/thread-self/schedstat", "r");
  unsigned long long on = 0, wait = 0;
  if (f == NULL) return 0;
  if (fscanf(f, "%llu %llu", &on, &wait) != 2) wait = 0;
  fclose(f);
  return wait;
}

__attribute__((noinline)) uint64_t spin_on_one_cpu(uint64_t until) {
  uint64_t x = 1;
  while (now_ns() < until) {
    for (int i = 0; i < 10000; ++i) x = x * 6364136223846793005ull + 1442695040888963407ull;
  }
  return x;
}

struct spinner {
  pthread_t thread;
  pid_t tid;
  uint64_t wait_ns, lifetime_ns;
};

static void* spin(void* arg) {
  struct spinner* s = arg;
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(0, &one);
  sched_setaffinity(0, sizeof(one), &one);
  s->tid = gettid();
  uint64_t t0 = now_ns();
  uint64_t w0 = run_queue_ns();
  static volatile uint64_t sink;
  sink = spin_on_one_cpu(t0 + (uint64_t)g_ms * 1000000u);
  s->wait_ns = run_queue_ns() - w0;
  s->lifetime_ns = now_ns() - t0;
  return NULL;
}

static int run_runqueue(int threads) {
  struct spinner s[64];
  if (threads > 64) threads = 64;
  for (int i = 0; i < threads; ++i) pthread_create(&s[i].thread, NULL, spin, &s[i]);
  for (int i = 0; i < threads; ++i) pthread_join(s[i].thread, NULL);
  for (int i = 0; i < threads; ++i) {
    printf("runqueue %d %llu\n", (int)s[i].tid, (unsigned long long)s[i].wait_ns);
    printf("lifetime %d %llu\n", (int)s[i].tid, (unsigned long long)s[i].lifetime_ns);
  }
  return 0;
}

static int g_ping[2], g_pong[2];
static volatile uint64_t g_switches;
static uint64_t g_work_ns;

__attribute__((noinline)) void compute_between_handoffs(void) {
  if (g_work_ns == 0) return;
  const uint64_t until = now_ns() + g_work_ns;
  while (now_ns() < until) {
  }
}

static void* ponger(void* arg) {
  (void)arg;
  pthread_setname_np(pthread_self(), "ponger");
  char c;
  while (read(g_ping[0], &c, 1) == 1) {
    if (c == 'q') break;
    compute_between_handoffs();
    if (write(g_pong[1], &c, 1) != 1) break;
  }
  return NULL;
}

__attribute__((noinline)) void ping_pong(uint64_t until) {
  char c = 'x';
  while (now_ns() < until) {
    compute_between_handoffs();
    if (write(g_ping[1], &c, 1) != 1 || read(g_pong[0], &c, 1) != 1) abort();
    g_switches += 2;
  }
}

static int run_pingpong(int seconds) {
  if (pipe(g_ping) != 0 || pipe(g_pong) != 0) return 1;
  pthread_t t;
  pthread_create(&t, NULL, ponger, NULL);
  ping_pong(now_ns() + (uint64_t)seconds * 1000000000u);
  if (write(g_ping[1], "q", 1) != 1) return 1;
  pthread_join(t, NULL);
  printf("switches %llu\n", (unsigned long long)g_switches);
  return 0;
}

static int g_churn_us;

__attribute__((noinline)) static void* churn_spin(void* arg) {
  (void)arg;
  const uint64_t end = now_ns() + (uint64_t)g_churn_us * 1000u;
  while (now_ns() < end) {
  }
  return NULL;
}

static int run_churn(int threads) {
  for (int i = 0; i < threads; ++i) {
    pthread_t t;
    if (pthread_create(&t, NULL, churn_spin, NULL) != 0) return 1;
    pthread_join(t, NULL);
  }
  return 0;
}

static char** g_exec_argv;

static void* exec_from_thread(void* arg) {
  (void)arg;
  sleep_ms(g_ms);
  execv(g_exec_argv[0], g_exec_argv);
  perror("execv");
  _exit(127);
}

static int run_threadexec(void) {
  pthread_t t;
  if (pthread_create(&t, NULL, exec_from_thread, NULL) != 0) return 1;
  sleep_ms(60000);  // ended by the exec
  return 1;
}

extern char** environ;

__attribute__((noinline)) static void spawn_with_vfork(int ms) {
  const pid_t pid = vfork();
  if (pid == 0) {
    sleep_ms(ms);
    execl("/bin/true", "true", (char*)NULL);
    _exit(127);
  }
  waitpid(pid, NULL, 0);
}

__attribute__((noinline)) static void spawn_with_posix_spawn(void) {
  char* child_argv[] = {"true", NULL};
  pid_t pid;
  if (posix_spawn(&pid, "/bin/true", NULL, NULL, child_argv, environ) == 0) {
    waitpid(pid, NULL, 0);
  }
}

static int run_spawn(int ms) {
  spawn_with_vfork(ms);
  for (int i = 0; i < 50; ++i) spawn_with_posix_spawn();
  return 0;
}

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: offcpu_workload block ROUNDS MS | runqueue THREADS MS | pingpong S\n");
    return 2;
  }
  setvbuf(stdout, NULL, _IOLBF, 0);
  const char* delay = getenv("OFFCPU_START_DELAY_MS");
  if (delay != NULL) {
    printf("ready\n");
    if (getenv("OFFCPU_START_DELAY_IN_MAIN") != NULL) {
      // In main itself: its frame record is the only one, and the caller's rbp it saved is not
      // a frame pointer (libc's start code keeps none), so no chain of records leads to it.
      const int ms = atoi(delay);
      struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
      while (nanosleep(&ts, &ts) != 0) {
      }
    } else {
      sleep_ms(atoi(delay));
    }
  }
  if (strcmp(argv[1], "block") == 0 && argc >= 4) {
    g_rounds = atoi(argv[2]);
    g_ms = atoi(argv[3]);
    return run_block();
  }
  if (strcmp(argv[1], "runqueue") == 0 && argc >= 4) {
    g_ms = atoi(argv[3]);
    return run_runqueue(atoi(argv[2]));
  }
  if (strcmp(argv[1], "pingpong") == 0) {
    if (argc >= 4) g_work_ns = (uint64_t)atoi(argv[3]) * 1000u;
    return run_pingpong(atoi(argv[2]));
  }
  if (strcmp(argv[1], "spawn") == 0 && argc >= 3) return run_spawn(atoi(argv[2]));
  if (strcmp(argv[1], "churn") == 0 && argc >= 4) {
    g_churn_us = atoi(argv[3]);
    return run_churn(atoi(argv[2]));
  }
  if (strcmp(argv[1], "threadexec") == 0 && argc >= 4) {
    g_ms = atoi(argv[2]);
    g_exec_argv = argv + 3;
    return run_threadexec();
  }
  fprintf(stderr, "unknown mode %s\n", argv[1]);
  return 2;
}
