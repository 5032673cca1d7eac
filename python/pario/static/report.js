// pario trace report: the interactive timeline. Data: the JSON in #data (tracereport.py's
// timeline_data, columnar); d3 (d3-zoom, d3-scale) is inlined in the page before this file.
// window.pario exposes the page's functions (zoomBy, zoomTo, search, select, pixelOf, ...)
// for the tests that drive the page in headless chromium.
(function () {
  "use strict";
  const D = JSON.parse(document.getElementById("data").textContent);
  const S = D.spans, N = S.t.length;
  const canvas = document.getElementById("tl"), ctx = canvas.getContext("2d");
  const LEFT = 210, RIGHT = 10, LANE = 13, GAP = 7, TOP = 22, W = canvas.width;
  const TYPE_COLORS = {
    "write call": "#e15759", "read call": "#4e79a7", "open/close": "#9c755f", "sync": "#b07aa1",
    "set_view": "#76b7b2", "wait/test": "#bab0ac", "other call": "#7f7f7f", "coll": "#59a14f",
    "sieve": "#8cd17d", "sfp": "#d4a6c8", "async": "#86bcb6", "driver": "#f28e2b", "view": "#499894",
    "net": "#ff9d9a", "storage": "#edc948"
  };
  const FILE_COLORS = d3.schemeTableau10.concat(d3.schemeSet3);

  function typeOf(name, cat) {
    if (cat !== "api") return cat in TYPE_COLORS ? cat : "other call";
    if (/^MPI_File_i?write/.test(name)) return "write call";
    if (/^MPI_File_i?read/.test(name)) return "read call";
    if (name === "MPI_File_open" || name === "MPI_File_close") return "open/close";
    if (name === "MPI_File_sync") return "sync";
    if (name === "MPI_File_set_view") return "set_view";
    if (/^MPI_(Wait|Test)/.test(name)) return "wait/test";
    return "other call";
  }

  // rows: client rows, a gap, server rows; a lane per nesting depth
  const rowY = [];
  let y = TOP, prevKind = null;
  D.rows.forEach(r => {
    if (prevKind && r.kind !== prevKind) y += 2 * GAP;
    rowY.push(y); y += r.lanes * LANE + GAP; prevKind = r.kind;
  });
  canvas.height = y + 6;

  // spans of each (row, depth), in time order: siblings do not overlap, so ends are ordered too
  const lanes = new Map();
  for (let i = 0; i < N; i++) {
    const k = S.row[i] * 1024 + S.depth[i];
    let a = lanes.get(k);
    if (!a) lanes.set(k, a = []);
    a.push(i);
  }
  for (const a of lanes.values()) a.sort((p, q) => S.t[p] - S.t[q]);
  const typeColor = {};
  const spanColorType = new Array(N), spanColorFile = new Array(N);
  const typesSeen = new Set(), filesSeen = new Set();
  for (let i = 0; i < N; i++) {
    const key = S.name[i] + "/" + S.cat[i];
    if (!(key in typeColor)) typeColor[key] = typeOf(D.names[S.name[i]], D.cats[S.cat[i]]);
    const ty = typeColor[key];
    typesSeen.add(ty);
    spanColorType[i] = TYPE_COLORS[ty];
    if (S.file[i]) filesSeen.add(S.file[i]);
    spanColorFile[i] = S.file[i] ? FILE_COLORS[(S.file[i] - 1) % FILE_COLORS.length] : "#d0d0d0";
  }
  const byFlow = new Map();
  for (let i = 0; i < N; i++) if (S.flow[i]) {
    let a = byFlow.get(S.flow[i]);
    if (!a) byFlow.set(S.flow[i], a = []);
    a.push(i);
  }

  const x0 = d3.scaleLinear().domain([0, Math.max(1, D.duration)]).range([LEFT, W - RIGHT]);
  let x = x0.copy(), colorBy = "type", match = null, nMatch = 0, selected = -1, related = [], lastMerged = 0;

  function color(i) {
    if (match && !match[i]) return "#ececec";
    return colorBy === "file" ? spanColorFile[i] : spanColorType[i];
  }
  const fmt = ns => ns >= 1e9 ? +(ns / 1e9).toFixed(6) + " s" : ns >= 1e6 ? +(ns / 1e6).toFixed(3) + " ms"
    : ns >= 1e3 ? +(ns / 1e3).toFixed(3) + " us" : +ns.toFixed(1) + " ns";

  function firstVisible(a, t0) {
    let lo = 0, hi = a.length;
    while (lo < hi) { const m = (lo + hi) >> 1, i = a[m]; if (S.t[i] + S.d[i] < t0) lo = m + 1; else hi = m; }
    return lo;
  }

  function draw() {
    ctx.clearRect(0, 0, W, canvas.height);
    const [t0, t1] = x.domain();
    ctx.font = "10px sans-serif"; ctx.fillStyle = "#333"; ctx.textAlign = "center";
    for (const t of x.ticks(8)) { ctx.fillText(fmt(t), x(t), 12); ctx.fillRect(x(t), 15, 1, 4); }
    ctx.textAlign = "left";
    let lastProc = null;
    D.rows.forEach((r, k) => {
      ctx.fillStyle = "#e0e0e0"; ctx.fillRect(0, rowY[k] - 3, W, 1);
      ctx.fillStyle = "#111"; ctx.font = "bold 11px sans-serif";
      if (r.proc !== lastProc) ctx.fillText(r.proc, 4, rowY[k] + 10);
      ctx.font = "10px sans-serif"; ctx.fillStyle = "#555"; ctx.textAlign = "right";
      ctx.fillText(r.thread, LEFT - 6, rowY[k] + 10); ctx.textAlign = "left";
      lastProc = r.proc;
    });
    ctx.save(); ctx.beginPath(); ctx.rect(LEFT, 0, W - LEFT - RIGHT, canvas.height); ctx.clip();
    let merged = 0;
    for (const [k, a] of lanes) {
      const yy = rowY[Math.floor(k / 1024)] + (k % 1024) * LANE;
      let colPx = -1, colN = 0, colColor = null;
      const flush = () => {
        if (colN) { ctx.fillStyle = colColor; ctx.fillRect(colPx, yy, 1, LANE - 1); if (colN > 1) merged += colN; }
        colN = 0;
      };
      for (let j = firstVisible(a, t0); j < a.length; j++) {
        const i = a[j];
        if (S.t[i] > t1) break;
        const xa = x(S.t[i]), xb = x(S.t[i] + S.d[i]);
        if (xb - xa < 1) {  // level of detail: one bar per pixel column
          const px = Math.floor(xa);
          if (px !== colPx) { flush(); colPx = px; colColor = color(i); }
          else if (match && match[i]) colColor = color(i);
          colN += S.n ? S.n[i] : 1;  // a bar of spans merged when the page was made counts them
          continue;
        }
        flush(); colPx = -1;
        if (S.n && S.n[i] > 1) merged += S.n[i];  // merged when the page was made: no zoom separates them
        ctx.fillStyle = color(i); ctx.fillRect(xa, yy, xb - xa >= 3 ? xb - xa - 1 : xb - xa, LANE - 1);  // a gap between neighbours
        if (xb - xa > 50) {
          ctx.fillStyle = "#000"; ctx.font = "9px sans-serif";
          ctx.fillText(D.names[S.name[i]], Math.max(xa, LEFT) + 2, yy + 9, Math.min(xb, W) - Math.max(xa, LEFT) - 4);
        }
      }
      flush();
    }
    const outline = (i, style, w) => {
      const [px, py] = pixelOf(i);
      ctx.strokeStyle = style; ctx.lineWidth = w;
      ctx.strokeRect(Math.max(x(S.t[i]), LEFT - 2) - 1, py - LANE / 2, Math.max(2, x(S.t[i] + S.d[i]) - x(S.t[i])) + 2, LANE);
    };
    related.forEach(i => outline(i, "#d00", 2));
    if (selected >= 0) outline(selected, "#000", 2);
    ctx.restore();
    lastMerged = merged;
    document.getElementById("lod").textContent = merged
      ? merged + " spans merged at this zoom (narrower than a pixel: one bar per pixel column; zoom in to separate them" +
        (S.n ? ", except those the page merged when it was made" : "") + ")" : "";
    document.getElementById("range").textContent = "showing " + fmt(Math.max(0, t0)) + " .. " + fmt(t1);
  }

  function pixelOf(i) {
    const a = Math.max(S.t[i], x.domain()[0]), b = Math.min(S.t[i] + S.d[i], x.domain()[1]);
    return [Math.max(LEFT, x((a + b) / 2)), rowY[S.row[i]] + S.depth[i] * LANE + LANE / 2];
  }

  function pickAt(px, py) {
    for (let r = D.rows.length - 1; r >= 0; r--) {
      if (py < rowY[r]) continue;
      const a = lanes.get(r * 1024 + Math.floor((py - rowY[r]) / LANE));
      if (!a) return -1;
      const t = x.invert(px), tol = (x.domain()[1] - x.domain()[0]) / (W - LEFT) * 2;
      for (let j = firstVisible(a, t - tol); j < a.length && S.t[a[j]] <= t + tol; j++) return a[j];
      return -1;
    }
    return -1;
  }

  function cell(tr, text, tag) { const c = document.createElement(tag || "td"); c.textContent = text; tr.appendChild(c); }
  function spanRow(tbody, i) {
    const tr = document.createElement("tr"), r = D.rows[S.row[i]];
    [D.names[S.name[i]] + (S.n && S.n[i] > 1 ? " and " + (S.n[i] - 1) + " more (merged)" : ""), r.proc + " / " + r.thread, fmt(S.t[i]), fmt(S.d[i]), String(S.bytes[i]),
     S.offset[i] >= 0 ? String(S.offset[i]) : "", D.files[S.file[i]], S.flow[i] ? D.flows[S.flow[i]] : ""]
      .forEach(v => cell(tr, v));
    tbody.appendChild(tr);
  }

  function select(i) {
    selected = i; related = i >= 0 && S.flow[i] ? byFlow.get(S.flow[i]).filter(j => j !== i) : [];
    const box = document.getElementById("details");
    box.textContent = "";
    if (i < 0) { box.textContent = "Click a span in the timeline."; draw(); return; }
    const t = document.createElement("table"), head = document.createElement("tr"), body = document.createElement("tbody");
    ["span", "process / thread", "start", "duration", "bytes", "offset", "file", "request id"].forEach(h => cell(head, h, "th"));
    t.appendChild(head); t.appendChild(body); spanRow(body, i); box.appendChild(t);
    if (related.length) {
      const p = document.createElement("p");
      p.textContent = related.length + " span(s) with the same request id (outlined in red):";
      box.appendChild(p);
      const t2 = document.createElement("table"), b2 = document.createElement("tbody");
      t2.className = "related"; t2.appendChild(b2); related.forEach(j => spanRow(b2, j)); box.appendChild(t2);
    }
    draw();
  }

  function search(q) {
    q = (q || "").trim().toLowerCase();
    document.getElementById("search").value = q;
    if (!q) { match = null; nMatch = 0; document.getElementById("found").textContent = ""; draw(); return 0; }
    const nm = D.names.map(s => s.toLowerCase().includes(q)), fm = D.files.map(s => s.toLowerCase().includes(q));
    match = new Uint8Array(N); nMatch = 0;
    for (let i = 0; i < N; i++) if (nm[S.name[i]] || fm[S.file[i]]) { match[i] = 1; nMatch++; }
    document.getElementById("found").textContent = nMatch + " span(s) match";
    draw();
    return nMatch;
  }

  function legend() {
    const box = document.getElementById("legend");
    box.textContent = "";
    const items = colorBy === "file"
      ? [...filesSeen].sort((a, b) => a - b).map(f => [D.files[f], FILE_COLORS[(f - 1) % FILE_COLORS.length]]).concat([["no file", "#d0d0d0"]])
      : Object.keys(TYPE_COLORS).filter(t => typesSeen.has(t)).map(t => [t, TYPE_COLORS[t]]);
    items.forEach(([label, c]) => {
      const s = document.createElement("span"), i = document.createElement("i");
      i.style.background = c; s.appendChild(i); s.appendChild(document.createTextNode(label)); box.appendChild(s);
    });
  }

  const zoom = d3.zoom().scaleExtent([1, 1e9])
    .extent([[LEFT, 0], [W - RIGHT, canvas.height]]).translateExtent([[LEFT, 0], [W - RIGHT, canvas.height]])
    .on("zoom", ev => { x = ev.transform.rescaleX(x0); draw(); });
  const sel = d3.select(canvas).call(zoom).on("dblclick.zoom", null);
  canvas.addEventListener("click", ev => {
    const r = canvas.getBoundingClientRect();
    select(pickAt(ev.clientX - r.left, ev.clientY - r.top));
  });
  const zoomBy = k => sel.call(zoom.scaleBy, k);
  function zoomTo(t0, t1) {
    const k = (x0.domain()[1] - x0.domain()[0]) / Math.max(1, t1 - t0);
    sel.call(zoom.transform, d3.zoomIdentity.translate(LEFT - k * x0(t0), 0).scale(k));
  }
  document.getElementById("zin").onclick = () => zoomBy(2);
  document.getElementById("zout").onclick = () => zoomBy(0.5);
  document.getElementById("zreset").onclick = () => sel.call(zoom.transform, d3.zoomIdentity);
  document.getElementById("search").addEventListener("input", ev => search(ev.target.value));
  document.getElementById("colorby").addEventListener("change", ev => { colorBy = ev.target.value; legend(); draw(); });

  legend();
  draw();
  window.pario = {
    zoomBy, zoomTo, search, select, pickAt, pixelOf, draw, xOf: t => x(t),
    spanStart: i => S.t[i], spanEnd: i => S.t[i] + S.d[i],
    visibleRange: () => x.domain(), merged: () => lastMerged, matches: () => nMatch,
    selected: () => selected, related: () => related.slice(), spans: N,
    find: (name, row, nth) => {  // the nth (from 0) span of that name, on that row if given
      for (let i = 0, n = nth || 0; i < N; i++) if (D.names[S.name[i]] === name && (row === undefined || row === null || S.row[i] === row) && n-- === 0) return i;
      return -1;
    },
    setColorBy: v => { const s = document.getElementById("colorby"); s.value = v; s.dispatchEvent(new Event("change")); }
  };
})();
