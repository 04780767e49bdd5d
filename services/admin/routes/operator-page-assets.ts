/**
 * The operator page's markup, style and script (GET /operator, operator-page.ts). Plain DOM, no framework, no
 * CDN, nothing from another host: the script reads the admin API of its own origin (GET /inventory, /status,
 * /pnl, /ledger) with the browser's Basic credentials, and draws bars and an inline SVG chart. The style and
 * script are inline and allowed by their SHA-256 in the page's Content-Security-Policy; nothing else runs.
 */

export const OPERATOR_CSS = `
:root { color-scheme: light; --ok: #2f855a; --low: #b7791f; --critical: #c53030; --muted: #4a5568; }
* { box-sizing: border-box; }
body { font: 14px/1.4 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; margin: 0; background: #f7fafc; color: #1a202c; }
header { display: flex; align-items: baseline; gap: 16px; padding: 12px 20px; background: #1a365d; color: #fff; }
header h1 { font-size: 18px; margin: 0; }
header .updated { color: #bee3f8; font-size: 12px; }
main { display: grid; grid-template-columns: repeat(auto-fit, minmax(560px, 1fr)); gap: 16px; padding: 16px 20px; }
section { background: #fff; border: 1px solid #e2e8f0; border-radius: 6px; padding: 12px 16px; }
section h2 { font-size: 15px; margin: 0 0 10px; }
.note { color: var(--muted); font-size: 12px; }
.error { color: var(--critical); }
#alerts ul { list-style: none; margin: 0; padding: 0; }
#alerts li { padding: 6px 8px; margin-bottom: 6px; border-left: 4px solid var(--low); background: #fffaf0; }
#alerts li.critical { border-color: var(--critical); background: #fff5f5; }
.pool h3 { font-size: 13px; margin: 8px 0 4px; }
.chain-row { display: grid; grid-template-columns: 110px 1fr 250px; gap: 10px; align-items: center; margin: 4px 0; }
.bar { position: relative; height: 16px; background: #edf2f7; border-radius: 3px; overflow: hidden; }
.bar .fill { position: absolute; left: 0; top: 0; bottom: 0; background: var(--ok); }
.bar .fill.low { background: var(--low); }
.bar .fill.critical { background: var(--critical); }
.bar .mark { position: absolute; top: 0; bottom: 0; width: 2px; background: #1a202c; }
.bar .mark.minimum { background: var(--critical); }
.figures { font-size: 12px; color: var(--muted); }
.totals { display: flex; flex-wrap: wrap; gap: 14px; margin-bottom: 8px; }
.totals div { font-size: 12px; color: var(--muted); }
.totals b { display: block; font-size: 16px; color: #1a202c; }
.range button { margin-left: 6px; }
.range button[aria-pressed="true"] { font-weight: bold; }
svg { width: 100%; height: auto; display: block; }
svg .pos { fill: var(--ok); }
svg .neg { fill: var(--critical); }
svg .axis { stroke: #a0aec0; stroke-width: 1; }
svg text { font-size: 10px; fill: var(--muted); }
table { border-collapse: collapse; width: 100%; font-size: 12px; }
th, td { text-align: left; padding: 4px 6px; border-bottom: 1px solid #edf2f7; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
td.neg { color: var(--critical); }
code { font-size: 12px; }
`;

export const OPERATOR_JS = `
"use strict";
(function () {
  var DAY = 86400, HOUR = 3600;
  var view = { step: DAY, buckets: 30 };

  function el(tag, attrs, children) {
    var node = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) { node.setAttribute(k, attrs[k]); });
    (children || []).forEach(function (c) { node.append(c); });
    return node;
  }
  function svg(tag, attrs, children) {
    var node = document.createElementNS("http://www.w3.org/2000/svg", tag);
    Object.keys(attrs || {}).forEach(function (k) { node.setAttribute(k, String(attrs[k])); });
    (children || []).forEach(function (c) { node.append(c); });
    return node;
  }
  function usd(n) {
    if (n === null || n === undefined) return "unpriced";
    var abs = Math.abs(n);
    var digits = abs !== 0 && abs < 1 ? 4 : 2;
    return (n < 0 ? "-$" : "$") + abs.toLocaleString("en-US", { minimumFractionDigits: digits, maximumFractionDigits: digits });
  }
  function units(amount, decimals) {
    var value = BigInt(amount), scale = BigInt(10) ** BigInt(decimals);
    var whole = value / scale, frac = (value % scale).toString().padStart(decimals, "0").slice(0, 2);
    return whole.toLocaleString("en-US") + (decimals > 0 ? "." + frac : "");
  }
  function short(hex) { return hex.length > 14 ? hex.slice(0, 8) + "…" + hex.slice(-4) : hex; }
  function day(sec) { return new Date(sec * 1000).toISOString().slice(0, view.step === DAY ? 10 : 13).replace("T", " ") + (view.step === DAY ? "" : "h"); }

  /** The admin API of this origin; the browser adds the Basic credentials it was given for the page. */
  function api(path) {
    return fetch(path, { credentials: "same-origin", headers: { accept: "application/json" } }).then(function (res) {
      return res.json().catch(function () { return {}; }).then(function (body) {
        return { status: res.status, body: body };
      });
    });
  }
  function fail(section, res, what) {
    var text = res.body && res.body.error === "ledger_off"
      ? "The books are off: the config has no ledger section."
      : what + " unavailable (" + res.status + (res.body && res.body.error ? " " + res.body.error : "") + ")";
    section.append(el("p", { class: res.body && res.body.error === "ledger_off" ? "note" : "error" }, [text]));
  }
  function reset(id, title) {
    var section = document.getElementById(id);
    section.replaceChildren(el("h2", {}, [title]));
    return section;
  }

  function renderInventory(res) {
    var section = reset("liquidity", "Liquidity against targets");
    if (res.status === 404) { section.append(el("p", { class: "note" }, ["No pool has inventory targets (swapPools[i].inventory)."])); return []; }
    if (res.status !== 200) { fail(section, res, "GET /inventory"); return []; }
    var alerts = [];
    res.body.pools.forEach(function (pool) {
      var box = el("div", { class: "pool", "data-pool": pool.pool }, [el("h3", {}, [pool.pool])]);
      pool.chains.forEach(function (c) {
        var share = c.sharePercent === null ? 0 : c.sharePercent;
        var fill = el("div", { class: "fill " + c.state });
        fill.style.width = Math.min(100, share) + "%";
        var target = el("div", { class: "mark target", title: "target " + c.targetPercent + " %" });
        target.style.left = c.targetPercent + "%";
        var minimum = el("div", { class: "mark minimum", title: "minimum " + c.minimumPercent + " %" });
        minimum.style.left = c.minimumPercent + "%";
        box.append(el("div", {
          class: "chain-row", "data-chain": String(c.chainId), "data-share": String(c.sharePercent), "data-state": c.state,
        }, [
          el("span", {}, ["chain " + c.chainId]),
          el("div", { class: "bar", role: "img", "aria-label": "chain " + c.chainId + ": " + share.toFixed(1) + " % of the pool" }, [fill, target, minimum]),
          el("span", { class: "figures" }, [
            share.toFixed(1) + " % (target " + c.targetPercent + " %, min " + c.minimumPercent + " %) · " + units(c.total, c.decimals),
          ]),
        ]));
        if (c.state === "low" || c.state === "critical") {
          alerts.push({ severity: c.state === "critical" ? "critical" : "warning", kind: "inventory",
            text: "Liquidity " + c.state + " on chain " + c.chainId + " (" + pool.pool + "): " + share.toFixed(1) +
              " % of the pool, minimum " + c.minimumPercent + " %, floor " + units(c.floor, c.decimals) });
        }
      });
      section.append(box);
    });
    return alerts;
  }

  function statusAlerts(res) {
    if (res.status !== 200) return [{ severity: "warning", kind: "status", text: "GET /status unavailable (" + res.status + ")" }];
    var alerts = [], s = res.body;
    if (s.modes && s.modes.cleanUpMode) alerts.push({ severity: "warning", kind: "mode", text: "Clean-up mode is on: no new swaps are taken" });
    (s.processes || []).forEach(function (p) {
      if (!p.alive) alerts.push({ severity: "critical", kind: "process", text: "Process " + p.processId + " is not alive" });
      else if (!p.ready) alerts.push({ severity: "warning", kind: "process", text: "Process " + p.processId + " is not ready" });
    });
    (s.chains || []).forEach(function (c) {
      if (c.gasLow) alerts.push({ severity: "critical", kind: "gas", text: "Gas low on chain " + c.chainId + ": below minGas" });
      if (c.queue && c.queue.failed > 0) alerts.push({ severity: "warning", kind: "queue", text: c.queue.failed + " failed job(s) in tx-" + c.chainId });
    });
    return alerts;
  }

  function renderPnl(res) {
    var section = reset("pnl", "Profit and loss");
    var range = el("span", { class: "range" }, [
      rangeButton("30 days, daily", DAY, 30), rangeButton("48 hours, hourly", HOUR, 48),
    ]);
    section.firstChild.append(range);
    if (res.status !== 200) { fail(section, res, "GET /pnl"); return []; }
    var p = res.body;
    var totals = el("div", { class: "totals", id: "pnl-totals" }, [
      figure("net", p.usd.net), figure("fee earned", p.usd.feeEarned), figure("relayer fees", p.usd.relayerFeeEarned),
      figure("gas cost", p.usd.gasCost), figure("volume", p.usd.volume),
      figure("swaps claimed", String(p.swaps.claimed)), figure("cancelled", String(p.swaps.cancelled)),
    ]);
    section.append(totals);
    var W = 720, H = 200, pad = 18, series = p.series || [];
    var max = series.reduce(function (m, b) { return Math.max(m, Math.abs(b.usd.net)); }, 0) || 1;
    var zero = H / 2, scale = (H / 2 - pad) / max, width = W / Math.max(1, series.length);
    var chart = svg("svg", { id: "pnl-chart", viewBox: "0 0 " + W + " " + H, role: "img", "aria-label": "net USD per bucket" });
    series.forEach(function (b, i) {
      var h = Math.abs(b.usd.net) * scale;
      var rect = svg("rect", {
        x: (i * width + 1).toFixed(2), width: Math.max(1, width - 2).toFixed(2),
        y: (b.usd.net >= 0 ? zero - h : zero).toFixed(2), height: h.toFixed(2),
        class: b.usd.net >= 0 ? "pos" : "neg", "data-start": b.start, "data-net": b.usd.net,
      }, [svg("title", {}, [day(b.start) + ": net " + usd(b.usd.net) + ", fee " + usd(b.usd.feeEarned) +
        ", relayer " + usd(b.usd.relayerFeeEarned) + ", gas " + usd(b.usd.gasCost)])]);
      chart.append(rect);
    });
    chart.append(svg("line", { class: "axis", x1: 0, x2: W, y1: zero, y2: zero }));
    chart.append(svg("text", { x: 2, y: 10 }, [usd(max)]));
    chart.append(svg("text", { x: 2, y: H - 2 }, [usd(-max)]));
    if (series.length > 0) {
      chart.append(svg("text", { x: 90, y: H - 2 }, [day(series[0].start)]));
      chart.append(svg("text", { x: W - 2, y: H - 2, "text-anchor": "end" }, [day(series[series.length - 1].start)]));
    }
    section.append(chart);
    section.append(el("p", { class: "note" }, [
      "Net per " + (view.step === DAY ? "day" : "hour") + " (UTC), from " + new Date(p.from * 1000).toISOString() +
      " to " + new Date(p.to * 1000).toISOString() + ". USD sums of priced figures only.",
    ]));
    return p.unpriced > 0
      ? [{ severity: "warning", kind: "unpriced", text: p.unpriced + " figure(s) without a USD price yet: the profit and loss sums are partial" }]
      : [];
  }
  function figure(label, value) {
    return el("div", { "data-figure": label }, [el("b", {}, [typeof value === "number" ? usd(value) : value]), label]);
  }
  function rangeButton(label, step, buckets) {
    var button = el("button", { type: "button", "aria-pressed": String(view.step === step) }, [label]);
    button.addEventListener("click", function () { view = { step: step, buckets: buckets }; refresh(); });
    return button;
  }

  function renderSwaps(res) {
    var section = reset("swaps", "Latest swaps");
    if (res.status !== 200) { fail(section, res, "GET /ledger"); return; }
    if (res.body.swaps.length === 0) { section.append(el("p", { class: "note" }, ["No swap booked yet."])); return; }
    var rows = res.body.swaps.map(function (s) {
      var net = s.usd.net;
      return el("tr", { "data-id": s.transactionId }, [
        el("td", {}, [el("code", { title: s.transactionId }, [short(s.transactionId)])]),
        el("td", {}, [s.sendingChainId + " → " + s.receivingChainId]),
        el("td", {}, [s.status]),
        el("td", { class: "num" }, [usd(s.usd.feeEarned)]),
        el("td", { class: "num" }, [usd(s.usd.relayerFeeEarned)]),
        el("td", { class: "num" }, [usd(s.usd.gasCost)]),
        el("td", { class: "num net" + (net !== null && net < 0 ? " neg" : "") }, [usd(net)]),
      ]);
    });
    section.append(el("table", {}, [
      el("thead", {}, [el("tr", {}, ["swap", "route", "status", "fee", "relayer fee", "gas", "net"].map(function (h) { return el("th", {}, [h]); }))]),
      el("tbody", {}, rows),
    ]));
  }

  function renderAlerts(alerts) {
    var section = reset("alerts", "Active alerts");
    if (alerts.length === 0) { section.append(el("p", { class: "note" }, ["No active alert."])); return; }
    alerts.sort(function (a, b) { return (a.severity === "critical" ? 0 : 1) - (b.severity === "critical" ? 0 : 1); });
    section.append(el("ul", {}, alerts.map(function (a) {
      return el("li", { class: a.severity, "data-kind": a.kind }, [a.text]);
    })));
  }

  function refresh() {
    var now = Math.floor(Date.now() / 1000);
    // Buckets end with the current UTC day (or hour), so each bar is a whole day (hour) and today's is the last.
    var to = (Math.floor(now / view.step) + 1) * view.step;
    var from = to - view.buckets * view.step;
    return Promise.all([
      api("/inventory"), api("/status"), api("/pnl?from=" + from + "&to=" + to + "&step=" + view.step), api("/ledger?limit=20"),
    ]).then(function (r) {
      var alerts = renderInventory(r[0]).concat(statusAlerts(r[1]), renderPnl(r[2]));
      renderSwaps(r[3]);
      renderAlerts(alerts);
      document.getElementById("updated").textContent = "updated " + new Date().toISOString();
      document.body.setAttribute("data-loaded", "true");
    });
  }

  refresh();
  setInterval(refresh, 60000);
})();
`;

export const OPERATOR_HTML = (css: string, js: string): string => `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>Router operator</title>
<style>${css}</style>
</head>
<body>
<header><h1>Router operator</h1><span class="updated" id="updated">loading…</span></header>
<main>
<section id="alerts"><h2>Active alerts</h2><p class="note">loading…</p></section>
<section id="liquidity"><h2>Liquidity against targets</h2><p class="note">loading…</p></section>
<section id="pnl"><h2>Profit and loss</h2><p class="note">loading…</p></section>
<section id="swaps"><h2>Latest swaps</h2><p class="note">loading…</p></section>
</main>
<script>${js}</script>
</body>
</html>
`;
