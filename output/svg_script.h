// The CSS and JavaScript embedded in every flame graph SVG (hover details, click-to-zoom, reset,
// regex search with the matched share). Kept apart from svg_writer.cc so the C++ stays readable.
// Constant data; any thread.
#ifndef NATIVEPROF_OUTPUT_SVG_SCRIPT_H_
#define NATIVEPROF_OUTPUT_SVG_SCRIPT_H_

namespace nativeprof::output {

// CSS for the <style> element.
extern const char kFlameSvgStyle[];

// JavaScript for the <script> element, placed after the frames so they exist when it runs. It
// expects a global `npConfig` = {pad, width, fontSize, total, unit} declared just before it, a
// <g id="frames"> whose children are <g><title/><rect/><text/></g>, and the elements
// #details, #matched, #unzoom and #search (an XHTML <input> in a foreignObject). It exposes
// window.nativeprofFlame = {zoom(index), reset(), search(term), count} for scripting.
extern const char kFlameSvgScript[];

}  // namespace nativeprof::output

#endif  // NATIVEPROF_OUTPUT_SVG_SCRIPT_H_
