// A small multi-threaded server for the attach tests: two worker threads burn CPU forever in
// server_worker_alpha / server_worker_beta, and the main thread answers TCP requests on
// 127.0.0.1 (an ephemeral port, printed as "PORT <n>" on stdout): "ping" -> "pong", "rate" -> the
// workers' iterations per second over the last 200 ms, so a test can check that the server still
// serves, at full speed, after nativeprof detached.
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fp_common.h"

static atomic_ulong g_iterations;

__attribute__((noinline)) void server_worker_alpha(void) {
  for (;;) {
    NP_SPIN(20000);
    atomic_fetch_add_explicit(&g_iterations, 1, memory_order_relaxed);
  }
}
__attribute__((noinline)) void server_worker_beta(void) {
  for (;;) {
    NP_SPIN(20000);
    atomic_fetch_add_explicit(&g_iterations, 1, memory_order_relaxed);
  }
}

static void* Alpha(void* arg) {
  pthread_setname_np(pthread_self(), "worker-alpha");
  server_worker_alpha();
  return arg;
}
static void* Beta(void* arg) {
  pthread_setname_np(pthread_self(), "worker-beta");
  server_worker_beta();
  return arg;
}

int main(void) {
  pthread_t a, b;
  pthread_create(&a, NULL, Alpha, NULL);
  pthread_create(&b, NULL, Beta, NULL);
  int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_in addr = {0};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (bind(s, (struct sockaddr*)&addr, sizeof(addr)) != 0 || listen(s, 16) != 0) {
    perror("bind/listen");
    return 1;
  }
  socklen_t len = sizeof(addr);
  getsockname(s, (struct sockaddr*)&addr, &len);
  printf("PORT %d\n", ntohs(addr.sin_port));
  fflush(stdout);
  for (;;) {
    int c = accept4(s, NULL, NULL, SOCK_CLOEXEC);
    if (c < 0) continue;
    char buf[64] = {0};
    ssize_t n = read(c, buf, sizeof(buf) - 1);
    char reply[64] = "error\n";
    if (n > 0 && strncmp(buf, "ping", 4) == 0) {
      strcpy(reply, "pong\n");
    } else if (n > 0 && strncmp(buf, "rate", 4) == 0) {
      unsigned long before = atomic_load(&g_iterations);
      usleep(200000);
      unsigned long after = atomic_load(&g_iterations);
      snprintf(reply, sizeof(reply), "%lu\n", (after - before) * 5);
    }
    ssize_t ignored = write(c, reply, strlen(reply));
    (void)ignored;
    close(c);
  }
}
