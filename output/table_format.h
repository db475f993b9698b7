// How `report`'s tables are written: aligned text for the terminal, or GitHub-flavoured markdown
// (`report --format markdown`, names as code spans).
#ifndef NATIVEPROF_OUTPUT_TABLE_FORMAT_H_
#define NATIVEPROF_OUTPUT_TABLE_FORMAT_H_

#include <cstdint>

namespace nativeprof::output {

enum class TableFormat : uint8_t { kText, kMarkdown };

}  // namespace nativeprof::output

#endif  // NATIVEPROF_OUTPUT_TABLE_FORMAT_H_
