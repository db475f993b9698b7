// pprof writer: encodes a symbolize::Profile as a gzip-compressed profile.proto message, the
// format of `go tool pprof`, Pyroscope, Parca and Google Cloud Profiler. Hand-written wire
// encoding (output/protobuf_encoder.h), no libprotobuf. Pure; any thread.
#ifndef NATIVEPROF_OUTPUT_PPROF_WRITER_H_
#define NATIVEPROF_OUTPUT_PPROF_WRITER_H_

#include <string>

#include "symbolize/profile.h"

namespace nativeprof::output {

// Returns the uncompressed serialized profile.proto message. One Sample per ProfileStack, with
// values [samples/count] plus [cpu/nanoseconds] (or [<event>/<weight_unit>]) when the weights are
// real periods; labels "thread" (string), "pid" and "tid" (numbers) when known, then the stack's
// own string labels. A kUser/kKernel/kJit frame followed (root-first) by kInlined frames becomes
// one Location with several Lines, innermost first. Locations carry a Mapping per module (file
// name, build id) and the frame's file offset as address, with memory_start 0 and file_offset 0
// so pprof's address arithmetic yields the file offset. Deterministic byte for byte.
std::string EncodePprof(const symbolize::Profile& profile);

// EncodePprof, gzip-compressed: the bytes of a .pb.gz file.
std::string RenderPprof(const symbolize::Profile& profile);

}  // namespace nativeprof::output

#endif  // NATIVEPROF_OUTPUT_PPROF_WRITER_H_
