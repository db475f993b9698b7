// The C API of libnativeprof (include/nativeprof/nativeprof.h) over SelfProfiler: converts
// options, maps absl::Status to np_status plus a thread-local message, serializes calls on one
// profiler with a mutex and keeps every exception inside the library.
#include <cstddef>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "nativeprof/nativeprof.h"
#include "sampler/event_spec.h"
#include "library/self_profiler.h"

struct np_profiler {
  std::mutex mu;
  std::unique_ptr<nativeprof::library::SelfProfiler> impl;
  std::vector<std::string> counter_names;  // np_counter::name points into these
};

namespace {

thread_local std::string t_last_error;

np_status CodeOf(const absl::Status& st) {
  switch (st.code()) {
    case absl::StatusCode::kOk:
      return NP_OK;
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kOutOfRange:
      return NP_ERROR_INVALID_ARGUMENT;
    case absl::StatusCode::kPermissionDenied:
      return NP_ERROR_PERMISSION_DENIED;
    case absl::StatusCode::kNotFound:
    case absl::StatusCode::kUnimplemented:
      return NP_ERROR_NOT_SUPPORTED;
    case absl::StatusCode::kFailedPrecondition:
      return NP_ERROR_BAD_STATE;
    case absl::StatusCode::kResourceExhausted:
      return NP_ERROR_RESOURCE_EXHAUSTED;
    default:
      return NP_ERROR_INTERNAL;
  }
}

np_status Fail(np_status code, std::string message) {
  t_last_error = std::move(message);
  return code;
}

np_status FromStatus(const absl::Status& st) {
  if (st.ok()) return NP_OK;
  return Fail(CodeOf(st), std::string(st.message()));
}

// Runs `body` (returning np_status) with exceptions turned into NP_ERROR_INTERNAL.
template <typename F>
np_status Guard(F&& body) {
  try {
    return body();
  } catch (const std::bad_alloc&) {
    return Fail(NP_ERROR_RESOURCE_EXHAUSTED, "out of memory");
  } catch (const std::exception& e) {
    return Fail(NP_ERROR_INTERNAL, e.what());
  } catch (...) {
    return Fail(NP_ERROR_INTERNAL, "unknown exception");
  }
}

np_status CheckProfiler(np_profiler* p) {
  if (p == nullptr) return Fail(NP_ERROR_INVALID_ARGUMENT, "profiler is NULL");
  return NP_OK;
}

// The np_profiler_write* calls: `write` is one of SelfProfiler's writers.
np_status WriteFile(np_profiler* p, const char* path,
                    absl::Status (nativeprof::library::SelfProfiler::*write)(const std::string&)) {
  if (np_status s = CheckProfiler(p); s != NP_OK) return s;
  if (path == nullptr || *path == '\0') return Fail(NP_ERROR_INVALID_ARGUMENT, "path is empty");
  return Guard([&]() -> np_status {
    std::lock_guard<std::mutex> lock(p->mu);
    absl::Status st = (p->impl.get()->*write)(path);
    if (st.ok()) return NP_OK;
    // Anything but a state error is the file's fault here.
    if (absl::IsFailedPrecondition(st)) return FromStatus(st);
    return Fail(NP_ERROR_IO, std::string(st.message()));
  });
}

}  // namespace

extern "C" {

void np_options_init(np_options* options) {
  if (options == nullptr) return;
  std::memset(options, 0, sizeof(*options));
  options->struct_size = sizeof(np_options);
  options->sample = 1;
  options->count = 1;
  options->frequency_hz = 999;
  options->include_kernel = 1;
}

np_status np_profiler_create(const np_options* options, np_profiler** out) {
  return Guard([&]() -> np_status {
    if (out == nullptr) return Fail(NP_ERROR_INVALID_ARGUMENT, "out is NULL");
    *out = nullptr;
    np_options o;
    np_options_init(&o);
    if (options != nullptr) {
      if (options->struct_size < offsetof(np_options, counter_events) + sizeof(const char*) ||
          options->struct_size > sizeof(np_options)) {
        return Fail(NP_ERROR_INVALID_ARGUMENT,
                    "np_options.struct_size is wrong; initialize options with np_options_init");
      }
      std::memcpy(&o, options, options->struct_size);
    }
    nativeprof::library::SelfProfilerOptions so;
    so.sample = o.sample != 0;
    so.count = o.count != 0;
    if (o.event != nullptr) {
      absl::StatusOr<nativeprof::sampler::EventSpec> e =
          nativeprof::sampler::ParseEventSpec(o.event);
      if (!e.ok()) return FromStatus(e.status());
      so.event = *std::move(e);
    }
    so.frequency_hz = o.frequency_hz;
    so.include_kernel = o.include_kernel != 0;
    so.call_graph = o.dwarf ? nativeprof::unwind::CallGraphMode::kDwarf
                            : nativeprof::unwind::CallGraphMode::kFramePointer;
    so.ring_pages = o.ring_pages;
    if (o.ring_pages != 0 && (o.ring_pages & (o.ring_pages - 1)) != 0) {
      return Fail(NP_ERROR_INVALID_ARGUMENT,
                  absl::StrCat("ring_pages ", o.ring_pages, " is not a power of two"));
    }
    if (o.counter_events != nullptr) {
      absl::StatusOr<std::vector<nativeprof::sampler::EventSpec>> events =
          nativeprof::sampler::ParseEventList(o.counter_events);
      if (!events.ok()) return FromStatus(events.status());
      so.counter_events = *std::move(events);
    }
    absl::StatusOr<std::unique_ptr<nativeprof::library::SelfProfiler>> impl =
        nativeprof::library::SelfProfiler::Create(so);
    if (!impl.ok()) return FromStatus(impl.status());
    auto p = std::make_unique<np_profiler>();
    p->impl = *std::move(impl);
    *out = p.release();
    return NP_OK;
  });
}

np_status np_profiler_start(np_profiler* p) {
  if (np_status s = CheckProfiler(p); s != NP_OK) return s;
  return Guard([&] {
    std::lock_guard<std::mutex> lock(p->mu);
    return FromStatus(p->impl->Start());
  });
}

np_status np_profiler_stop(np_profiler* p) {
  if (np_status s = CheckProfiler(p); s != NP_OK) return s;
  return Guard([&] {
    std::lock_guard<std::mutex> lock(p->mu);
    return FromStatus(p->impl->Stop());
  });
}

np_status np_profiler_reset(np_profiler* p) {
  if (np_status s = CheckProfiler(p); s != NP_OK) return s;
  return Guard([&] {
    std::lock_guard<std::mutex> lock(p->mu);
    return FromStatus(p->impl->Reset());
  });
}

np_status np_profiler_write_folded(np_profiler* p, const char* path) {
  return WriteFile(p, path, &nativeprof::library::SelfProfiler::WriteFolded);
}

np_status np_profiler_write(np_profiler* p, const char* path) {
  return WriteFile(p, path, &nativeprof::library::SelfProfiler::Write);
}

np_status np_profiler_write_counters(np_profiler* p, const char* path) {
  return WriteFile(p, path, &nativeprof::library::SelfProfiler::WriteCounters);
}

np_status np_profiler_counters(np_profiler* p, np_counter* out, size_t capacity, size_t* count) {
  if (np_status s = CheckProfiler(p); s != NP_OK) return s;
  if (count == nullptr) return Fail(NP_ERROR_INVALID_ARGUMENT, "count is NULL");
  if (out == nullptr && capacity > 0) return Fail(NP_ERROR_INVALID_ARGUMENT, "out is NULL");
  return Guard([&]() -> np_status {
    std::lock_guard<std::mutex> lock(p->mu);
    absl::StatusOr<std::vector<nativeprof::sampler::CounterValue>> values = p->impl->Counters();
    if (!values.ok()) return FromStatus(values.status());
    if (p->counter_names.empty()) {
      for (const auto& v : *values) p->counter_names.push_back(v.event.name);
    }
    *count = values->size();
    for (size_t i = 0; i < values->size() && i < capacity; ++i) {
      const auto& v = (*values)[i];
      out[i].name = p->counter_names[i].c_str();
      out[i].supported = v.supported && v.counted ? 1 : 0;
      out[i].value = v.scaled;
    }
    return NP_OK;
  });
}

np_status np_profiler_samples(np_profiler* p, uint64_t* samples, uint64_t* lost) {
  if (np_status s = CheckProfiler(p); s != NP_OK) return s;
  return Guard([&]() -> np_status {
    std::lock_guard<std::mutex> lock(p->mu);
    if (p->impl->running()) {
      return Fail(NP_ERROR_BAD_STATE, "stop the profiler before reading its sample count");
    }
    if (samples != nullptr) *samples = p->impl->samples();
    if (lost != nullptr) *lost = p->impl->lost();
    return NP_OK;
  });
}

void np_profiler_destroy(np_profiler* p) {
  if (p == nullptr) return;
  try {
    delete p;  // ~SelfProfiler stops a running profiler
  } catch (...) {
  }
}

const char* np_last_error(void) { return t_last_error.c_str(); }

const char* np_status_name(np_status status) {
  switch (status) {
    case NP_OK: return "NP_OK";
    case NP_ERROR_INVALID_ARGUMENT: return "NP_ERROR_INVALID_ARGUMENT";
    case NP_ERROR_PERMISSION_DENIED: return "NP_ERROR_PERMISSION_DENIED";
    case NP_ERROR_NOT_SUPPORTED: return "NP_ERROR_NOT_SUPPORTED";
    case NP_ERROR_BAD_STATE: return "NP_ERROR_BAD_STATE";
    case NP_ERROR_IO: return "NP_ERROR_IO";
    case NP_ERROR_RESOURCE_EXHAUSTED: return "NP_ERROR_RESOURCE_EXHAUSTED";
    case NP_ERROR_INTERNAL: return "NP_ERROR_INTERNAL";
  }
  return "NP_ERROR_UNKNOWN";
}

}  // extern "C"
