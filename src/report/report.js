"use strict";
(function () {
  const data = JSON.parse(document.getElementById("report-data").textContent);
  const NS = "http://www.w3.org/2000/svg";
  // One colour per series for as many signals as tracelake has built in, and then some:
  // a repeated colour would make two signals one in a stacked chart. The first ten (the
  // signals on by default) are hues apart; near ones (the greens) come only after them.
  const PALETTE = ["#4a7bd0", "#d35400", "#27ae60", "#8e44ad", "#c0392b", "#e377c2", "#7f8c8d", "#f1c40f",
    "#8c564b", "#17becf", "#bcbd22", "#16a085", "#1a237e", "#ff9896", "#98df8a", "#c5b0d5", "#ffbb78", "#9edae5",
    "#c49c94", "#2c3e50"];
  const SEVERITY_COLORS = { critical: "#b00020", high: "#e67e22", medium: "#f1c40f", low: "#95a5a6" };

  function el(tag, attrs, text) {
    const node = document.createElementNS(NS, tag);
    for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
    if (text !== undefined) node.textContent = text;
    return node;
  }

  // Width in pixels of a label of `n` characters at the charts' 11px, a little generous.
  const textWidth = (n) => n * 6.6;
  // Labels under the bars are turned this far, and so reach this far left and down.
  const LABEL_ANGLE = 35 * Math.PI / 180;

  // Stacked bars: one bar per category, one segment per series. The margins are sized to
  // the labels: the widest tick on the left, the longest category label below.
  function stackedBars(container, categories, series, colorOf) {
    const width = 560, top = 10, plotHeight = 196;
    const svg = el("svg", { viewBox: `0 0 ${width} ${plotHeight + 88}`, role: "img" });
    if (categories.length === 0) {
      svg.appendChild(el("text", { x: width / 2, y: plotHeight / 2, "text-anchor": "middle", class: "empty" }, "no data"));
      container.appendChild(svg);
      return;
    }
    const totals = categories.map((_, i) => series.reduce((sum, s) => sum + (s.values[i] || 0), 0));
    const axis = niceAxis(Math.max(1, ...totals));
    const labels = categories.map((cat) => shorten(String(cat), 18));
    const longest = Math.max(...labels.map((l) => l.length));
    const compact = compactFor(axis.max);
    const tickWidth = Math.max(...axis.ticks.map((t) => textWidth(compact(t).length)));
    const firstReach = textWidth(labels[0].length) * Math.cos(LABEL_ANGLE);
    const firstBand = (width - 10 - tickWidth) / categories.length;
    const left = Math.ceil(Math.max(tickWidth + 10, firstReach + 4 - firstBand / 2));
    const bottom = Math.ceil(20 + textWidth(longest) * Math.sin(LABEL_ANGLE));
    const height = top + plotHeight + bottom;
    const band = (width - left - 10) / categories.length;
    const barWidth = Math.max(2, band * 0.7);
    const scale = (v) => (v / axis.max) * (height - bottom - top);
    for (const tick of axis.ticks) {
      const y = height - bottom - scale(tick);
      svg.appendChild(el("line", { x1: left, y1: y, x2: width - 10, y2: y, stroke: tick === 0 ? "#99a" : "#e4e7ee" }));
      const label = el("text", { x: left - 6, y: y + 4, "text-anchor": "end", class: "tick" }, compact(tick));
      label.appendChild(el("title", {}, tick.toLocaleString("en-US")));
      svg.appendChild(label);
    }
    categories.forEach((cat, i) => {
      let y = height - bottom;
      const x = left + i * band + (band - barWidth) / 2;
      series.forEach((s, j) => {
        const v = s.values[i] || 0;
        if (v <= 0) return;
        const h = scale(v);
        y -= h;
        const rect = el("rect", { x, y, width: barWidth, height: h, fill: colorOf(s.name, j), class: "bar" });
        rect.appendChild(el("title", {}, `${cat} · ${s.name}: ${v}`));
        svg.appendChild(rect);
      });
      if (categories.length <= 16 || i % Math.ceil(categories.length / 16) === 0) {
        const label = el("text", { x: x + barWidth / 2, y: height - bottom + 14, "text-anchor": "end",
          transform: `rotate(-35 ${x + barWidth / 2} ${height - bottom + 14})` }, labels[i]);
        label.appendChild(el("title", {}, String(cat)));
        svg.appendChild(label);
      }
    });
    // The legend wraps onto as many rows as it needs.
    let lx = left, ly = height + 8;
    series.forEach((s, j) => {
      if (series.length === 1 && s.name === "") return;
      const w = 26 + s.name.length * 7.2;
      if (lx + w > width - 10 && lx > left) {
        lx = left;
        ly += 16;
      }
      svg.appendChild(el("rect", { x: lx, y: ly, width: 10, height: 10, fill: colorOf(s.name, j), class: "swatch" }));
      svg.appendChild(el("text", { x: lx + 14, y: ly + 9 }, s.name));
      lx += w;
    });
    const legend = !(series.length === 1 && series[0].name === "");
    svg.setAttribute("viewBox", `0 0 ${width} ${legend ? ly + 18 : height}`);
    container.appendChild(svg);
  }

  // Axis ticks at 1, 2 or 5 times a power of ten, the top tick at or above the largest value.
  function niceAxis(largest) {
    const raw = largest / 4;
    const power = Math.pow(10, Math.floor(Math.log10(raw)));
    const step = Math.max(1, [1, 2, 5, 10].map((m) => m * power).find((s) => s >= raw));
    const max = Math.ceil(largest / step) * step;
    const ticks = [];
    for (let t = 0; t <= max; t += step) ticks.push(t);
    return { max, ticks };
  }

  // 150000 → 150k, 2500000 → 2.5M: a tick label stays short at any size. All ticks of an
  // axis take the unit of its largest (0, 5k, 10k rather than 0, 5,000, 10k).
  function compactFor(largest) {
    const short = (v, unit) => `${Number(v.toFixed(1))}${unit}`;
    if (largest >= 1e6) return (n) => (n === 0 ? "0" : short(n / 1e6, "M"));
    if (largest >= 1e4) return (n) => (n === 0 ? "0" : short(n / 1e3, "k"));
    return (n) => n.toLocaleString("en-US");
  }

  // A label cut to `max` characters ends in an ellipsis; the whole label is its tooltip.
  function shorten(text, max) {
    return text.length <= max ? text : text.slice(0, max - 1) + "\u2026";
  }

  // One horizontal bar per label, for long labels such as tool names.
  function horizontalBars(container, labels, values, color) {
    const width = 560, left = 190, row = 22, top = 6;
    const right = Math.ceil(Math.max(24, ...values.map((v) => textWidth(v.toLocaleString("en-US").length) + 8)));
    const height = top + Math.max(1, labels.length) * row + 24;
    const svg = el("svg", { viewBox: `0 0 ${width} ${height}`, role: "img" });
    if (labels.length === 0) {
      svg.appendChild(el("text", { x: width / 2, y: 40, "text-anchor": "middle", class: "empty" }, "no data"));
      svg.setAttribute("viewBox", `0 0 ${width} 80`);
      container.appendChild(svg);
      return;
    }
    const axis = niceAxis(Math.max(1, ...values));
    const compact = compactFor(axis.max);
    const plot = width - left - right;
    const bottom = top + labels.length * row;
    for (const tick of axis.ticks) {
      const x = left + (tick / axis.max) * plot;
      svg.appendChild(el("line", { x1: x, y1: top, x2: x, y2: bottom, stroke: tick === 0 ? "#99a" : "#e4e7ee" }));
      const label = el("text", { x, y: bottom + 14, "text-anchor": "middle", class: "tick" }, compact(tick));
      label.appendChild(el("title", {}, tick.toLocaleString("en-US")));
      svg.appendChild(label);
    }
    labels.forEach((name, i) => {
      const y = top + i * row;
      const label = el("text", { x: left - 8, y: y + row / 2 + 4, "text-anchor": "end" }, shorten(name, 30));
      label.appendChild(el("title", {}, name));
      svg.appendChild(label);
      const w = (values[i] / axis.max) * plot;
      const rect = el("rect", { x: left, y: y + 3, width: Math.max(1, w), height: row - 6, fill: color, class: "bar" });
      rect.appendChild(el("title", {}, `${name}: ${values[i]}`));
      svg.appendChild(rect);
      svg.appendChild(el("text", { x: left + w + 4, y: y + row / 2 + 4 }, values[i].toLocaleString("en-US")));
    });
    container.appendChild(svg);
  }

  function pivot(rows, catKey, seriesKey, valueKey) {
    const categories = [...new Set(rows.map((r) => String(r[catKey])))];
    const names = [...new Set(rows.map((r) => String(r[seriesKey])))];
    const series = names.map((name) => ({
      name,
      values: categories.map((c) => rows.filter((r) => String(r[catKey]) === c && String(r[seriesKey]) === name)
        .reduce((sum, r) => sum + Number(r[valueKey]), 0)),
    }));
    return { categories, series };
  }

  function draw(id, build) {
    const container = document.getElementById(id);
    build(container);
    container.dataset.rendered = "true";
  }

  const charts = data.charts;
  const byPalette = (_, j) => PALETTE[j % PALETTE.length];
  draw("chart-per-day", (c) => {
    const p = pivot(charts.findingsOverTime, "bucket", "signal", "count");
    stackedBars(c, p.categories, p.series, byPalette);
  });
  draw("chart-agent-severity", (c) => {
    const p = pivot(charts.byAgentSeverity, "agent", "severity", "count");
    const order = ["critical", "high", "medium", "low"];
    p.series.sort((a, b) => order.indexOf(a.name) - order.indexOf(b.name));
    stackedBars(c, p.categories, p.series, (name, j) => SEVERITY_COLORS[name] || byPalette(name, j));
  });
  draw("chart-tools", (c) => {
    const rows = charts.failingTools;
    horizontalBars(c, rows.map((r) => String(r.tool)), rows.map((r) => Number(r.failures)), "#c0392b");
  });
  draw("chart-chain-lengths", (c) => {
    const rows = charts.chainLengths;
    stackedBars(c, rows.map((r) => r.bucket), [{ name: "", values: rows.map((r) => Number(r.chains)) }], () => "#4a7bd0");
  });

  // A forest plot: one row per factor value, its lift as a dot and its interval as a
  // line, on a log scale around lift 1 (as often as the others). A lift of 0 (no session
  // with the value failed) is a hollow dot at the left edge; an unbounded one (no other
  // session failed) an arrow at the right edge: neither has a place on a log scale.
  function forestPlot(container, rows) {
    const width = 640, row = 22, top = 6, right = 24;
    if (rows.length === 0) {
      const svg = el("svg", { viewBox: `0 0 ${width} 80`, role: "img" });
      svg.appendChild(el("text", { x: width / 2, y: 40, "text-anchor": "middle", class: "empty" }, "no factor value tested"));
      container.appendChild(svg);
      return;
    }
    const labels = rows.map((r) => shorten(r.label, 44));
    const left = Math.ceil(Math.min(300, Math.max(...labels.map((l) => textWidth(l.length)), 40) + 12));
    const bounded = rows.filter((r) => r.lift !== null);
    const legend = [];
    if (rows.some((r) => r.lift === 0)) legend.push("○ at the left edge: no session with the value failed (lift 0)");
    if (rows.some((r) => r.lift === null)) legend.push("▶ at the right edge: no other session failed (lift unbounded)");
    const height = top + rows.length * row + 36 + 14 * legend.length;
    const svg = el("svg", { viewBox: `0 0 ${width} ${height}`, role: "img" });
    // The axis reaches the lowest lift or interval end above 0; intervals that reach 0 are
    // drawn from its lowest tick.
    const floor = 1 / 1024;
    const positive = bounded.flatMap((r) => [r.lift, r.low, r.high]).filter((v) => v > 0);
    const lowest = Math.max(floor, Math.min(1, ...positive));
    const highest = Math.max(2, ...bounded.map((r) => r.high));
    const lo = Math.pow(2, Math.floor(Math.log2(lowest)));
    const hi = Math.pow(2, Math.ceil(Math.log2(highest)));
    const plot = width - left - right;
    const x = (v) => left + ((Math.log2(Math.max(v, lo)) - Math.log2(lo)) / (Math.log2(hi) - Math.log2(lo))) * plot;
    const bottom = top + rows.length * row;
    // Every tick labelled while they have room (28 px), else every other one, 1 among them.
    const every = plot / Math.log2(hi / lo) < 28 ? 2 : 1;
    for (let t = lo; t <= hi + 1e-9; t *= 2) {
      svg.appendChild(el("line", { x1: x(t), y1: top, x2: x(t), y2: bottom, stroke: t === 1 ? "#556" : "#e4e7ee",
        "stroke-dasharray": t === 1 ? "4 3" : "" }));
      if (Math.round(Math.log2(t)) % every !== 0) continue;
      svg.appendChild(el("text", { x: x(t), y: bottom + 14, "text-anchor": "middle", class: "tick" }, t >= 1 ? String(t) : `1/${1 / t}`));
    }
    svg.appendChild(el("text", { x: left + plot / 2, y: bottom + 27, "text-anchor": "middle", class: "tick" }, "lift of the failure rate"));
    legend.forEach((line, i) => svg.appendChild(el("text", { x: left, y: bottom + 42 + 14 * i, class: "tick legend" }, line)));
    const percent = (v) => `${(100 * v).toFixed(1)} %`;
    rows.forEach((r, i) => {
      const y = top + i * row + row / 2;
      const label = el("text", { x: left - 8, y: y + 4, "text-anchor": "end" }, labels[i]);
      label.appendChild(el("title", {}, r.label));
      svg.appendChild(label);
      const color = r.q < 0.05 ? (r.lift === null || r.lift >= 1 ? "#c0392b" : "#27ae60") : "#7f8c8d";
      let mark;
      if (r.lift === null) {
        const tip = left + plot + 12;
        mark = el("path", { d: `M${tip - 10},${y - 5.5} L${tip},${y} L${tip - 10},${y + 5.5} Z`, fill: color, class: "dot unbounded" });
        mark.appendChild(el("title", {}, `${r.label}: lift unbounded (no other session failed), failure rate ${percent(r.rate)}, ${r.sessions} sessions, q ${r.q.toPrecision(2)}`));
      } else {
        svg.appendChild(el("line", { x1: x(r.low), y1: y, x2: x(r.high), y2: y, stroke: color, "stroke-width": 2 }));
        const none = r.lift === 0;
        mark = el("circle", { cx: x(r.lift), cy: y, r: 4.5, fill: none ? "#fff" : color, stroke: color, "stroke-width": none ? 2 : 0, class: none ? "dot none-failed" : "dot" });
        mark.appendChild(el("title", {}, `${r.label}: lift ${r.lift.toFixed(2)} (${r.low.toFixed(2)}–${r.high.toFixed(2)}), ${r.sessions} sessions, q ${r.q.toPrecision(2)}`));
      }
      svg.appendChild(mark);
    });
    container.appendChild(svg);
  }

  if (document.getElementById("chart-factors")) draw("chart-factors", (c) => forestPlot(c, data.factors));

  const MOOD_COLORS = { frustrated: "#c0392b", excited: "#8e44ad", tense: "#e67e22", productive: "#27ae60", exploratory: "#4a7bd0" };
  data.moods.forEach((rows, i) => {
    if (!document.getElementById(`chart-mood-${i}`)) return;
    draw(`chart-mood-${i}`, (c) => {
      const p = pivot(rows, "day", "mood", "count");
      stackedBars(c, p.categories, p.series, (name, j) => MOOD_COLORS[name] || byPalette(name, j));
    });
  });

  function openTarget() {
    const target = location.hash && document.getElementById(location.hash.slice(1));
    if (target && target.tagName === "DETAILS") target.open = true;
  }
  window.addEventListener("hashchange", openTarget);
  openTarget();
})();
