// The report page's style sheet and script. The script turns the page's JSON
// data (report.cpp) into Plotly.js charts; Plotly.js itself is inlined by
// report.cpp from the bundle the CLI embeds (plotly_bundle.h). Every chart is
// drawn offline: no mode bar link to Plotly's servers, no logo, system fonts,
// and the page's Content-Security-Policy blocks any request regardless.
#include "src/analysis/report.h"

namespace ni::analysis {

const char* const kReportCss = R"CSS(
body{font:13px/1.4 system-ui,-apple-system,"Segoe UI",Roboto,Helvetica,Arial,sans-serif;margin:0;color:#1d2330;background:#f5f6f8}
header{background:#1d2330;color:#fff;padding:10px 18px}header h1{font-size:18px;margin:0}header div{opacity:.8;font-size:12px}
nav{padding:6px 18px;background:#e7e9ee;position:sticky;top:0;z-index:2}nav a{margin-right:14px;color:#1d2330;text-decoration:none;font-weight:600}
section{margin:14px 18px;background:#fff;border-radius:6px;padding:10px 14px;box-shadow:0 1px 2px rgba(0,0,0,.08)}
section h2{font-size:16px;margin:4px 0}.note{color:#5a6270;font-size:12px;margin:2px 0 8px}
.grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(520px,1fr));gap:10px}.grid .wide{grid-column:1/-1}
.plot{border:1px solid #e3e5ea;border-radius:4px;padding:4px;overflow:hidden;min-width:0}.plot h3{font-size:13px;margin:2px 4px}
table{border-collapse:collapse;font-size:12px;margin:6px 0 10px}th,td{padding:3px 8px;border-bottom:1px solid #eceef2;text-align:left}
th{background:#f0f2f5;position:sticky;top:0}td.n{text-align:right;font-variant-numeric:tabular-nums}
.tables{display:flex;flex-wrap:wrap;gap:6px 28px;align-items:flex-start}.tables>div{max-width:100%}.tablewrap{max-height:420px;overflow:auto}.empty{color:#8a909c;font-style:italic}
footer{margin:6px 18px 16px;color:#5a6270;font-size:11px}
)CSS";

const char* const kReportJs = R"JS(
'use strict';
const D = JSON.parse(document.getElementById('ni-data').textContent);
const PAL = ['#4e79a7','#f28e2b','#59a14f','#e15759','#76b7b2','#edc948','#b07aa1','#ff9da7','#9c755f','#bab0ac'];
const FONT = 'system-ui, -apple-system, "Segoe UI", Roboto, Helvetica, Arial, sans-serif';
// Nothing in the mode bar leaves the page: no logo (a link to plotly.com), no cloud export.
const CONFIG = {displaylogo: false, showSendToCloud: false, plotlyServerURL: '', showTips: false, responsive: true,
                modeBarButtonsToRemove: ['select2d', 'lasso2d'], toImageButtonOptions: {format: 'png', scale: 2}};
function h(tag, attrs, parent, text) {
  const e = document.createElement(tag);
  for (const k in attrs || {}) e.setAttribute(k, attrs[k]);
  if (text !== undefined) e.textContent = text;
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
const color = i => PAL[i % PAL.length];
const finite = v => v !== null && v !== undefined && isFinite(v);
function layout(p, extra) {
  const axis = {automargin: true, gridcolor: '#eceef2', linecolor: '#9aa1ad', zeroline: false, ticks: 'outside', tickcolor: '#9aa1ad'};
  return Object.assign({
    font: {family: FONT, size: 11, color: '#3a4150'}, height: 320, margin: {l: 56, r: 12, t: 10, b: 44},
    paper_bgcolor: '#fff', plot_bgcolor: '#fff', hovermode: 'closest', hoverlabel: {font: {family: FONT, size: 11}},
    legend: {orientation: 'h', x: 0, y: 1.02, yanchor: 'bottom', font: {size: 10}},
    xaxis: Object.assign({title: {text: p.xlabel || ''}}, axis),
    yaxis: Object.assign({title: {text: p.ylabel || ''}, rangemode: 'tozero'}, axis),
  }, extra || {});
}
// Each builder returns {traces, layout}; traces with meta 'decor' (change-point markers) are not data points.
function box(p) {
  const traces = p.series.map((se, si) => ({
    type: 'box', name: se.name, marker: {color: color(si)}, line: {width: 1.2}, boxpoints: false,
    x: se.boxes.map(b => p.categories[b[0]]),
    lowerfence: se.boxes.map(b => b[1]), q1: se.boxes.map(b => b[2]), median: se.boxes.map(b => b[3]),
    q3: se.boxes.map(b => b[4]), upperfence: se.boxes.map(b => b[5]),
    text: se.boxes.map(b => 'n = ' + b[6]), hoverinfo: 'x+y+text+name'}));
  const l = layout(p, {boxmode: 'group', showlegend: traces.length > 1});
  l.xaxis.type = 'category';
  l.xaxis.categoryorder = 'array';
  l.xaxis.categoryarray = p.categories;
  if (p.ylog) { l.yaxis.type = 'log'; l.yaxis.dtick = 'D2'; delete l.yaxis.rangemode; }
  return {traces, layout: l};
}
function line(p) {
  const traces = p.series.map((se, si) => ({
    type: 'scatter', mode: 'lines+markers', name: se.name,
    x: se.points.map(q => q[0]), y: se.points.map(q => q[1]), customdata: se.points.map(q => q[2]),
    text: se.points.map(q => p.xbytes ? fmtBytes(q[0]) : fmt(q[0]) + ' s'),
    line: {color: color(si), width: 1.6, dash: se.dash ? 'dash' : 'solid'},
    marker: {color: color(si), size: p.markers ? 6 : 3, opacity: se.dash ? 0.6 : 1},
    hovertemplate: '%{text}: %{y:.4g} GB/s (n = %{customdata})<extra>%{fullData.name}</extra>'}));
  const l = layout(p, {shapes: []});
  if (p.xscale === 'log2') {
    const xs = [...new Set(traces.flatMap(t => t.x))].sort((a, b) => a - b);
    const every = Math.max(1, Math.ceil(xs.length / 10));
    const ticks = xs.filter((_, i) => i % every === 0);
    Object.assign(l.xaxis, {type: 'log', tickvals: ticks, ticktext: ticks.map(fmtBytes)});
  } else {
    l.xaxis.rangemode = 'tozero';
  }
  const ymax = Math.max(0, ...traces.flatMap(t => t.y.filter(finite)), ...(p.marks || []).map(m => m[1]));
  for (const [a, b] of p.bands || [])
    l.shapes.push({type: 'rect', xref: 'x', yref: 'paper', x0: a, x1: b, y0: 0, y1: 1, fillcolor: '#e15759', opacity: 0.14,
                   line: {width: 0}, layer: 'below'});
  if ((p.bands || []).length)
    traces.push({type: 'scatter', mode: 'markers', name: 'change point', meta: 'decor',
                 x: p.bands.map(b => (b[0] + b[1]) / 2), y: p.bands.map(() => ymax), text: p.bands.map(b => b[2]),
                 marker: {symbol: 'triangle-down', size: 10, color: '#e15759'}, hovertemplate: '%{text}<extra>change point</extra>'});
  if ((p.marks || []).length)
    traces.push({type: 'scatter', mode: 'markers', name: 'outlier', x: p.marks.map(m => m[0]), y: p.marks.map(m => m[1]),
                 text: p.marks.map(m => m[2]), marker: {symbol: 'circle-open', size: 11, color: '#d62728', line: {width: 2}},
                 hovertemplate: '%{text}<extra>outlier</extra>'});
  return {traces, layout: l};
}
function bar(p) {
  const traces = p.series.map((se, si) => ({
    type: 'bar', name: se.name, x: p.categories, y: se.values, marker: {color: color(si)},
    hovertemplate: '%{x}: %{y:.4g}<extra>%{fullData.name}</extra>'}));
  const l = layout(p, {barmode: p.stacked ? 'stack' : 'group', showlegend: traces.length > 1});
  l.xaxis.type = 'category';
  if (p.ymax) {
    const tot = p.categories.map((_, i) => p.series.reduce((a, se) => p.stacked ? a + (se.values[i] || 0) : Math.max(a, se.values[i] || 0), 0));
    l.yaxis.range = [0, Math.max(p.ymax, ...tot) * 1.02];
  }
  return {traces, layout: l};
}
function heatmap(p) {
  const ncol = p.values.length ? p.values[0].length : 0;
  const x = Array.from({length: ncol}, (_, i) => p.x0 + (i + 0.5) * p.dx);
  const traces = [{type: 'heatmap', z: p.values, x, y: p.rows, hoverongaps: false, xgap: 0, ygap: 1,
                   colorscale: [[0, '#fff7ec'], [0.35, '#fdbb84'], [0.7, '#ef6548'], [1, '#7f0000']],
                   colorbar: {title: {text: p.zlabel || '', side: 'right'}, thickness: 12, outlinewidth: 0},
                   hovertemplate: '%{y}<br>%{x:.3g} s: %{z:.4g} us<extra></extra>'}];
  const l = layout(p, {height: Math.max(240, Math.min(640, 90 + p.rows.length * 20))});
  l.yaxis = Object.assign(l.yaxis, {autorange: 'reversed', type: 'category', rangemode: undefined, gridcolor: 'rgba(0,0,0,0)'});
  l.xaxis.gridcolor = 'rgba(0,0,0,0)';
  return {traces, layout: l};
}
// The data points Plotly holds for a chart (what the C++ side counted), and the marks it drew.
function points(gd) {
  let n = 0;
  for (const t of gd.data) {
    if (t.meta === 'decor') continue;
    if (t.type === 'box') n += t.median.filter(finite).length;
    else if (t.type === 'heatmap') n += t.z.reduce((a, r) => a + r.filter(finite).length, 0);
    else n += t.y.filter(finite).length;
  }
  return n;
}
function marks(gd) {
  return gd.querySelectorAll('.scatterlayer .point, .barlayer .point path, .boxlayer path.box, .heatmaplayer image').length;
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
const R = {box, line, bar, heatmap};
async function main() {
  const app = document.getElementById('app');
  const hd = h('header', {}, app);
  h('h1', {}, hd, D.title);
  h('div', {}, hd, `${D.inputs}${D.t0 ? ' \u00b7 first op ' + D.t0 : ''}${D.baseline ? ' \u00b7 baseline: ' + D.baseline : ''}`);
  const nav = h('nav', {}, app);
  const jobs = [];
  for (const sec of D.sections) {
    h('a', {href: '#' + sec.id}, nav, sec.nav || sec.title);
    const el = h('section', {id: sec.id}, app);
    h('h2', {}, el, sec.title);
    if (sec.note) h('div', {class: 'note'}, el, sec.note);
    if (sec.plots.length) {
      const grid = h('div', {class: 'grid'}, el);
      for (const p of sec.plots) {
        const div = h('div', {class: 'plot' + (p.type === 'heatmap' ? ' wide' : ''), 'data-type': p.type, 'data-expected': String(p.points)}, grid);
        h('h3', {}, div, p.title);
        const chart = h('div', {class: 'chart'}, div);
        jobs.push({p, div, chart});
      }
    }
    if (sec.tables.length) {
      const tw = h('div', {class: 'tables'}, el);
      for (const t of sec.tables) table(h('div', {}, tw), t);
    }
  }
  h('footer', {}, app, `Charts: ${D.plotly || 'Plotly.js'} (MIT license; its notice heads the inlined script). ` +
                       'Hover for values, drag to zoom, double-click to reset.');
  let rendered = 0;
  for (const {p, div, chart} of jobs) {
    let n = 0, m = 0;
    try {
      const spec = R[p.type](p);
      await Plotly.newPlot(chart, spec.traces, spec.layout, CONFIG);
      n = points(chart);
      m = marks(chart);
    } catch (e) {
      console.error('plot ' + p.title + ': ' + e);
    }
    div.setAttribute('data-points', String(n));
    div.setAttribute('data-marks', String(m));
    if (n > 0 && m > 0) ++rendered; else h('div', {class: 'empty'}, div, 'no data');
  }
  document.body.setAttribute('data-rendered-plots', String(rendered));
}
main().catch(e => console.error('report: ' + e));
)JS";

}  // namespace ni::analysis
