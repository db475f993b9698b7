#include "output/svg_script.h"

namespace nativeprof::output {

const char kFlameSvgStyle[] = R"css(
text { font-family: Verdana, sans-serif; font-size: 12px; fill: rgb(0,0,0); }
#frames text { pointer-events: none; }
#frames g:hover rect { stroke: rgb(0,0,0); stroke-width: 0.5; cursor: pointer; }
#frames g.parent rect { opacity: 0.5; }
.title { font-size: 17px; text-anchor: middle; }
.subtitle { fill: rgb(90,90,90); text-anchor: middle; }
.button { cursor: pointer; fill: rgb(0,0,160); }
.button.hidden { opacity: 0.15; cursor: default; }
#matched { text-anchor: end; }
)css";

// Frames keep their layout in arrays (X, W, Y in pixels as rendered, S samples, N names); zooming
// recomputes every frame from those, so repeated zooms never accumulate rounding.
const char kFlameSvgScript[] = R"js(
(function () {
  'use strict';
  var cfg = npConfig;
  var doc = document;
  var framesEl = doc.getElementById('frames');
  var details = doc.getElementById('details');
  var matchedEl = doc.getElementById('matched');
  var unzoomEl = doc.getElementById('unzoom');
  var searchEl = doc.getElementById('search');
  var groups = [], rects = [], texts = [], X = [], W = [], Y = [], S = [], N = [], F = [];
  var titleRe = /^([\s\S]*) \(([\d,]+) (?:samples?|events?|us), /;
  var kids = framesEl.children;
  for (var i = 0; i < kids.length; i++) {
    var g = kids[i];
    var t = g.firstElementChild, r = t.nextElementSibling, tx = r.nextElementSibling;
    var m = titleRe.exec(t.textContent);
    g._np = i;
    groups.push(g); rects.push(r); texts.push(tx);
    X.push(+r.getAttribute('x')); W.push(+r.getAttribute('width')); Y.push(+r.getAttribute('y'));
    N.push(m ? m[1] : t.textContent);
    S.push(m ? +m[2].replace(/,/g, '') : 0);
    F.push(r.getAttribute('fill'));
  }
  var full = cfg.width - 2 * cfg.pad;
  var charW = cfg.fontSize * 0.59;

  function label(name, w) {
    var n = Math.floor((w - 6) / charW);
    if (n < 3) return '';
    return name.length > n ? name.substring(0, n - 2) + '..' : name;
  }
  function place(i, x, w) {
    rects[i].setAttribute('x', x.toFixed(2));
    rects[i].setAttribute('width', w.toFixed(2));
    texts[i].setAttribute('x', (x + 3).toFixed(2));
    texts[i].textContent = label(N[i], w);
    groups[i].style.display = '';
  }
  function zoom(z) {
    var fx = X[z], fw = W[z], fy = Y[z], eps = 0.01;
    var ratio = full / fw;
    for (var i = 0; i < groups.length; i++) {
      var g = groups[i];
      g.classList.remove('parent');
      if (Y[i] > fy) {
        if (X[i] <= fx + eps && X[i] + W[i] >= fx + fw - eps) {
          g.classList.add('parent');
          place(i, cfg.pad, full);
        } else {
          g.style.display = 'none';
        }
      } else if (X[i] >= fx - eps && X[i] + W[i] <= fx + fw + eps) {
        place(i, cfg.pad + (X[i] - fx) * ratio, W[i] * ratio);
      } else {
        g.style.display = 'none';
      }
    }
    unzoomEl.classList.remove('hidden');
  }
  function reset() {
    for (var i = 0; i < groups.length; i++) {
      groups[i].classList.remove('parent');
      place(i, X[i], W[i]);
    }
    unzoomEl.classList.add('hidden');
  }
  function fmt(n) { return String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ','); }
  // Highlights frames whose name matches `term` (a regular expression, or plain text when it is
  // not a valid one) and shows the share of samples under them, counting nested matches once.
  function search(term) {
    var re = null;
    if (term) {
      try { re = new RegExp(term); } catch (e) {
        re = new RegExp(term.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'));
      }
    }
    var hits = [];
    for (var i = 0; i < groups.length; i++) {
      if (re && re.test(N[i])) {
        rects[i].setAttribute('fill', 'rgb(230,0,230)');
        hits.push(i);
      } else {
        rects[i].setAttribute('fill', F[i]);
      }
    }
    if (!re) { matchedEl.textContent = ''; return 0; }
    hits.sort(function (a, b) { return X[a] - X[b] || W[b] - W[a]; });
    var end = -1, samples = 0;
    for (var k = 0; k < hits.length; k++) {
      var h = hits[k];
      if (X[h] + W[h] <= end + 0.02) continue;  // inside an earlier match: already counted
      samples += S[h];
      end = X[h] + W[h];
    }
    var pct = cfg.total > 0 ? 100 * samples / cfg.total : 0;
    matchedEl.textContent = 'Matched: ' + pct.toFixed(2) + '% (' + fmt(samples) + ' ' +
        cfg.unit + ', ' + hits.length + ' frames)';
    return pct;
  }
  framesEl.addEventListener('mouseover', function (e) {
    var g = e.target.closest('g');
    if (g && g._np !== undefined) details.textContent = g.firstElementChild.textContent;
  });
  framesEl.addEventListener('mouseout', function () { details.textContent = ' '; });
  framesEl.addEventListener('click', function (e) {
    var g = e.target.closest('g');
    if (!g || g._np === undefined) return;
    if (g._np === 0) { reset(); return; }  // the root frame ('all') resets
    zoom(g._np);
  });
  unzoomEl.addEventListener('click', reset);
  searchEl.addEventListener('input', function () { search(searchEl.value); });
  doc.addEventListener('keydown', function (e) {
    if ((e.ctrlKey || e.metaKey) && e.key === 'f') { e.preventDefault(); searchEl.focus(); }
    if (e.key === 'Escape') { searchEl.value = ''; search(''); reset(); }
  });
  window.nativeprofFlame = { zoom: zoom, reset: reset, search: search, count: groups.length };
})();
)js";

}  // namespace nativeprof::output
