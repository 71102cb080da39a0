// The report page's style sheet and SVG chart renderer (box, line, bar,
// heatmap, tables). Hand-written on purpose: the page must work offline with
// no external library, and these five chart types need ~300 lines, not a
// 1.5-4.8 MB bundle (docs/analysis.md, "Report").
#include "report.h"

namespace nccl_inspector::analysis {

const char* const kReportCss = R"CSS(
body{font:13px/1.4 system-ui,-apple-system,"Segoe UI",Roboto,Helvetica,Arial,sans-serif;margin:0;color:#1d2330;background:#f5f6f8}
header{background:#1d2330;color:#fff;padding:10px 18px}header h1{font-size:18px;margin:0}header div{opacity:.8;font-size:12px}
nav{padding:6px 18px;background:#e7e9ee;position:sticky;top:0;z-index:2}nav a{margin-right:14px;color:#1d2330;text-decoration:none;font-weight:600}
section{margin:14px 18px;background:#fff;border-radius:6px;padding:10px 14px;box-shadow:0 1px 2px rgba(0,0,0,.08)}
section h2{font-size:16px;margin:4px 0}.note{color:#5a6270;font-size:12px;margin:2px 0 8px}
.grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(560px,1fr));gap:10px}
.plot{border:1px solid #e3e5ea;border-radius:4px;padding:4px;overflow:hidden}.plot h3{font-size:13px;margin:2px 4px}
.legend{font-size:11px;margin:2px 6px}.legend span{display:inline-block;margin-right:10px;white-space:nowrap}
.legend i{display:inline-block;width:10px;height:10px;margin-right:4px;vertical-align:-1px;border-radius:2px}
svg text{font-size:10px;fill:#3a4150}svg .grid line{stroke:#eceef2}svg .axis line,svg .axis path{stroke:#9aa1ad}
table{border-collapse:collapse;font-size:12px;margin:6px 0 10px}th,td{padding:3px 8px;border-bottom:1px solid #eceef2;text-align:left}
th{background:#f0f2f5;position:sticky;top:0}td.n{text-align:right;font-variant-numeric:tabular-nums}
.tables{display:flex;flex-wrap:wrap;gap:6px 28px;align-items:flex-start}.tables>div{max-width:100%}.tablewrap{max-height:420px;overflow:auto}.empty{color:#8a909c;font-style:italic}
)CSS";

const char* const kReportJs = R"JS(
'use strict';
const D = JSON.parse(document.getElementById('ni-data').textContent);
const NS = 'http://www.w3.org/2000/svg';
const PAL = ['#4e79a7','#f28e2b','#59a14f','#e15759','#76b7b2','#edc948','#b07aa1','#ff9da7','#9c755f','#bab0ac'];
function h(tag, attrs, parent, text) {
  const e = document.createElement(tag);
  for (const k in attrs || {}) e.setAttribute(k, attrs[k]);
  if (text !== undefined) e.textContent = text;
  if (parent) parent.appendChild(e);
  return e;
}
function s(tag, attrs, parent, title) {
  const e = document.createElementNS(NS, tag);
  for (const k in attrs || {}) e.setAttribute(k, attrs[k]);
  if (title) { const t = document.createElementNS(NS, 'title'); t.textContent = title; e.appendChild(t); }
  if (parent) parent.appendChild(e);
  return e;
}
function fmt(v) {
  if (v === null || v === undefined || !isFinite(v)) return '-';
  if (Number.isInteger(v) && Math.abs(v) < 1e15) return String(v);
  const a = Math.abs(v);
  if (a >= 1e6 || (a > 0 && a < 1e-3)) return v.toExponential(2);
  if (a >= 100) return v.toFixed(0);
  if (a >= 1) return v.toFixed(2).replace(/\.?0+$/, '');
  return v.toPrecision(3);
}
function fmtBytes(b) {
  const u = ['B','KiB','MiB','GiB','TiB']; let i = 0;
  while (b >= 1024 && i < u.length - 1) { b /= 1024; ++i; }
  return (b >= 10 || b === Math.floor(b) ? b.toFixed(0) : b.toFixed(1)) + u[i];
}
function niceTicks(lo, hi, n) {
  if (!(hi > lo)) { hi = lo + 1; }
  const step0 = (hi - lo) / n, mag = Math.pow(10, Math.floor(Math.log10(step0)));
  const step = [1, 2, 2.5, 5, 10].map(m => m * mag).find(x => x >= step0) || 10 * mag;
  const out = [];
  for (let v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) out.push(+v.toPrecision(12));
  return out;
}
function logTicks(lo, hi, base) {
  const out = [];
  const a = Math.floor(Math.log(lo) / Math.log(base)), b = Math.ceil(Math.log(hi) / Math.log(base));
  const every = Math.max(1, Math.ceil((b - a) / 8));
  const steps = base === 10 && b - a <= 3 ? [1, 2, 5] : [1];  // a short range: 1-2-5 ticks
  for (let k = a; k <= b; k += every) for (const m of steps) out.push(m * Math.pow(base, k));
  return out;
}
// A frame: axes with ticks, gridlines, labels. x: {lo,hi,log,base,cats,fmt}; y likewise.
function frame(div, p, x, y, W, H) {
  // rotated category labels reach left of their tick: room for the first one
  const longest = x.cats ? Math.min(28, Math.max(...x.cats.map(c => c.length))) : 0;
  const band = x.cats ? (W - 70) / x.cats.length / 2 : 0;
  const M = {l: Math.max(58, Math.min(170, longest * 4.6 - band + 8)), r: 12, t: 8, b: x.cats ? 24 + longest * 3.4 : 38};
  const svg = s('svg', {width: W, height: H, viewBox: `0 0 ${W} ${H}`, role: 'img'}, div);
  const pw = W - M.l - M.r, ph = H - M.t - M.b;
  const mk = (ax, r0, r1) => {
    if (ax.cats) return v => r0 + (v + 0.5) * (r1 - r0) / ax.cats.length;
    if (ax.log) { const l0 = Math.log(ax.lo), l1 = Math.log(ax.hi); return v => r0 + (Math.log(v) - l0) / (l1 - l0 || 1) * (r1 - r0); }
    return v => r0 + (v - ax.lo) / ((ax.hi - ax.lo) || 1) * (r1 - r0);
  };
  const X = mk(x, M.l, M.l + pw), Y = mk(y, M.t + ph, M.t);
  const g = s('g', {class: 'grid'}, svg), ax = s('g', {class: 'axis'}, svg);
  const yt = y.log ? logTicks(y.lo, y.hi, 10) : niceTicks(y.lo, y.hi, 5);
  for (const t of yt) {
    if (t < y.lo - 1e-12 || t > y.hi * (1 + 1e-9)) continue;
    s('line', {x1: M.l, x2: M.l + pw, y1: Y(t), y2: Y(t)}, g);
    s('text', {x: M.l - 4, y: Y(t) + 3, 'text-anchor': 'end'}, ax).textContent = fmt(t);
  }
  if (x.cats) {
    x.cats.forEach((c, i) => {
      const tx = X(i), lab = c.length > 28 ? c.slice(0, 27) + '\u2026' : c;
      const t = s('text', {x: tx, y: M.t + ph + 10, 'text-anchor': 'end', transform: `rotate(-35 ${tx} ${M.t + ph + 10})`}, ax, c);
      t.appendChild(document.createTextNode(lab));
    });
  } else {
    const xt = x.log ? logTicks(x.lo, x.hi, x.base || 10) : niceTicks(x.lo, x.hi, 6);
    for (const t of xt) {
      if (t < x.lo - 1e-12 || t > x.hi * (1 + 1e-9)) continue;
      s('line', {x1: X(t), x2: X(t), y1: M.t, y2: M.t + ph}, g);
      s('text', {x: X(t), y: M.t + ph + 13, 'text-anchor': 'middle'}, ax).textContent = x.fmt ? x.fmt(t) : fmt(t);
    }
  }
  s('path', {d: `M${M.l},${M.t}V${M.t + ph}H${M.l + pw}`, fill: 'none'}, ax);
  if (p.xlabel) s('text', {x: M.l + pw / 2, y: H - 4, 'text-anchor': 'middle'}, ax).textContent = p.xlabel;
  if (p.ylabel) s('text', {x: 12, y: M.t + ph / 2, 'text-anchor': 'middle', transform: `rotate(-90 12 ${M.t + ph / 2})`}, ax).textContent = p.ylabel;
  return {svg, X, Y, M, pw, ph};
}
function legend(div, names, dash) {
  const l = h('div', {class: 'legend'}, div);
  names.forEach((n, i) => {
    const sp = h('span', {}, l);
    h('i', {style: `background:${PAL[i % PAL.length]}${dash && dash[i] ? ';opacity:.5' : ''}`}, sp);
    sp.appendChild(document.createTextNode(n));
  });
}
function range(vals, log) {
  let lo = Infinity, hi = -Infinity;
  for (const v of vals) if (v !== null && isFinite(v) && (!log || v > 0)) { lo = Math.min(lo, v); hi = Math.max(hi, v); }
  if (!isFinite(lo)) return null;
  if (log) { if (hi === lo) { lo /= 2; hi *= 2; } return {lo, hi}; }
  if (hi === lo) { hi = lo + 1; }
  return {lo: Math.min(0, lo), hi: hi * 1.05};
}
const W = () => 560, Hh = 300;
function box(div, p) {
  const all = [];
  p.series.forEach(se => se.boxes.forEach(b => all.push(b[1], b[5])));
  const yr = range(all, p.ylog); if (!yr) return 0;
  const f = frame(div, p, {cats: p.categories}, {lo: yr.lo, hi: yr.hi, log: p.ylog}, W(), Hh);
  const ns = p.series.length, bw = f.pw / p.categories.length * 0.8 / ns;
  let n = 0;
  p.series.forEach((se, si) => {
    const c = PAL[si % PAL.length];
    for (const [cat, lo, q1, med, q3, hi, cnt] of se.boxes) {
      const cx = f.X(cat) - bw * ns / 2 + bw * (si + 0.5), w = Math.max(2, bw * 0.8);
      const tip = `${se.name} \u00b7 ${p.categories[cat]}\nP5 ${fmt(lo)}  P25 ${fmt(q1)}  P50 ${fmt(med)}  P75 ${fmt(q3)}  P95 ${fmt(hi)}\nn = ${cnt}`;
      const g = s('g', {class: 'mark'}, f.svg, tip);
      s('line', {x1: cx, x2: cx, y1: f.Y(lo), y2: f.Y(hi), stroke: c}, g);
      s('rect', {x: cx - w / 2, y: f.Y(q3), width: w, height: Math.max(1, f.Y(q1) - f.Y(q3)), fill: c, 'fill-opacity': 0.35, stroke: c}, g);
      s('line', {x1: cx - w / 2, x2: cx + w / 2, y1: f.Y(med), y2: f.Y(med), stroke: c, 'stroke-width': 2}, g);
      ++n;
    }
  });
  if (ns > 1) legend(div, p.series.map(x => x.name));
  return n;
}
function line(div, p) {
  const xs = [], ys = [];
  p.series.forEach(se => se.points.forEach(q => { xs.push(q[0]); ys.push(q[1]); }));
  (p.marks || []).forEach(m => { xs.push(m[0]); ys.push(m[1]); });
  const log2 = p.xscale === 'log2';
  const xr = range(xs, log2), yr = range(ys, false); if (!xr || !yr) return 0;
  if (!log2) xr.lo = Math.min(xr.lo, 0);
  const f = frame(div, p, {lo: xr.lo, hi: log2 ? xr.hi : xr.hi / 1.05 * 1.02, log: log2, base: 2, fmt: p.xbytes ? fmtBytes : null},
                  {lo: yr.lo, hi: yr.hi}, W(), Hh);
  let n = 0;
  for (const [a, b, tip] of p.bands || [])
    s('rect', {x: f.X(a), y: f.M.t, width: Math.max(2, f.X(b) - f.X(a)), height: f.ph, fill: '#e15759', 'fill-opacity': 0.12}, f.svg, tip);
  p.series.forEach((se, si) => {
    const c = PAL[si % PAL.length];
    if (!se.points.length) return;
    const d = se.points.map((q, i) => (i ? 'L' : 'M') + f.X(q[0]).toFixed(1) + ',' + f.Y(q[1]).toFixed(1)).join('');
    s('path', {d, fill: 'none', stroke: c, 'stroke-width': 1.5, 'stroke-dasharray': se.dash ? '5 3' : ''}, f.svg);
    for (const q of se.points) {
      const tip = `${se.name}\n${p.xbytes ? fmtBytes(q[0]) : fmt(q[0]) + ' s'}: ${fmt(q[1])}${q[2] !== undefined ? '  (n = ' + q[2] + ')' : ''}`;
      s('circle', {cx: f.X(q[0]), cy: f.Y(q[1]), r: p.markers ? 3 : 1.6, fill: c, class: 'mark'}, f.svg, tip);
      ++n;
    }
  });
  for (const [x, y, tip] of p.marks || []) {
    s('circle', {cx: f.X(x), cy: f.Y(y), r: 4.5, fill: 'none', stroke: '#d62728', 'stroke-width': 2, class: 'mark'}, f.svg, tip);
    ++n;
  }
  legend(div, p.series.map(x => x.name), p.series.map(x => x.dash));
  return n;
}
function bar(div, p) {
  const tot = p.categories.map((_, i) => p.stacked ? p.series.reduce((a, se) => a + (se.values[i] || 0), 0)
                                                  : Math.max(...p.series.map(se => se.values[i] || 0)));
  const yr = range(tot.concat([0]), false); if (!yr) return 0;
  if (p.ymax) yr.hi = Math.max(yr.hi, p.ymax);
  const f = frame(div, p, {cats: p.categories}, yr, W(), Hh);
  const ns = p.stacked ? 1 : p.series.length, bw = f.pw / p.categories.length * 0.8 / ns;
  const base = p.categories.map(() => 0);
  let n = 0;
  p.series.forEach((se, si) => {
    const c = PAL[si % PAL.length];
    se.values.forEach((v, i) => {
      if (v === null || !isFinite(v)) return;
      const x = f.X(i) - bw * ns / 2 + (p.stacked ? 0 : bw * si), y0 = base[i], y1 = y0 + v;
      s('rect', {x: x + 0.5, y: f.Y(y1), width: Math.max(1, bw - 1), height: Math.max(0.5, f.Y(y0) - f.Y(y1)), fill: c, class: 'mark'},
        f.svg, `${se.name} \u00b7 ${p.categories[i]}: ${fmt(v)}`);
      if (p.stacked) base[i] = y1;
      ++n;
    });
  });
  if (p.series.length > 1) legend(div, p.series.map(x => x.name));
  return n;
}
function heat(div, p) {
  let lo = Infinity, hi = -Infinity;
  p.values.forEach(r => r.forEach(v => { if (v !== null) { lo = Math.min(lo, v); hi = Math.max(hi, v); } }));
  if (!isFinite(lo)) return 0;
  const ncol = p.values[0].length, H = Math.max(160, Math.min(520, 60 + p.rows.length * 16));
  const M = {l: 190, r: 60, t: 8, b: 38}, Wd = W() + 120, pw = Wd - M.l - M.r, ph = H - M.t - M.b;
  const svg = s('svg', {width: Wd, height: H, viewBox: `0 0 ${Wd} ${H}`, role: 'img'}, div);
  const cw = pw / ncol, rh = ph / p.rows.length;
  const color = v => { const t = hi > lo ? (v - lo) / (hi - lo) : 0; return `hsl(${(1 - t) * 220},80%,${88 - t * 45}%)`; };
  let n = 0;
  p.values.forEach((r, ri) => {
    const lab = p.rows[ri];
    s('text', {x: M.l - 4, y: M.t + (ri + 0.5) * rh + 3, 'text-anchor': 'end'}, svg).textContent = lab.length > 34 ? lab.slice(0, 33) + '\u2026' : lab;
    r.forEach((v, ci) => {
      if (v === null) return;
      s('rect', {x: M.l + ci * cw, y: M.t + ri * rh, width: cw + 0.3, height: rh + 0.3, fill: color(v), class: 'mark'}, svg,
        `${lab}\n${fmt(p.x0 + ci * p.dx)}-${fmt(p.x0 + (ci + 1) * p.dx)} s: ${fmt(v)} ${p.zlabel || ''}`);
      ++n;
    });
  });
  const ax = s('g', {class: 'axis'}, svg);
  for (const t of niceTicks(p.x0, p.x0 + ncol * p.dx, 6)) {
    const x = M.l + (t - p.x0) / p.dx * cw;
    if (x > M.l + pw + 0.5) continue;
    s('text', {x, y: M.t + ph + 13, 'text-anchor': 'middle'}, ax).textContent = fmt(t);
  }
  if (p.xlabel) s('text', {x: M.l + pw / 2, y: H - 4, 'text-anchor': 'middle'}, ax).textContent = p.xlabel;
  for (let k = 0; k <= 4; ++k) {  // colour scale
    const v = lo + (hi - lo) * k / 4, y = M.t + ph - k * ph / 4;
    s('rect', {x: Wd - M.r + 8, y: y - ph / 4, width: 12, height: ph / 4, fill: color(v)}, svg);
    s('text', {x: Wd - M.r + 24, y: y + 3}, svg).textContent = fmt(v);
  }
  return n;
}
function table(parent, t) {
  h('h3', {}, parent, t.title);
  if (!t.rows.length) { h('div', {class: 'empty'}, parent, t.note || 'No rows.'); return; }
  const wrap = h('div', {class: 'tablewrap'}, parent), tb = h('table', {}, wrap);
  const tr = h('tr', {}, h('thead', {}, tb));
  t.columns.forEach(c => h('th', {}, tr, c));
  const body = h('tbody', {}, tb);
  for (const r of t.rows) {
    const row = h('tr', {}, body);
    r.forEach(v => h('td', typeof v === 'number' ? {class: 'n'} : {}, row, typeof v === 'number' ? fmt(v) : v === null ? '-' : String(v)));
  }
  if (t.note) h('div', {class: 'note'}, parent, t.note);
}
const R = {box, line, bar, heatmap: heat};
function main() {
  const app = document.getElementById('app');
  const hd = h('header', {}, app);
  h('h1', {}, hd, D.title);
  h('div', {}, hd, `${D.inputs}${D.t0 ? ' \u00b7 first op ' + D.t0 : ''}${D.baseline ? ' \u00b7 baseline: ' + D.baseline : ''}`);
  const nav = h('nav', {}, app);
  let rendered = 0;
  for (const sec of D.sections) {
    h('a', {href: '#' + sec.id}, nav, sec.nav || sec.title);
    const el = h('section', {id: sec.id}, app);
    h('h2', {}, el, sec.title);
    if (sec.note) h('div', {class: 'note'}, el, sec.note);
    if (sec.plots.length) {
      const grid = h('div', {class: 'grid'}, el);
      for (const p of sec.plots) {
        const div = h('div', {class: 'plot', 'data-type': p.type}, grid);
        h('h3', {}, div, p.title);
        let n = 0;
        try { n = R[p.type](div, p); } catch (e) { console.error('plot ' + p.title + ': ' + e); }
        div.setAttribute('data-marks', String(n));
        if (n > 0) ++rendered; else h('div', {class: 'empty'}, div, 'no data');
      }
    }
    if (sec.tables.length) {
      const tw = h('div', {class: 'tables'}, el);
      for (const t of sec.tables) table(h('div', {}, tw), t);
    }
  }
  document.body.setAttribute('data-rendered-plots', String(rendered));
}
main();
)JS";

}  // namespace nccl_inspector::analysis
