// Reads the GNU build-id note of an ELF file from its program headers (PT_NOTE), without libelf:
// the sampler needs only this one fact about a mapped file, at attach time. Any thread.
#ifndef NATIVEPROF_SAMPLER_BUILD_ID_READER_H_
#define NATIVEPROF_SAMPLER_BUILD_ID_READER_H_

#include <cstdint>
#include <string>
#include <vector>

namespace nativeprof::sampler {

// The raw build-id bytes of the ELF file at `path` (up to 20), or empty when the file cannot be
// read, is not a 64-bit little-endian ELF, or has no NT_GNU_BUILD_ID note.
std::vector<uint8_t> ReadElfBuildId(const std::string& path);

}  // namespace nativeprof::sampler

#endif  // NATIVEPROF_SAMPLER_BUILD_ID_READER_H_
