/* libnativeprof C API: profile the calling process itself from inside it.
 *
 * A profiler samples every thread of the process (threads created later included) between
 * np_profiler_start() and np_profiler_stop(), from a reader thread of its own that is never
 * sampled. It installs no signal handlers and runs no code on the host's threads while sampling.
 * Samples and counters accumulate across start/stop pairs until np_profiler_reset().
 *
 * ABI: plain C, no exceptions cross it, every call returns an np_status. Calls on one profiler
 * are serialized internally, so any thread may call them. np_last_error() is per thread. */
#ifndef NATIVEPROF_INCLUDE_NATIVEPROF_NATIVEPROF_H_
#define NATIVEPROF_INCLUDE_NATIVEPROF_NATIVEPROF_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define NP_API __attribute__((visibility("default")))

#define NATIVEPROF_VERSION_MAJOR 0
#define NATIVEPROF_VERSION_MINOR 1
#define NATIVEPROF_VERSION_PATCH 0

typedef enum np_status {
  NP_OK = 0,
  NP_ERROR_INVALID_ARGUMENT = 1, /* bad option, NULL pointer, unknown event name */
  NP_ERROR_PERMISSION_DENIED = 2, /* perf_event_paranoid forbids it; see np_last_error() */
  NP_ERROR_NOT_SUPPORTED = 3,     /* the event does not exist on this machine (a hardware
                                   * sampling event falls back to cpu-clock instead, as perf
                                   * does, and says so once on stderr) */
  NP_ERROR_BAD_STATE = 4,         /* e.g. start while running, write while running */
  NP_ERROR_IO = 5,                /* the output file could not be written */
  NP_ERROR_RESOURCE_EXHAUSTED = 6, /* out of file descriptors or locked memory */
  NP_ERROR_INTERNAL = 7
} np_status;

typedef struct np_profiler np_profiler;

/* Options for np_profiler_create. Always initialize with np_options_init() first, then change
 * fields: struct_size lets later versions add fields without breaking older callers. */
typedef struct np_options {
  uint32_t struct_size;       /* sizeof(np_options); set by np_options_init */
  int sample;                 /* 1: collect stacks (default 1) */
  int count;                  /* 1: count counter_events (default 1) */
  const char* event;          /* sampling event, perf name; NULL: "cpu-clock" */
  uint32_t frequency_hz;      /* samples per second per thread (default 999) */
  int include_kernel;         /* 1: kernel stacks too, when permitted (default 1) */
  int dwarf;                  /* 1: DWARF unwinding (no frame pointers needed, costlier);
                                 0: frame pointers (default) */
  uint32_t ring_pages;        /* data pages per CPU ring, power of two; 0: automatic */
  const char* counter_events; /* comma-separated perf names; NULL: task-clock, page-faults,
                                 context-switches, cpu-migrations, cycles, instructions,
                                 cache-references, cache-misses */
} np_options;

/* One counter total. `name` stays valid until the profiler is destroyed. `supported` is 0 when
 * the kernel cannot count the event here (then `value` is meaningless, never report it as 0). */
typedef struct np_counter {
  const char* name;
  double value;       /* scaled count; task-clock in nanoseconds */
  int supported;
} np_counter;

NP_API void np_options_init(np_options* options);

/* Creates a profiler (nothing is opened yet). options may be NULL for the defaults. */
NP_API np_status np_profiler_create(const np_options* options, np_profiler** out);

/* Starts sampling/counting every thread of the process. NP_ERROR_BAD_STATE if this profiler or
 * another one of the process is running (one at a time: each would sample the other). */
NP_API np_status np_profiler_start(np_profiler* profiler);

/* Stops, drains the last samples and closes every perf fd. NP_ERROR_BAD_STATE if not running. */
NP_API np_status np_profiler_stop(np_profiler* profiler);

/* Drops the samples and counter totals collected so far. NP_ERROR_BAD_STATE while running. */
NP_API np_status np_profiler_reset(np_profiler* profiler);

/* Writes the samples since the last reset as folded stacks ("thread;main;f;g COUNT" lines,
 * flamegraph.pl / inferno / speedscope input), atomically. NP_ERROR_BAD_STATE while running. */
NP_API np_status np_profiler_write_folded(np_profiler* profiler, const char* path);

/* Writes the samples since the last reset, atomically, in the format the file name selects (as
 * `nativeprof record -o` does): ".svg" flame graph, ".pb.gz" / ".pprof" / ".pb" pprof,
 * ".speedscope.json" speedscope, anything else (".folded") folded stacks. NP_ERROR_BAD_STATE
 * while running or when sampling is off; NP_ERROR_IO when the file cannot be written. */
NP_API np_status np_profiler_write(np_profiler* profiler, const char* path);

/* Writes the counter totals since the last reset as the text table `nativeprof record` prints
 * (one row per event with derived metrics; "<not supported>" for an event this machine cannot
 * count, never 0), atomically. NP_ERROR_BAD_STATE while running or when counting is off;
 * NP_ERROR_IO when the file cannot be written. */
NP_API np_status np_profiler_write_counters(np_profiler* profiler, const char* path);

/* Copies up to `capacity` counter totals into `out` and sets *count to the number of counters
 * (call with capacity 0 to ask for the count). NP_ERROR_BAD_STATE while running or when
 * counting is off. */
NP_API np_status np_profiler_counters(np_profiler* profiler, np_counter* out, size_t capacity,
                                      size_t* count);

/* Samples collected since the last reset, and samples the kernel dropped (ring full). */
NP_API np_status np_profiler_samples(np_profiler* profiler, uint64_t* samples, uint64_t* lost);

/* Stops if running, then frees everything. NULL is ignored. */
NP_API void np_profiler_destroy(np_profiler* profiler);

/* The message of the last failed call on this thread ("" if none). Valid until the next call
 * on this thread. */
NP_API const char* np_last_error(void);

/* "NP_OK", "NP_ERROR_BAD_STATE", ... */
NP_API const char* np_status_name(np_status status);

#ifdef __cplusplus
}  /* extern "C" */
#endif

#endif /* NATIVEPROF_INCLUDE_NATIVEPROF_NATIVEPROF_H_ */
