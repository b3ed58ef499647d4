"use strict";
(function () {
  const data = JSON.parse(document.getElementById("report-data").textContent);
  const NS = "http://www.w3.org/2000/svg";
  const PALETTE = ["#4a7bd0", "#d35400", "#27ae60", "#8e44ad", "#c0392b", "#16a085", "#7f8c8d", "#f1c40f"];
  const SEVERITY_COLORS = { critical: "#b00020", high: "#e67e22", medium: "#f1c40f", low: "#95a5a6" };

  function el(tag, attrs, text) {
    const node = document.createElementNS(NS, tag);
    for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
    if (text !== undefined) node.textContent = text;
    return node;
  }

  // Stacked bars: one bar per category, one segment per series.
  function stackedBars(container, categories, series, colorOf) {
    const width = 560, height = 270, left = 44, bottom = 64, top = 10;
    const svg = el("svg", { viewBox: `0 0 ${width} ${height + 24}`, role: "img" });
    if (categories.length === 0) {
      svg.appendChild(el("text", { x: width / 2, y: height / 2, "text-anchor": "middle", class: "empty" }, "no data"));
      container.appendChild(svg);
      return;
    }
    const totals = categories.map((_, i) => series.reduce((sum, s) => sum + (s.values[i] || 0), 0));
    const max = Math.max(1, ...totals);
    const band = (width - left - 10) / categories.length;
    const barWidth = Math.max(2, band * 0.7);
    const scale = (v) => (v / max) * (height - bottom - top);
    svg.appendChild(el("line", { x1: left, y1: height - bottom, x2: width - 10, y2: height - bottom, stroke: "#99a" }));
    for (const tick of [0, Math.round(max / 2), max]) {
      const y = height - bottom - scale(tick);
      svg.appendChild(el("text", { x: left - 6, y: y + 4, "text-anchor": "end" }, String(tick)));
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
          transform: `rotate(-35 ${x + barWidth / 2} ${height - bottom + 14})` }, String(cat).slice(0, 18));
        svg.appendChild(label);
      }
    });
    // The legend wraps onto as many rows as it needs.
    let lx = left, ly = height + 8;
    series.forEach((s, j) => {
      if (series.length === 1 && s.name === "") return;
      const w = 24 + s.name.length * 6.5;
      if (lx + w > width - 10 && lx > left) {
        lx = left;
        ly += 16;
      }
      svg.appendChild(el("rect", { x: lx, y: ly, width: 10, height: 10, fill: colorOf(s.name, j) }));
      svg.appendChild(el("text", { x: lx + 14, y: ly + 9 }, s.name));
      lx += w;
    });
    svg.setAttribute("viewBox", `0 0 ${width} ${ly + 18}`);
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
    stackedBars(c, rows.map((r) => r.tool), [{ name: "", values: rows.map((r) => Number(r.failures)) }], () => "#c0392b");
  });
  draw("chart-chain-lengths", (c) => {
    const rows = charts.chainLengths;
    stackedBars(c, rows.map((r) => r.bucket), [{ name: "", values: rows.map((r) => Number(r.chains)) }], () => "#4a7bd0");
  });

  function openTarget() {
    const target = location.hash && document.getElementById(location.hash.slice(1));
    if (target && target.tagName === "DETAILS") target.open = true;
  }
  window.addEventListener("hashchange", openTarget);
  openTarget();
})();
