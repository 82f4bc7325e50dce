"""`wayside view RUN_DIR`: one offline HTML page that replays a run — the
road, the APs and every vehicle moving over time, coloured by the AP
serving it, the frames between them coloured by outcome, association
events, and a time slider. Everything is inline (the data as JSON, the
drawing code, the styles): the page loads nothing from elsewhere.

It reads the run directory's Parquet trace, and condenses it to what the
page draws: each node's position every 100 ms, unicast frames per 100 ms
and link (acknowledged or not), data frames dropped at a receiver by reason, and
the connection events of stations (beacons, selection, authentication,
association, DHCP) and the handovers.
"""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any

import polars as pl

from wayside import breakdown, plots
from wayside.result import RunResult
from wayside.traces import table

SLOT_S = 0.1
SHOWN_EVENTS = ("ap-selected", "auth-timeout", "assoc-timeout", "associated", "disassociated", "dhcp-bound",
                "app-start", "established", "tcp-timeout", "tcp-gave-up", "background-scan", "roam")


class ViewError(ValueError):
    """A directory that cannot be viewed."""


def _r(v: float, digits: int = 1) -> float:
    return round(float(v), digits)


def data(result: RunResult) -> dict[str, Any]:
    """What the page draws, as plain JSON-able values (see the module doc)."""
    track = breakdown.tracks(result)
    b = breakdown.breakdown(result)
    aps = breakdown.access_points(result)
    colours = plots.ap_colours(aps)
    roles = {n["name"]: ("host" if n.get("radio") is False else n.get("role", "")) for n in result.scenario.get("node", [])}
    nodes = []
    for name in result.nodes:
        t = track.get(name)
        if t is None or roles.get(name) == "host":
            continue  # no radio: nothing to place on the road
        times = t["time_s"].to_numpy()
        serving = breakdown.serving_ap(b.associations, name, times)
        nodes.append({"name": name, "role": roles.get(name, ""), "colour": colours.get(name),
                      "t": [_r(x, 2) for x in times], "x": [_r(x) for x in t["x"]], "y": [_r(y) for y in t["y"]],
                      "ap": [aps.index(s) if s in aps else -1 for s in serving]})
    index = {n["name"]: i for i, n in enumerate(nodes)}
    frames = table(result, "frames")
    slot = (pl.col("time_ns") // int(SLOT_S * 1e9)).alias("slot")
    # Unicast frames that wait for an acknowledgement (data, management, RTS):
    # acknowledged or not.
    sent = frames.filter((pl.col("event") == "tx") & pl.col("outcome").is_in(["acked", "unacked"])).group_by(
        slot, "node", "peer").agg((pl.col("outcome") == "acked").sum().alias("ok"), (pl.col("outcome") == "unacked").sum().alias("lost"))
    links = [[int(s), index[a], index[p], int(ok), int(lost)] for s, a, p, ok, lost in sent.sort("slot", "node", "peer").iter_rows()
             if a in index and p in index]
    drops = frames.filter((pl.col("event") == "drop") & (pl.col("kind") == "data")).group_by(slot, "node", "reason").agg(
        pl.len().alias("n"))
    drop_rows = [[int(s), index[n], str(reason), int(k)] for s, n, reason, k in drops.sort("slot", "node", "reason").iter_rows()
                 if n in index]
    ev = table(result, "events").filter(pl.col("event").is_in(SHOWN_EVENTS) & pl.col("node").is_in(breakdown.stations(result)))
    events = [[_r(t / 1e9, 3), str(n), str(p), str(e)] for t, n, p, e in ev.sort("time_ns").select("time_ns", "node", "peer", "event").iter_rows()]
    events += [[_r(r["time_s"], 3), r["car"], r["to"], f"handover from {r['from']} ({r['how']}, gap {r['gap_s']:.2f} s)"]
               for r in b.handovers.iter_rows(named=True)]
    events.sort(key=lambda e: e[0])
    return {"name": str(result.scenario.get("name", "run")), "duration": _r(result.duration_s, 3), "slot": SLOT_S,
            "aps": [{"name": a, "colour": colours[a]} for a in aps], "nodes": nodes, "links": links, "drops": drop_rows,
            "events": events, "data_mb": {r["car"]: _r(r["received_mb"] + r["sent_mb"], 2) for r in b.cars.iter_rows(named=True)}}


def render(run_dir: str | Path) -> str:
    """The page for the run directory `run_dir`, as HTML text."""
    d = Path(run_dir)
    if not (d / "summary.json").is_file():
        raise ViewError(f"{d}: not a run directory (no summary.json); give a directory written by `wayside run` or `wayside sweep`")
    try:
        result = RunResult.load(d)
    except (OSError, ValueError) as e:
        raise ViewError(f"{d}: the run's trace cannot be read ({e})") from None
    payload = json.dumps(data(result), separators=(",", ":")).replace("</", "<\\/")
    title = html.escape(f"wayside view: {result.scenario.get('name', d.name)} ({d.name})")
    return _PAGE.replace("__TITLE__", title).replace("__DATA__", payload)


def write(run_dir: str | Path, out: str | Path | None = None) -> Path:
    """Writes the page (default: RUN_DIR/view.html) and returns its path."""
    path = Path(out) if out is not None else Path(run_dir) / "view.html"
    text = render(run_dir)
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as e:
        raise ViewError(f"--out {path}: cannot be written ({e.strerror or e})") from None
    return path


_PAGE = """<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>__TITLE__</title>
<style>
body{font-family:sans-serif;margin:0;padding:10px 14px;color:#222;background:#fafafa}
h1{font-size:17px;margin:0 0 6px}
#bar{display:flex;gap:10px;align-items:center;margin:6px 0;font-size:13px}
#slider{flex:1}
#clock{font-variant-numeric:tabular-nums;min-width:7em}
canvas{background:#fff;border:1px solid #ddd;width:100%}
#panes{display:flex;gap:14px;font-size:12px}
#panes>div{flex:1;min-width:0}
#log{height:190px;overflow:auto;border:1px solid #ddd;background:#fff;padding:4px;font-family:monospace}
#log .now{background:#fff3c4}#log .future{color:#aaa}
table{border-collapse:collapse}td,th{padding:1px 6px;border-bottom:1px solid #eee;text-align:right}
td:first-child,th:first-child{text-align:left}
.key span{display:inline-block;width:10px;height:10px;margin:0 3px 0 10px;vertical-align:middle}
</style></head><body>
<h1 id="title"></h1>
<div id="bar"><button id="play">play</button>
<select id="speed"><option value="1">1×</option><option value="5" selected>5×</option><option value="20">20×</option></select>
<input id="slider" type="range" min="0" step="0.1" value="0"><span id="clock"></span></div>
<canvas id="road" width="1400" height="330"></canvas>
<div class="key" id="key"></div>
<div id="panes"><div><b>vehicles now</b><table id="cars"></table></div>
<div><b>events</b> (highlighted: the last second; grey: still to come)<div id="log"></div></div></div>
<script type="application/json" id="data">__DATA__</script>
<script>
"use strict";
const D = JSON.parse(document.getElementById("data").textContent);
const cv = document.getElementById("road"), g = cv.getContext("2d");
const slider = document.getElementById("slider"), clock = document.getElementById("clock");
const GREY = "#9a9a9a", OK = "#2ca02c", LOST = "#d62728";
const DROP = {"preamble-missed": "#9e9e9e", "busy": "#ff7f0e", "captured": "#9467bd", "error": "#d62728", "transmitting": "#8c564b"};
document.getElementById("title").textContent = D.name + ": " + D.duration + " s simulated";
slider.max = D.duration;
let x0 = Infinity, x1 = -Infinity, y0 = Infinity, y1 = -Infinity;
for (const n of D.nodes) for (let k = 0; k < n.x.length; k++) {
  x0 = Math.min(x0, n.x[k] - 20); x1 = Math.max(x1, n.x[k] + 20); y0 = Math.min(y0, n.y[k]); y1 = Math.max(y1, n.y[k]);
}
const W = cv.width, H = cv.height, M = 40;
const sx = x => M + (x - x0) / (x1 - x0) * (W - 2 * M);
const yspan = Math.max(y1 - y0, 1);
const sy = y => H / 2 + 30 - (y - (y0 + y1) / 2) / yspan * 60;
const bySlot = {};
for (const l of D.links) (bySlot[l[0]] = bySlot[l[0]] || []).push(l);
const dropsBySlot = {};
for (const d of D.drops) (dropsBySlot[d[0]] = dropsBySlot[d[0]] || []).push(d);
function at(n, t) {
  // Position and serving AP of node n at time t (linear between samples).
  const T = n.t; let lo = 0, hi = T.length - 1;
  if (t <= T[0]) return [n.x[0], n.y[0], n.ap[0]];
  if (t >= T[hi]) return [n.x[hi], n.y[hi], n.ap[hi]];
  while (hi - lo > 1) { const m = (lo + hi) >> 1; if (T[m] <= t) lo = m; else hi = m; }
  const f = (t - T[lo]) / (T[hi] - T[lo]);
  return [n.x[lo] + f * (n.x[hi] - n.x[lo]), n.y[lo] + f * (n.y[hi] - n.y[lo]), n.ap[lo]];
}
function key() {
  let h = "";
  for (const a of D.aps) h += `<span style="background:${a.colour}"></span>served by ${a.name}`;
  h += `<span style="background:${GREY}"></span>not associated<span style="background:${OK}"></span>frames acknowledged`;
  h += `<span style="background:${LOST}"></span>frames not acknowledged`;
  document.getElementById("key").innerHTML = h;
}
function draw(t) {
  g.clearRect(0, 0, W, H);
  g.fillStyle = "#eee"; g.fillRect(M, sy(y1) - 12, W - 2 * M, sy(y0) - sy(y1) + 24);
  g.fillStyle = "#555"; g.font = "12px sans-serif";
  for (let x = Math.ceil(x0 / 100) * 100; x <= x1; x += 100) {
    g.fillRect(sx(x), H - 24, 1, 6); g.fillText(x + " m", sx(x) - 12, H - 6);
  }
  const pos = D.nodes.map(n => at(n, t));
  const slot = Math.floor(t / D.slot);
  const shown = {links: 0, ok: 0, lost: 0};
  for (const s of [slot - 2, slot - 1, slot]) for (const [_, a, b, ok, lost] of bySlot[s] || []) {
    g.strokeStyle = lost > ok ? LOST : OK; g.lineWidth = 1 + Math.min(4, Math.log2(1 + ok + lost));
    g.globalAlpha = s === slot ? 0.9 : 0.35;
    g.beginPath(); g.moveTo(sx(pos[a][0]), sy(pos[a][1])); g.lineTo(sx(pos[b][0]), sy(pos[b][1])); g.stroke();
    shown.links++; shown.ok += ok; shown.lost += lost;
  }
  g.globalAlpha = 1;
  const cars = [];
  D.nodes.forEach((n, i) => {
    const [x, y, ap] = pos[i];
    if (n.role === "ap") {
      g.fillStyle = n.colour || "#333";
      g.beginPath(); g.moveTo(sx(x), sy(y) - 12); g.lineTo(sx(x) - 9, sy(y) + 6); g.lineTo(sx(x) + 9, sy(y) + 6); g.fill();
      g.fillStyle = "#222"; g.fillText(n.name, sx(x) - 10, sy(y) - 16);
      return;
    }
    const colour = ap >= 0 ? D.aps[ap].colour : GREY;
    g.fillStyle = colour; g.strokeStyle = "#222"; g.lineWidth = 1;
    g.beginPath(); g.arc(sx(x), sy(y), 6, 0, 2 * Math.PI); g.fill(); g.stroke();
    const dropped = (dropsBySlot[slot] || []).filter(d => d[1] === i);
    if (dropped.length) { g.fillStyle = DROP[dropped[0][2]] || "#000"; g.fillRect(sx(x) - 2, sy(y) + 9, 4, 4); }
    g.fillStyle = "#222"; g.fillText(n.name, sx(x) - 10, sy(y) + (i % 2 ? 24 : -10));
    cars.push({name: n.name, x: Math.round(x), ap: ap >= 0 ? D.aps[ap].name : null, colour: colour});
  });
  clock.textContent = "t = " + t.toFixed(1) + " s";
  let rows = "<tr><th>vehicle</th><th>x (m)</th><th>served by</th><th>MB in run</th></tr>";
  for (const c of cars) rows += `<tr><td>${c.name}</td><td>${c.x}</td><td style="color:${c.colour}">${c.ap || "—"}</td><td>${D.data_mb[c.name] ?? "—"}</td></tr>`;
  document.getElementById("cars").innerHTML = rows;
  let log = "", first = null;
  D.events.forEach((e, k) => {
    const now = e[0] <= t && e[0] > t - 1;
    if (e[0] <= t) first = k;
    const cls = now ? ' class="now"' : e[0] > t ? ' class="future"' : "";
    log += `<div id="e${k}"${cls}>${e[0].toFixed(2)} ${e[1]} ${e[3]} ${e[2]}</div>`;
  });
  const box = document.getElementById("log"); box.innerHTML = log;
  // Keep the latest past event in view, near the bottom of the box.
  if (first !== null) box.scrollTop = Math.max(0, document.getElementById("e" + first).offsetTop - box.offsetTop - box.clientHeight + 40);
  document.body.dataset.state = JSON.stringify({t: t, cars: cars, links: shown});
}
let playing = false, last = null;
function tick(ts) {
  if (!playing) return;
  if (last !== null) {
    let t = parseFloat(slider.value) + (ts - last) / 1000 * parseFloat(document.getElementById("speed").value);
    if (t >= D.duration) { t = D.duration; playing = false; document.getElementById("play").textContent = "play"; }
    slider.value = t; draw(t);
  }
  last = ts; requestAnimationFrame(tick);
}
document.getElementById("play").onclick = e => {
  playing = !playing; e.target.textContent = playing ? "pause" : "play"; last = null;
  if (playing) requestAnimationFrame(tick);
};
slider.oninput = () => draw(parseFloat(slider.value));
key();
const start = /t=([0-9.]+)/.exec(location.hash);
slider.value = start ? Math.min(parseFloat(start[1]), D.duration) : 0;
draw(parseFloat(slider.value));
</script></body></html>
"""
