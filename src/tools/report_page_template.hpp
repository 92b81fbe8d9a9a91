// The report page's template (HTML, CSS and the script that draws the data). report_page.cpp fills
// the @@KB_...@@ placeholders: TITLE (HTML-escaped), NONCE (the Content-Security-Policy nonce of the
// page's scripts), CHARTJS (the inlined library, its "</script" escaped), CHARTJS_VERSION, and DATA
// (report_data's JSON, escaped for a <script> element).
//
// Rules for the script: data is written with textContent and setAttribute only (never innerHTML), no
// network, no other library. Render signals for tests/report/check_report.py: each chart canvas gets
// data-kb-points (data points over its datasets) and data-kb-painted (non-transparent pixels, every 4th
// sampled); body gets data-kb-rendered="ok" when everything was drawn, data-kb-error on any error.
#pragma once
#include <string_view>

namespace kernelbrain::report {

inline constexpr std::string_view page_template = R"KB_PAGE(<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; script-src 'nonce-@@KB_NONCE@@'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'">
<meta name="generator" content="kernelbrain report; Chart.js @@KB_CHARTJS_VERSION@@ inlined">
<title>@@KB_TITLE@@</title>
<style>
:root {
  --ink: #1d2433; --muted: #5b6578; --line: #dde2ea; --soft: #f4f6f9; --card: #ffffff; --accent: #2458c6;
  --pass: #1e7d45; --fail: #b3261e; --warn: #9a6700;
  --mono: ui-monospace, "SFMono-Regular", "DejaVu Sans Mono", Menlo, Consolas, monospace;
}
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", "DejaVu Sans", Roboto, sans-serif;
  color: var(--ink); background: var(--soft); }
header.top { background: #16213a; color: #fff; padding: 14px 28px 12px; }
header.top h1 { margin: 0 0 4px; font-size: 21px; font-weight: 600; }
header.top .meta { margin: 0; color: #b8c3d9; font-size: 12.5px; }
nav.problems { display: flex; flex-wrap: wrap; gap: 8px; margin-top: 10px; }
nav.problems a { color: #fff; text-decoration: none; background: #263456; border-radius: 6px; padding: 4px 10px;
  font-size: 13px; }
nav.problems a b { color: #9fd0ff; font-weight: 600; margin-left: 6px; }
#kb-error { background: #fdecea; color: var(--fail); border: 1px solid #f3b8b2; margin: 12px 28px; padding: 8px 12px;
  border-radius: 6px; }
main { padding: 4px 28px 28px; }
section.problem { margin-top: 16px; }
section.problem > h2 { font-size: 19px; margin: 6px 0 2px; }
p.lead { margin: 0 0 10px; color: var(--muted); }
p.lead b { color: var(--ink); }
h3 { font-size: 15px; margin: 22px 0 8px; border-bottom: 1px solid var(--line); padding-bottom: 4px; }
.charts { display: grid; grid-template-columns: minmax(0, 3fr) minmax(0, 2fr); gap: 14px; align-items: start; }
.charts.model-axes { grid-template-columns: repeat(3, minmax(0, 1fr)); }
.funnels { display: grid; gap: 14px; }
figure.card { margin: 0; background: var(--card); border: 1px solid var(--line); border-radius: 8px;
  padding: 10px 12px 8px; }
figure.card figcaption { font-weight: 600; font-size: 13.5px; margin-bottom: 6px; }
figure.card .note { color: var(--muted); font-size: 12px; margin: 6px 0 0; }
.chart-box { position: relative; height: 330px; }
.chart-box.short { height: 250px; }
.chart-box .nodata { display: none; position: absolute; inset: 0; align-items: center; justify-content: center;
  color: var(--muted); font-size: 15px; border: 1px dashed var(--line); border-radius: 6px; }
.chart-box.empty .nodata { display: flex; }
.chart-box.empty canvas { visibility: hidden; }
.runs { display: grid; grid-template-columns: repeat(auto-fill, minmax(430px, 1fr)); gap: 10px; }
.run { background: var(--card); border: 1px solid var(--line); border-radius: 8px; padding: 8px 12px; }
.run h4 { margin: 0 0 4px; font-size: 13.5px; }
dl.kv { display: grid; grid-template-columns: max-content 1fr; gap: 1px 12px; margin: 0; font-size: 12.5px; }
dl.kv dt { color: var(--muted); }
dl.kv dd { margin: 0; overflow-wrap: anywhere; }
code, .mono { font-family: var(--mono); font-size: 12px; }
pre { font-family: var(--mono); font-size: 12px; background: #f7f8fa; border: 1px solid var(--line); border-radius: 6px;
  padding: 8px 10px; overflow: auto; white-space: pre; margin: 4px 0; }
pre.wrap { white-space: pre-wrap; overflow-wrap: anywhere; }
pre.code { max-height: 520px; }
pre.text { max-height: 420px; white-space: pre-wrap; overflow-wrap: anywhere; }
.block { background: var(--card); border: 1px solid var(--line); border-radius: 8px; padding: 10px 12px; }
.pill { display: inline-block; border-radius: 10px; padding: 0 7px; font-size: 11.5px; background: #e8edf7;
  color: #23406e; margin-right: 4px; white-space: nowrap; }
.pill.seed { background: #e6f4ea; color: #1e5b34; }
.pill.expert { background: #e8eefc; color: #234aa0; }
.pill.mutation { background: #f1ecfb; color: #55308f; }
.pill.llm { background: #fff1dc; color: #8a4b00; }
.kb-torch { display: inline-block; border-radius: 4px; padding: 1px 8px; margin-right: 6px; font-weight: 600; }
.kb-torch.win { background: #e6f4ea; color: #1e5b34; }
.kb-torch.lose { background: #fde8e8; color: #9b1c1c; }
.pass { color: var(--pass); }
.fail { color: var(--fail); }
.muted { color: var(--muted); }
table { border-collapse: collapse; background: var(--card); font-size: 12.5px; }
th, td { border-bottom: 1px solid var(--line); padding: 4px 8px; text-align: left; vertical-align: top; }
th { background: #eef1f6; position: sticky; top: 0; z-index: 1; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
table.cands th { cursor: pointer; user-select: none; white-space: nowrap; }
table.cands th[data-dir="asc"]::after { content: " \25B2"; font-size: 10px; }
table.cands th[data-dir="desc"]::after { content: " \25BC"; font-size: 10px; }
table.cands td { max-width: 380px; overflow-wrap: anywhere; }
table.cands tr:hover td { background: #f5f8ff; }
.table-wrap { max-height: 640px; overflow: auto; border: 1px solid var(--line); border-radius: 8px; }
.filter { display: flex; gap: 10px; align-items: center; margin: 0 0 8px; }
.filter input { font: inherit; padding: 4px 8px; width: 320px; border: 1px solid var(--line); border-radius: 6px; }
details > summary { cursor: pointer; }
details.x { border: 1px solid #f0d9b5; background: #fffaf2; border-radius: 6px; padding: 4px 8px; margin: 6px 0; }
details.x details { margin: 4px 0 0 10px; }
ul.lineage { list-style: none; margin: 0; padding-left: 0; }
ul.lineage ul.lineage { padding-left: 26px; border-left: 2px solid #c9d3e6; margin-left: 10px; }
ul.lineage li { margin: 6px 0; }
.node { background: var(--card); border: 1px solid var(--line); border-radius: 8px; padding: 6px 10px; }
.node.best { border-color: #7aa2e8; box-shadow: 0 0 0 2px #dbe6fb; }
.node .line { margin: 1px 0; }
.metrics { display: grid; grid-template-columns: repeat(auto-fill, minmax(330px, 1fr)); gap: 0 16px; font-size: 12px; }
.metrics div { display: flex; justify-content: space-between; gap: 8px; border-bottom: 1px dotted var(--line); }
.metrics span:first-child { font-family: var(--mono); color: var(--muted); overflow-wrap: anywhere; }
.two { display: grid; grid-template-columns: minmax(0, 1fr) minmax(0, 1fr); gap: 14px; }
footer { color: var(--muted); font-size: 12px; padding: 0 28px 24px; }
@media (max-width: 1000px) { .charts, .charts.model-axes, .two { grid-template-columns: minmax(0, 1fr); } }
</style>
</head>
<body>
<header class="top">
<h1 id="kb-title"></h1>
<p class="meta" id="kb-meta"></p>
<nav class="problems" id="kb-nav"></nav>
</header>
<div id="kb-error" hidden></div>
<main id="kb-main"></main>
<footer id="kb-footer"></footer>
<script type="application/json" id="kb-data">@@KB_DATA@@</script>
<script nonce="@@KB_NONCE@@">/* Chart.js @@KB_CHARTJS_VERSION@@, inlined by kernelbrain report (MIT License) */
@@KB_CHARTJS@@
</script>
<script nonce="@@KB_NONCE@@">
(function () {
  'use strict';
  const body = document.body;
  const errors = [];
  function fail(message) {
    const text = String(message || 'unknown error');
    errors.push(text);
    if (!body.dataset.kbError) body.dataset.kbError = text;
    const box = document.getElementById('kb-error');
    box.hidden = false;
    box.textContent = 'The report could not be drawn in full: ' + errors.join('; ');
  }
  window.onerror = function (message, source, line, column, error) {
    fail(error && error.message ? error.message : message);
  };
  window.addEventListener('unhandledrejection', function (e) {
    fail(e.reason && e.reason.message ? e.reason.message : e.reason);
  });

  // ---- small helpers: elements are built from text, never from HTML --------------------------------
  function h(tag, attrs, ...kids) {
    const e = document.createElement(tag);
    if (attrs) {
      for (const [k, v] of Object.entries(attrs)) {
        if (v === null || v === undefined || v === false) continue;
        if (k === 'class') e.className = v;
        else if (k === 'text') e.textContent = v;
        else e.setAttribute(k, v === true ? '' : String(v));
      }
    }
    for (const kid of kids) {
      if (kid === null || kid === undefined || kid === false) continue;
      e.append(kid instanceof Node ? kid : String(kid));
    }
    return e;
  }
  const isNum = (x) => typeof x === 'number' && isFinite(x);
  function speedup(x) {
    if (!isNum(x)) return '–';
    return (x >= 100 ? x.toFixed(0) : x >= 10 ? x.toFixed(1) : x.toFixed(2)) + '×';
  }
  function seconds(s) {
    if (!isNum(s)) return '–';
    if (s === 0) return '0 s';
    if (s >= 1) return s.toFixed(2) + ' s';
    if (s >= 1e-3) return (s * 1e3).toFixed(3) + ' ms';
    return (s * 1e6).toFixed(2) + ' µs';
  }
  const percent = (p) => (p >= 10 ? p.toFixed(1) : p >= 0.1 ? p.toFixed(2) : p.toPrecision(2)) + '%';
  function metric(x) {
    if (!isNum(x)) return '–';
    if (Number.isInteger(x)) return x.toLocaleString('en-US');
    const a = Math.abs(x);
    return a >= 1e5 || a < 1e-3 ? x.toExponential(3) : x.toPrecision(4).replace(/\.?0+$/, '');
  }
  const firstLine = (s) => (s || '').split('\n')[0];
  // JSON with objects indented and arrays of plain values on one line (launch plans read better so).
  function compactJson(v, indent) {
    const inner = indent + '  ';
    if (Array.isArray(v)) {
      if (v.every((x) => x === null || typeof x !== 'object')) return '[' + v.map((x) => JSON.stringify(x)).join(', ') + ']';
      return '[\n' + v.map((x) => inner + compactJson(x, inner)).join(',\n') + '\n' + indent + ']';
    }
    if (v !== null && typeof v === 'object') {
      const keys = Object.keys(v);
      if (!keys.length) return '{}';
      return '{\n' + keys.map((k) => inner + JSON.stringify(k) + ': ' + compactJson(v[k], inner)).join(',\n') + '\n' + indent + '}';
    }
    return JSON.stringify(v);
  }
  function originPill(origin) {
    const o = origin || '';
    const kind = o.startsWith('llm') ? 'llm' : o.startsWith('mutation') ? 'mutation'
      : o.startsWith('expert') ? 'expert' : o === 'seed' ? 'seed' : '';
    return h('span', { class: 'pill ' + kind, text: o || '(no origin)' });
  }
  function verdictText(r) {
    if (r.stage === 'pass') return 'pass';
    return (r.at_gate ? 'gate: ' : '') + r.stage;
  }
  function verdictNode(r) {
    const cls = r.stage === 'pass' ? 'pass' : r.stage === 'not evaluated' ? 'muted' : 'fail';
    if (!r.detail) return h('span', { class: cls, text: verdictText(r) });
    const d = h('details', { title: r.detail },
      h('summary', { class: cls }, verdictText(r) + ': ' + (r.detail.length > 70 ? r.detail.slice(0, 70) + '…' : r.detail)));
    d.append(h('pre', { class: 'text', text: r.detail }));
    return d;
  }
  function metricsGrid(profile) {
    const grid = h('div', { class: 'metrics' });
    for (const [k, v] of Object.entries(profile || {})) grid.append(h('div', null, h('span', { text: k }), h('span', { text: metric(v) })));
    return grid;
  }
  const palette = ['#2458c6', '#d1495b', '#2a9d5c', '#8e44ad', '#e08e0b', '#1b9aaa', '#7f5539', '#c2185b'];
  function rgba(hex, a) {
    const n = parseInt(hex.slice(1), 16);
    return `rgba(${(n >> 16) & 255}, ${(n >> 8) & 255}, ${n & 255}, ${a})`;
  }

  // ---- charts: built after the page, so that each canvas has its size -------------------------------
  const charts = [];
  function chartBox(config, points, short) {
    const canvas = h('canvas', { class: 'kb-chart', role: 'img' });
    const box = h('div', { class: 'chart-box' + (short ? ' short' : '') }, canvas, h('div', { class: 'nodata', text: 'no data' }));
    charts.push({ canvas, box, config, points });
    return box;
  }
  function painted(canvas) {
    const ctx = canvas.getContext('2d');
    if (!ctx || canvas.width === 0 || canvas.height === 0) return 0;
    const d = ctx.getImageData(0, 0, canvas.width, canvas.height).data;
    let n = 0;
    for (let i = 3; i < d.length; i += 16) if (d[i] !== 0) n++;  // the alpha of every 4th pixel
    return n;
  }
  function drawCharts() {
    for (const c of charts) {
      c.canvas.dataset.kbPoints = String(c.points);
      c.canvas.dataset.kbPainted = '0';
      if (c.points === 0) { c.box.classList.add('empty'); continue; }
      try {
        if (typeof window.Chart !== 'function') throw new Error('Chart.js is missing from the page (window.Chart is not defined)');
        new window.Chart(c.canvas, c.config);
        c.canvas.dataset.kbPainted = String(painted(c.canvas));
      } catch (e) {
        c.box.classList.add('empty');
        c.box.querySelector('.nodata').textContent = 'chart not drawn: ' + (e && e.message ? e.message : e);
        fail(e && e.message ? e.message : e);
      }
    }
  }
  const pointCount = (datasets) => datasets.reduce((n, d) => n + d.data.length, 0);

  // "vs PyTorch eager 1.31x" badges for a kernel's comparison with PyTorch (k.vs_pytorch), red where it loses.
  function torchBadges(k) {
    const out = [];
    if (!k || !k.vs_pytorch) return out;
    for (const [key, label] of [['eager', 'PyTorch eager'], ['compile', 'torch.compile']]) {
      const s = k.vs_pytorch[key];
      if (!s) continue;
      const lose = s.geomean < 1;
      let text = `${speedup(s.geomean)} vs ${label}`;
      if (s.slower > 0) text += s.slower === s.shapes ? ' (slower at every shape)' : ` (slower at ${s.slower} of ${s.shapes} shapes)`;
      if (s.out_of_tolerance) text += ' (PyTorch out of tolerance)';
      out.push(h('span', { class: 'kb-torch ' + (lose ? 'lose' : 'win'), text }));
    }
    return out;
  }
  // What a progress curve is drawn against: device seconds (g.progress), or, with a model in the loop,
  // what the model spent (g.progress_model[key]: tokens, answered prompts, rounds).
  const progressAxes = {
    device: { title: 'device seconds (cumulative)', caption: 'Best so far against device seconds, per strategy',
      at: (x) => `${x.toFixed(2)} s`,
      note: 'Each new incumbent (a new_best event) is a step, at the device seconds spent by then on measured and '
        + 'rejected evaluations. Its speed-up is at the rung it was measured at: a drop means the incumbent was re-measured at a '
        + 'higher rung, on more shapes.' },
    tokens: { title: 'model tokens (cumulative, prompt and reply)', caption: 'Best so far against model tokens',
      at: (x) => `${Math.round(x)} tokens`,
      note: 'The same steps, at the tokens of the model exchanges journaled before each new incumbent (estimated where the '
        + 'endpoint reported no usage, as with the exchange client).' },
    answers: { title: 'prompts answered (cumulative)', caption: 'Best so far against answered prompts',
      at: (x) => `${Math.round(x)} answers`,
      note: 'The same steps, at the number of prompts the model had answered (a reply received) before each new incumbent.' },
    rounds: { title: 'round (run segment: 1, then one per resume)', caption: 'Best so far against rounds',
      at: (x) => `round ${Math.round(x)}`,
      note: 'The same steps, at the round that found each incumbent: a run is one round, and each resume (a campaign step) '
        + 'starts the next.' },
  };
  function progressFigure(D, problem, axisKey) {
    const axis = progressAxes[axisKey];
    const datasets = [];
    problem.groups.forEach((g, i) => {
      const color = palette[i % palette.length];
      const p = axisKey === 'device' ? g.progress : (g.progress_model ? g.progress_model[axisKey] : null);
      if (!p || p.median.length === 0) return;
      if (p.min && p.max) {
        datasets.push({ label: g.strategy + ' lowest', data: p.min, kbLegend: false, borderColor: rgba(color, 0.35),
          borderWidth: 1, pointRadius: 0, pointHoverRadius: 0, fill: false });
        datasets.push({ label: g.strategy + ' highest', data: p.max, kbLegend: false, borderColor: rgba(color, 0.35),
          backgroundColor: rgba(color, 0.16), borderWidth: 1, pointRadius: 0, pointHoverRadius: 0, fill: '-1' });
      }
      const n = g.seeds.length;
      datasets.push({
        label: n > 1 ? `${g.strategy}: median of ${n} seeds, band min–max` : `${g.strategy} (seed ${g.seeds[0]})`,
        data: p.median, borderColor: color, backgroundColor: color, borderWidth: 2, fill: false,
        pointRadius: (ctx) => (ctx.raw && ctx.raw.m ? 3 : 0), pointHoverRadius: 5,
      });
    });
    const config = {
      type: 'line',
      data: { datasets },
      options: {
        animation: false, responsive: true, maintainAspectRatio: false,
        interaction: { mode: 'nearest', axis: 'x', intersect: false },
        scales: {
          x: { type: 'linear', min: 0, title: { display: true, text: axis.title } },
          y: { title: { display: true, text: D.over === 'eager' ? 'speed-up over PyTorch eager (geometric mean over shapes)'
            : D.over === 'compile' ? 'speed-up over torch.compile (geometric mean over shapes)' : "speed-up over the problem's reference" } },
        },
        plugins: {
          legend: { position: 'bottom', labels: { boxWidth: 14, filter: (item, data) => data.datasets[item.datasetIndex].kbLegend !== false } },
          tooltip: { callbacks: { label: (ctx) => `${ctx.dataset.label}: ${speedup(ctx.parsed.y)} at ${axis.at(ctx.parsed.x)}`
            + (ctx.raw && ctx.raw.r ? ` (measured at ${ctx.raw.r})` : '') } },
        },
      },
    };
    const seedsNote = problem.groups.some((g) => g.seeds.length > 1)
      ? ' Several seeds of a strategy: the line is their median, the band spans the lowest and highest seed (over the seeds that have a best by then).'
      : '';
    return h('figure', { class: 'card', 'data-axis': axisKey },
      h('figcaption', { text: axis.caption }),
      chartBox(config, pointCount(datasets), false),
      h('p', { class: 'note', text: axis.note + seedsNote }));
  }

  const valueLabels = {
    id: 'kbValueLabels',
    afterDatasetsDraw(chart) {
      const ctx = chart.ctx;
      ctx.save();
      ctx.font = '11px system-ui, sans-serif';
      ctx.fillStyle = '#1d2433';
      ctx.textBaseline = 'middle';
      chart.getDatasetMeta(0).data.forEach((bar, i) => {
        const v = chart.data.datasets[0].data[i];
        ctx.fillText(String(v), bar.x + 4, bar.y);
      });
      ctx.restore();
    },
  };
  function funnelFigure(problem, g, i) {
    const values = g.funnel.values;
    const total = values.reduce((a, b) => a + b, 0);
    const color = palette[i % palette.length];
    const colors = g.funnel.labels.map((_, k) => rgba(color, 0.9 - 0.6 * k / Math.max(1, g.funnel.labels.length - 1)));
    const config = {
      type: 'bar',
      data: { labels: g.funnel.labels, datasets: [{ label: g.strategy, data: values, backgroundColor: colors, borderWidth: 0 }] },
      options: {
        animation: false, responsive: true, maintainAspectRatio: false, indexAxis: 'y',
        layout: { padding: { right: 28 } },
        scales: { x: { beginAtZero: true, ticks: { precision: 0 } } },
        plugins: { legend: { display: false } },
      },
      plugins: [valueLabels],
    };
    const n = g.seeds.length;
    const caption = n > 1 ? `Rung funnel: ${g.strategy}, summed over ${n} seeds` : `Rung funnel: ${g.strategy} (seed ${g.seeds[0]})`;
    return h('figure', { class: 'card' },
      h('figcaption', { text: caption }),
      chartBox(config, total === 0 ? 0 : values.length, true),
      h('p', { class: 'note', text: 'Distinct candidates proposed, gated, passing the gate and measured at each rung; promotions and new '
        + 'bests are events.' + (n > 1 ? ' Counts are summed over the seeds.' : '') }));
  }

  // ---- blocks ------------------------------------------------------------------------------------
  function runCard(D, j) {
    const J = D.journals[j];
    const kv = h('dl', { class: 'kv' });
    const add = (k, v) => kv.append(h('dt', { text: k }), h('dd', null, v));
    add('journal', h('code', { text: J.file }));
    add('strategy', J.strategy);
    add('seed', J.seed);
    add('evaluator', h('span', { class: 'mono', text: J.evaluator }));
    add('ladder', h('code', { text: J.ladder }));
    add('date', J.date + (J.version ? ` (kernelbrain ${J.version})` : ''));
    add('budget', J.budget);
    add('segments', `${J.segments}` + (J.segments > 1 ? ` (resumed ${J.segments - 1} time${J.segments > 2 ? 's' : ''})` : ' (never resumed)'));
    add('work', `${J.candidates} candidates, ${J.evaluations} evaluations, ${seconds(J.device_seconds)} of device time`
      + (J.exchanges ? `, ${J.exchanges} model exchanges` : ''));
    add('best', J.best ? h('span', null, h('b', { text: speedup(J.best.speedup) }), ` ${J.best.id} at ${J.best.rung}`) : h('span', { class: 'muted', text: 'none' }));
    if (J.stop) add('ended', J.stop);
    if (!J.baseline) add('note', 'no baseline line: the run ended before the reference was measured');
    return h('div', { class: 'run' }, h('h4', { text: `${J.strategy}, seed ${J.seed}` }), kv);
  }

  function kernelSummary(D, k, extra) {
    const kv = h('dl', { class: 'kv' });
    const add = (key, v) => kv.append(h('dt', { text: key }), h('dd', null, v));
    add('candidate', h('code', { text: k.id }));
    add('origin', originPill(k.origin));
    add('family', k.family || '(none)');
    add('parameters', h('code', { text: k.params || '(none)' }));
    add('run', `${k.strategy}, seed ${k.seed} (${D.journals[k.j].file})`);
    if (extra) extra(add);
    add('speed-up', k.best_speedup === null ? '–' : h('span', null, h('b', { text: speedup(k.best_speedup) }), ` at ${k.best_rung}`));
    add('highest rung', k.rung || '–');
    add('verdict', verdictNode(k));
    add('device time', seconds(k.device_seconds));
    if (k.resources) {
      const r = k.resources;
      add('resources', `${r.registers} registers, ${r.spill_bytes} spill bytes, ${r.shared_bytes} shared bytes`
        + (isNum(r.occupancy) && r.occupancy >= 0 ? `, occupancy ${(100 * r.occupancy).toFixed(1)}%` : ''));
    }
    return kv;
  }
  function timingsTable(k) {
    if (!k.timings || k.timings.length === 0) return null;
    const torch = k.timings.some((r) => isNum(r.eager) || isNum(r.compile));
    const head = h('tr', null, h('th', { text: 'shape' }), h('th', { class: 'num', text: 'reference' }),
      h('th', { class: 'num', text: 'this kernel' }), h('th', { class: 'num', text: '95% interval' }),
      h('th', { class: 'num', text: 'speed-up' }), h('th', { class: 'num', text: '% of floor' }));
    if (torch) head.append(h('th', { class: 'num', text: 'PyTorch eager' }), h('th', { class: 'num', text: 'torch.compile' }),
      h('th', { class: 'num', text: 'vs eager' }), h('th', { class: 'num', text: 'vs compile' }));
    const t = h('table', { class: 'kb-timings' }, h('thead', null, head));
    const tb = h('tbody');
    const ratio = (theirs, mine) => isNum(theirs) && mine > 0 ? speedup(theirs / mine) : '–';
    for (const r of k.timings) {
      const tr = h('tr', null, h('td', { text: r.shape_name || `#${r.shape}` }), h('td', { class: 'num', text: seconds(r.reference) }),
        h('td', { class: 'num', text: seconds(r.seconds) }), h('td', { class: 'num', text: `${seconds(r.low)} – ${seconds(r.high)}` }),
        h('td', { class: 'num', text: isNum(r.reference) && r.seconds > 0 ? speedup(r.reference / r.seconds) : '–' }),
        h('td', { class: 'num', text: isNum(r.floor) && r.seconds > 0 ? percent(100 * r.floor / r.seconds) : '–' }));
      if (torch) tr.append(h('td', { class: 'num', text: isNum(r.eager) ? seconds(r.eager) : '–' }),
        h('td', { class: 'num', text: isNum(r.compile) ? seconds(r.compile) : '–' }),
        h('td', { class: 'num', text: ratio(r.eager, r.seconds) }), h('td', { class: 'num', text: ratio(r.compile, r.seconds) }));
      tb.append(tr);
    }
    t.append(tb);
    return h('div', null, h('div', { class: 'muted', text: `Per-shape medians at ${k.timings_rung}` }), t);
  }
  function kernelBlock(D, k, extra) {
    const left = h('div', null, kernelSummary(D, k, extra));
    const tt = timingsTable(k);
    if (tt) left.append(h('div', { style: 'margin-top:8px' }, tt));
    const right = h('div', null);
    if (k.diagnosis) {
      right.append(h('div', { class: 'muted', text: `Profiler diagnosis (at ${k.diagnosis_rung})` }),
        h('pre', { class: 'text kb-diagnosis', text: k.diagnosis }));
    } else {
      right.append(h('div', { class: 'muted', text: 'No profiler diagnosis recorded for this kernel.' }));
    }
    if (k.profile && Object.keys(k.profile).length) {
      right.append(h('details', null, h('summary', { text: `Profile metrics (${Object.keys(k.profile).length}, at ${k.profile_rung})` }),
        metricsGrid(k.profile)));
    }
    const code = h('div', null);
    code.append(h('div', { class: 'muted', text: 'Source' }),
      k.source ? h('pre', { class: 'code kb-source', text: k.source }) : h('p', { class: 'muted', text: '(no source: this backend\'s candidates are parameters only)' }));
    let launch = k.launch;
    if (launch) { try { launch = compactJson(JSON.parse(launch), ''); } catch (e) { /* shown as written */ } }
    code.append(h('div', { class: 'muted', text: 'Launch plan' }),
      launch ? h('pre', { class: 'code kb-launch', text: launch }) : h('p', { class: 'muted', text: '(no launch plan)' }));
    return h('div', { class: 'block' }, h('div', { class: 'two' }, left, right), code);
  }

  function exchangeDetails(x, label) {
    const tokens = `${x.input_tokens} in / ${x.output_tokens} out${x.estimated ? ' (estimated)' : ''}`;
    const head = `${label}: ${x.model || 'model'}, ${tokens}, status ${x.status}` + (x.parse_status ? `, parse ${x.parse_status}` : '')
      + ` (${x.purpose})`;
    const d = h('details', { class: 'x kb-exchange' }, h('summary', { text: head }));
    const facts = [];
    if (x.parse_message) facts.push(`parser: ${x.parse_message}`);
    if (x.repairs && x.repairs.length) facts.push(`repairs: ${x.repairs.join(', ')}`);
    if (x.error) facts.push(`error: ${x.error}`);
    if (x.finish_reason) facts.push(`finish: ${x.finish_reason}`);
    if (isNum(x.latency_seconds)) facts.push(`latency ${x.latency_seconds.toFixed(2)} s`);
    if (facts.length) d.append(h('div', { class: 'muted', text: facts.join(' · ') }));
    d.append(h('details', null, h('summary', { text: `system prompt (${x.system.length} characters)` }), h('pre', { class: 'text kb-system', text: x.system })));
    d.append(h('details', null, h('summary', { text: `user prompt (${x.user.length} characters)` }), h('pre', { class: 'text kb-user', text: x.user })));
    d.append(h('details', null, h('summary', { text: `reply (${x.reply.length} characters)` }), h('pre', { class: 'text kb-reply', text: x.reply })));
    return d;
  }

  function lineageList(D, lineage) {
    const nodes = lineage.nodes;
    if (!nodes.length) return h('p', { class: 'muted', text: 'No lineage: the best kernel is not among the journal\'s proposals.' });
    let inner = null;
    for (let i = nodes.length - 1; i >= 0; i--) {
      const n = nodes[i];
      const last = i === nodes.length - 1;
      const card = h('div', { class: 'node' + (last ? ' best' : '') });
      card.append(h('div', { class: 'line' },
        h('b', { text: i === 0 ? (n.origin === 'seed' || !lineage.missing_parent ? 'root ' : '') : `step ${i} ` }),
        h('code', { text: n.id }), ' ', originPill(n.origin), ' ', h('span', { text: n.family ? `family ${n.family}` : '' }),
        last ? h('span', { class: 'pill', text: 'this kernel' }) : null));
      card.append(h('div', { class: 'line' }, 'parameters ', h('code', { text: n.params || '(none)' })));
      card.append(h('div', { class: 'line' },
        'best ', h('b', { text: speedup(n.best_speedup) }), n.best_rung ? ` at ${n.best_rung}` : '',
        ' · highest rung ', n.rung || '–', ' · verdict ', verdictNode(n),
        ' · ', h('span', { class: 'muted', text: `${n.other_children} other ${n.other_children === 1 ? 'child' : 'children'}` })));
      if (n.diagnosis) card.append(h('div', { class: 'line muted', text: 'diagnosis: ' + firstLine(n.diagnosis) }));
      for (const x of n.exchanges) card.append(exchangeDetails(x, 'written by a model'));
      if (n.attempts.length) {
        const d = h('details', { class: 'x' }, h('summary', { text: `${n.attempts.length} model attempt${n.attempts.length > 1 ? 's' : ''} to improve it that gave no candidate` }));
        n.attempts.forEach((x, k) => d.append(exchangeDetails(x, `attempt ${k + 1}`)));
        card.append(d);
      }
      const li = h('li', null, card);
      if (inner) li.append(inner);
      inner = h('ul', { class: 'lineage' }, li);
    }
    inner.classList.add('kb-lineage');
    const wrap = h('div', null);
    if (lineage.missing_parent) wrap.append(h('p', { class: 'muted', text: `The root's parent ${lineage.missing_parent} was not proposed in this journal.` }));
    wrap.append(inner);
    return wrap;
  }

  // ---- the candidate table -----------------------------------------------------------------------
  function candidateTable(D, problem) {
    const columns = [
      { key: 'run', label: 'run', get: (r) => `${D.journals[r.j].strategy} / ${D.journals[r.j].seed}` },
      { key: 'id', label: 'candidate', get: (r) => r.id, mono: true },
      { key: 'origin', label: 'origin', get: (r) => r.origin },
      { key: 'family', label: 'family', get: (r) => r.family },
      { key: 'params', label: 'parameters', get: (r) => r.params, mono: true },
      { key: 'rung', label: 'highest rung', get: (r) => r.rung_index, show: (r) => r.rung || '–', num: true },
      { key: 'verdict', label: 'verdict', get: (r) => verdictText(r) + ' ' + r.detail },
      { key: 'speedup', label: 'speed-up', get: (r) => r.speedup, show: (r) => speedup(r.speedup), num: true },
      { key: 'device', label: 'device s', get: (r) => r.device_seconds, show: (r) => isNum(r.device_seconds) ? r.device_seconds.toFixed(3) : '–', num: true },
      { key: 'diagnosis', label: 'diagnosis', get: (r) => firstLine(r.diagnosis) },
    ];
    const table = h('table', { class: 'cands kb-table' });
    const headRow = h('tr');
    const tbody = h('tbody');
    const trs = problem.rows.map((r) => {
      const tr = h('tr', { class: 'kb-cand' });
      tr.kbKeys = columns.map((c) => c.get(r));
      tr.kbText = columns.map((c) => String(c.get(r) ?? '')).join(' ').toLowerCase() + ' ' + (r.diagnosis || '').toLowerCase();
      for (const c of columns) {
        const td = h('td', { class: (c.num ? 'num' : '') + (c.mono ? ' mono' : '') });
        if (c.key === 'verdict') td.append(verdictNode(r));
        else if (c.key === 'origin') td.append(originPill(r.origin));
        else if (c.key === 'diagnosis') {
          const hasProfile = r.profile && Object.keys(r.profile).length;
          if (r.diagnosis || hasProfile) {
            const d = h('details', null, h('summary', { text: r.diagnosis ? firstLine(r.diagnosis) : 'profile' }));
            if (r.diagnosis) d.append(h('pre', { class: 'text', text: r.diagnosis }));
            if (hasProfile) d.append(h('div', { class: 'muted', text: `profile at ${r.profile_rung}` }), metricsGrid(r.profile));
            td.append(d);
          }
        } else td.textContent = c.show ? c.show(r) : String(c.get(r) ?? '');
        tr.append(td);
      }
      return tr;
    });
    columns.forEach((c, i) => {
      const th = h('th', { class: c.num ? 'num' : '', title: 'sort by ' + c.label, text: c.label });
      th.addEventListener('click', () => {
        const dir = th.dataset.dir === 'asc' ? 'desc' : 'asc';
        headRow.querySelectorAll('th').forEach((x) => delete x.dataset.dir);
        th.dataset.dir = dir;
        const sign = dir === 'asc' ? 1 : -1;
        trs.sort((a, b) => {
          const x = a.kbKeys[i], y = b.kbKeys[i];
          const xn = x === null || x === undefined || x === '' || (c.num && !isNum(x));
          const yn = y === null || y === undefined || y === '' || (c.num && !isNum(y));
          if (xn || yn) return xn === yn ? 0 : xn ? 1 : -1;  // blanks last either way
          return sign * (c.num ? x - y : String(x).localeCompare(String(y), 'en', { numeric: true }));
        });
        tbody.append(...trs);
      });
      headRow.append(th);
    });
    tbody.append(...trs);
    table.append(h('thead', null, headRow), tbody);
    const count = h('span', { class: 'muted', text: `${trs.length} candidates` });
    const input = h('input', { type: 'search', placeholder: 'filter rows (any text: id, origin, verdict, diagnosis …)', 'aria-label': 'filter candidates' });
    input.addEventListener('input', () => {
      const q = input.value.trim().toLowerCase();
      let shown = 0;
      for (const tr of trs) { tr.hidden = q !== '' && !tr.kbText.includes(q); if (!tr.hidden) shown++; }
      count.textContent = q ? `${shown} of ${trs.length} candidates` : `${trs.length} candidates`;
    });
    return h('div', null, h('div', { class: 'filter' }, input, count), h('div', { class: 'table-wrap' }, table),
      h('p', { class: 'muted', text: 'One row per candidate of each journal. Click a header to sort; the verdict and diagnosis cells open to '
        + 'the full text. Speed-up: the candidate\'s latest measured score; device s: over all its evaluations.' }));
  }

  // ---- the page ----------------------------------------------------------------------------------
  function problemSection(D, p, pi) {
    const s = h('section', { class: 'problem', id: 'p' + pi });
    s.append(h('h2', { text: p.name }));
    const lead = h('p', { class: 'lead' });
    if (p.best) {
      const badges = torchBadges(p.best);
      if (badges.length > 0) lead.append(h('span', { class: 'kb-headline' }, ...badges), h('br'));
      lead.append('Best: ', h('b', { text: speedup(p.best.incumbent_speedup) }), ` over the reference at ${p.best.incumbent_rung}, `,
        h('code', { text: p.best.id }), ' ', originPill(p.best.origin), ` (${p.best.strategy}, seed ${p.best.seed}). `);
      const pj = D.journals[p.best.j] && D.journals[p.best.j].pytorch;
      if (pj && pj.status === 'measured') {
        lead.append(`PyTorch: torch ${pj.torch} on ${pj.device}, measured by the search. `);
      } else if (pj) {
        lead.append(`PyTorch not measured: ${pj.why}. `);
      }
    } else {
      lead.append('No incumbent: no candidate was measured. ');
    }
    lead.append(`${p.journals.length} journal${p.journals.length > 1 ? 's' : ''}, ${p.rows.length} candidates.`);
    s.append(lead);
    const funnels = h('div', { class: 'funnels' });
    p.groups.forEach((g, i) => funnels.append(funnelFigure(p, g, i)));
    s.append(h('div', { class: 'charts' }, progressFigure(D, p, 'device'), funnels));
    if (p.groups.some((g) => g.progress_model)) {
      s.append(h('h3', { text: 'Against what the model spent' }));
      s.append(h('div', { class: 'charts model-axes' }, ...['tokens', 'answers', 'rounds'].map((k) => progressFigure(D, p, k))));
    }

    s.append(h('h3', { text: 'Runs' }));
    const runs = h('div', { class: 'runs' });
    for (const j of p.journals) runs.append(runCard(D, j));
    s.append(runs);

    if (p.best) {
      s.append(h('h3', { text: 'Best kernel' }));
      s.append(h('p', { class: 'muted', text: 'The incumbent each journal ended with (its last new_best); across journals, the one at the highest '
        + 'rung, then with the highest score.' }));
      s.append(kernelBlock(D, p.best, null));
      s.append(h('h3', { text: 'Lineage of the best kernel' }));
      s.append(lineageList(D, p.lineage));
    }
    if (p.model_best) {
      s.append(h('h3', { text: 'Best kernel a model wrote' }));
      s.append(h('p', { class: 'muted', text: 'The best kernel descends from no model-written candidate, so here is the best-measured one a model '
        + 'wrote (highest rung, then score), with its lineage and the prompts and replies that made it.' }));
      s.append(kernelBlock(D, p.model_best.kernel, null));
      s.append(h('h4', { text: 'Its lineage' }));
      s.append(lineageList(D, p.model_best.lineage));
    }
    s.append(h('h3', { text: 'Candidates' }));
    s.append(candidateTable(D, p));
    return s;
  }

  function main() {
    const D = JSON.parse(document.getElementById('kb-data').textContent);
    document.getElementById('kb-title').textContent = D.title;
    const chartVersion = typeof window.Chart === 'function' && window.Chart.version ? window.Chart.version : D.chartjs;
    document.getElementById('kb-meta').textContent = `${D.journals.length} journal${D.journals.length === 1 ? '' : 's'}, `
      + `${D.problems.length} problem${D.problems.length === 1 ? '' : 's'} · generated ${D.generated} by kernelbrain ${D.version} · `
      + `self-contained (Chart.js ${chartVersion} inlined), works offline`;
    const nav = document.getElementById('kb-nav');
    const mainEl = document.getElementById('kb-main');
    D.problems.forEach((p, i) => {
      nav.append(h('a', { href: '#p' + i }, p.name, h('b', { text: p.best ? speedup(p.best.incumbent_speedup) : '–' })));
      mainEl.append(problemSection(D, p, i));
    });
    document.getElementById('kb-footer').textContent = `Made by kernelbrain report from ${D.journals.map((j) => j.file).join(', ')}. `
      + `Plots: Chart.js ${chartVersion} (MIT License), inlined. See docs/report.md for how each figure is computed.`;
    drawCharts();
  }

  try {
    main();
  } catch (e) {
    fail(e && e.message ? e.message : e);
  }
  if (errors.length === 0) body.dataset.kbRendered = 'ok';
  else body.dataset.kbRendered = 'error';
})();
</script>
</body>
</html>
)KB_PAGE";

}  // namespace kernelbrain::report
