// dlaunch ui: the jobs page, a job's page and top, drawn from the read-only
// JSON API of `dlaunch ui`. Every value goes into the page as text (never as
// HTML), so a log line holding "<script>" shows as those characters.
"use strict";

const REFRESH_MS = 2000;
const LOG_POLL_MS = 1000;
const LOG_TAIL_BYTES = 65536;

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") e.className = v; else e.setAttribute(k, v);
  }
  for (const c of children) {
    if (c === null || c === undefined) continue;
    e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return e;
}

function svgEl(tag, attrs) {
  const e = document.createElementNS("http://www.w3.org/2000/svg", tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  return e;
}

async function getJson(url) {
  const r = await fetch(url, {cache: "no-store"});
  if (!r.ok) throw new Error(url + ": " + r.status + " " + (await r.text()));
  return r.json();
}

function statusBadge(status) {
  return el("span", {class: "status " + status}, status);
}

function age(seconds) {
  if (seconds < 0) return "-";
  if (seconds < 120) return seconds + "s";
  if (seconds < 7200) return Math.floor(seconds / 60) + "m";
  if (seconds < 2 * 86400) return Math.floor(seconds / 3600) + "h";
  return Math.floor(seconds / 86400) + "d";
}

function duration(seconds) {
  if (seconds === null || seconds === undefined || seconds < 0) return "-";
  const h = Math.floor(seconds / 3600), m = Math.floor(seconds / 60) % 60, s = seconds % 60;
  if (h > 0) return h + "h" + String(m).padStart(2, "0") + "m";
  if (m > 0) return m + "m" + String(s).padStart(2, "0") + "s";
  return s + "s";
}

function when(unix) {
  return unix ? new Date(unix * 1000).toLocaleString() : "-";
}

function hostsOf(job) {
  return job.nodes.length ? job.nodes.map((n) => n.host) : (job.hosts || []);
}

function table(headers, rows) {
  const head = el("tr", {}, ...headers.map((h) => el("th", {class: h.num ? "num" : ""}, h.name)));
  return el("table", {}, el("thead", {}, head), el("tbody", {}, ...rows));
}

function replace(id, node) {
  const old = document.getElementById(id);
  node.id = id;
  old.replaceWith(node);
}

function setFooter(text) {
  document.getElementById("footer").textContent = text;
}

// --- the jobs page -----------------------------------------------------------

async function jobsPage(main) {
  const filter = el("select", {id: "status-filter"},
    ...["all", "active", "RUNNING", "STALLED", "PENDING", "RESTARTING", "SUCCEEDED", "FAILED",
        "HUNG", "STOPPED", "LOST"].map((s) => el("option", {value: s}, s)));
  filter.value = new URLSearchParams(location.search).get("status") || "all";
  main.replaceChildren(el("h1", {}, "Jobs"),
    el("p", {}, el("label", {}, "status ", filter)), el("div", {id: "jobs"}));
  const active = new Set(["PENDING", "RUNNING", "RESTARTING", "STALLED"]);
  async function draw() {
    const data = await getJson("/api/jobs");
    document.getElementById("state-dir").textContent = data.state_dir;
    const shown = data.jobs.filter((j) => filter.value === "all" ||
      (filter.value === "active" ? active.has(j.status) : j.status === filter.value));
    const rows = shown.map((j) => el("tr", {"data-job": j.name},
      el("td", {}, el("a", {href: "/job/" + encodeURIComponent(j.name)}, j.name)),
      el("td", {}, statusBadge(j.status)),
      el("td", {class: "hosts"}, hostsOf(j).join(", ")),
      el("td", {class: "num"}, j.ranks || "-"),
      el("td", {class: "num"}, j.restarts),
      el("td", {class: "num"}, age(data.now - j.started)),
      el("td", {class: "num"}, duration(j.duration_s))));
    replace("jobs", shown.length ? table([{name: "name"}, {name: "status"}, {name: "hosts"},
      {name: "ranks", num: 1}, {name: "restarts", num: 1}, {name: "age", num: 1},
      {name: "duration", num: 1}], rows) : el("p", {class: "quiet"}, "no jobs to show"));
    setFooter(data.jobs.length + " jobs; refreshed " + new Date().toLocaleTimeString());
  }
  filter.addEventListener("change", () => {
    history.replaceState(null, "", filter.value === "all" ? "/" : "/?status=" + filter.value);
    draw();
  });
  await draw();
  setInterval(() => draw().catch((e) => setFooter(e.message)), REFRESH_MS);
}

// --- a job's page --------------------------------------------------------------

function facts(pairs) {
  const dl = el("dl", {class: "facts"});
  for (const [k, v] of pairs) {
    if (v === null || v === undefined || v === "") continue;
    dl.append(el("dt", {}, k), el("dd", {}, v));
  }
  return dl;
}

function jobSummary(job, now) {
  const parts = [el("h1", {}, job.name, " ", statusBadge(job.status))];
  parts.push(facts([
    ["mode", job.mode + ", " + job.nnodes + (job.nnodes === 1 ? " node" : " nodes") + ", " +
      job.ranks + (job.ranks === 1 ? " rank" : " ranks")],
    ["node", job.node_of_job ? job.node_name + " of manual-mode job " + job.node_of_job +
      " (its node 0 at " + job.node0 + " keeps the job's record and rank logs)" : null],
    ["command", job.command.join(" ")],
    ["workdir", job.workdir],
    ["started", when(job.started) + " (" + age(now - job.started) + " ago)"],
    ["finished", job.finished ? when(job.finished) : null],
    ["duration", duration(job.duration_s)],
    ["exit code", job.exit_code],
    ["restarts", job.restarts],
    ["directory", job.dir]]));
  if (job.root_cause) {
    parts.push(el("h2", {}, "root cause"),
      el("pre", {class: "cause"}, [job.root_cause, ...job.root_cause_tail.map((l) => "| " + l)]
        .join("\n")));
  }
  if (job.stacks) {
    parts.push(el("h2", {}, "hang verdict"),
      el("pre", {class: "cause"}, job.stacks.verdict.join("\n")),
      el("p", {class: "quiet"}, "every rank's stack: " + job.stacks.dir),
      el("details", {id: "stacks"}, el("summary", {}, "the stacks, ranks grouped"),
        el("pre", {class: "log", id: "stacks-text"}, stacksText.get(job.stacks.dir) || "")));
  }
  parts.push(el("h2", {}, "hosts"), table(
    [{name: "host"}, {name: "node", num: 1}, {name: "ranks"}, {name: "gpus", num: 1},
     {name: "agent pid", num: 1}, {name: "state"}],
    job.nodes.map((n) => el("tr", {},
      el("td", {class: "host"}, n.host),
      el("td", {class: "num"}, n.node_rank >= 0 ? n.node_rank : "-"),
      el("td", {}, n.first_rank < 0 || n.ranks <= 0 ? "-" : n.ranks === 1 ? n.first_rank :
        n.first_rank + "-" + (n.first_rank + n.ranks - 1)),
      el("td", {class: "num"}, n.gpus || "-"),
      el("td", {class: "num"}, n.agent_pid > 0 ? n.agent_pid : "-"),
      el("td", {}, n.state)))));
  if (job.history.length) {
    parts.push(el("h2", {}, "rounds"), table([{name: "time"}, {name: "round", num: 1},
      {name: "what"}], job.history.map((h) => el("tr", {}, el("td", {}, when(h.time)),
        el("td", {class: "num"}, h.round), el("td", {}, h.what)))));
  }
  return el("div", {}, ...parts);
}

// The grouped stacks of a gathering, by its directory: read once.
const stacksText = new Map();

async function loadStacks(job) {
  if (!job.stacks || stacksText.has(job.stacks.dir)) return;
  const r = await fetch("/api/jobs/" + encodeURIComponent(job.name) + "/stacks",
    {cache: "no-store"});
  if (!r.ok) return;
  stacksText.set(job.stacks.dir, await r.text());
  const pre = document.getElementById("stacks-text");
  if (pre) pre.textContent = stacksText.get(job.stacks.dir);
}

// Follows one rank's log: the last 64 KiB, then every byte as written.
class LogFollower {
  constructor(job, pre) {
    this.job = job;
    this.pre = pre;
    this.rank = null;
    this.offset = -LOG_TAIL_BYTES;
    this.decoder = new TextDecoder();
    this.busy = false;
  }
  show(rank) {
    this.rank = rank;
    this.offset = -LOG_TAIL_BYTES;
    this.decoder = new TextDecoder();
    this.pre.textContent = "";
    return this.poll();
  }
  async poll() {
    if (this.rank === null || this.busy) return;
    this.busy = true;
    try {
      const rank = this.rank;
      const r = await fetch("/api/jobs/" + encodeURIComponent(this.job) + "/log?rank=" + rank +
        "&offset=" + this.offset, {cache: "no-store"});
      if (!r.ok || rank !== this.rank) return;
      const bytes = await r.arrayBuffer();
      this.offset = Number(r.headers.get("X-Dlaunch-Next-Offset"));
      if (bytes.byteLength === 0) return;
      const atEnd = this.pre.scrollTop + this.pre.clientHeight >= this.pre.scrollHeight - 4;
      this.pre.append(document.createTextNode(this.decoder.decode(bytes, {stream: true})));
      if (atEnd) this.pre.scrollTop = this.pre.scrollHeight;
    } finally {
      this.busy = false;
    }
  }
}

// One scalar tag as an SVG plot: value against step, a circle per point.
function plot(tag, points) {
  const W = 360, H = 200, L = 48, B = 24, T = 8, R = 8;
  const steps = points.map((p) => p[0]), values = points.map((p) => p[1]);
  const x0 = Math.min(...steps), x1 = Math.max(...steps);
  const y0 = Math.min(...values), y1 = Math.max(...values);
  const sx = (s) => L + (x1 === x0 ? 0.5 : (s - x0) / (x1 - x0)) * (W - L - R);
  const sy = (v) => H - B - (y1 === y0 ? 0.5 : (v - y0) / (y1 - y0)) * (H - B - T);
  const svg = svgEl("svg", {width: W, height: H, viewBox: `0 0 ${W} ${H}`, "data-tag": tag});
  svg.append(svgEl("line", {class: "axis", x1: L, y1: H - B, x2: W - R, y2: H - B}),
    svgEl("line", {class: "axis", x1: L, y1: T, x2: L, y2: H - B}));
  const label = (x, y, text, anchor) => {
    const t = svgEl("text", {x, y, "text-anchor": anchor});
    t.textContent = text;
    svg.append(t);
  };
  label(L - 4, T + 8, y1.toPrecision(4), "end");
  label(L - 4, H - B, y0.toPrecision(4), "end");
  label(L, H - 8, "step " + x0, "start");
  label(W - R, H - 8, String(x1), "end");
  svg.append(svgEl("polyline", {class: "curve",
    points: points.map((p) => sx(p[0]).toFixed(1) + "," + sy(p[1]).toFixed(1)).join(" ")}));
  for (const [s, v] of points) {
    svg.append(svgEl("circle", {class: "point", r: 1.8, cx: sx(s).toFixed(1),
      cy: sy(v).toFixed(1), "data-step": s, "data-value": v}));
  }
  return el("div", {class: "plot"}, el("div", {class: "tag"}, tag), svg);
}

async function jobPage(main, name) {
  const pre = el("pre", {class: "log", id: "log"});
  const rankSelect = el("select", {id: "log-rank"});
  const follower = new LogFollower(name, pre);
  main.replaceChildren(el("div", {id: "summary"}),
    el("h2", {}, "scalars"), el("div", {id: "plots", class: "plots"}),
    el("h2", {}, "log"), el("p", {}, el("label", {}, "rank ", rankSelect)), pre);
  rankSelect.addEventListener("change", () => follower.show(Number(rankSelect.value)));
  let ranksShown = "";
  async function draw() {
    const data = await getJson("/api/jobs/" + encodeURIComponent(name));
    document.getElementById("state-dir").textContent = data.state_dir;
    document.title = name + " - dlaunch";
    const open = document.getElementById("stacks")?.open;
    replace("summary", jobSummary(data.job, data.now));
    if (open) document.getElementById("stacks").open = true;
    await loadStacks(data.job);
    const ranks = Object.keys(data.job.logs).map(Number).sort((a, b) => a - b);
    if (ranks.join(",") !== ranksShown) {
      const keep = rankSelect.value;
      rankSelect.replaceChildren(...ranks.map((r) => el("option", {value: r}, "rank " + r)));
      ranksShown = ranks.join(",");
      if (ranks.length && (keep === "" || !ranks.includes(Number(keep)))) {
        rankSelect.value = String(ranks[0]);
        follower.show(ranks[0]);
      } else {
        rankSelect.value = keep;
      }
    }
    if (data.job.tensorboard_logdir) {
      const scalars = await getJson("/api/jobs/" + encodeURIComponent(name) + "/scalars");
      const tags = Object.keys(scalars.tags).sort();
      replace("plots", tags.length
        ? el("div", {class: "plots"}, ...tags.map((t) => plot(t, scalars.tags[t])))
        : el("p", {class: "quiet"}, "no scalars yet in " + data.job.tensorboard_logdir));
    } else {
      replace("plots", el("p", {class: "quiet"}, "the job has no --tensorboard-dir"));
    }
    setFooter("refreshed " + new Date().toLocaleTimeString());
    return data.job.status;
  }
  await draw();
  setInterval(() => draw().catch((e) => setFooter(e.message)), REFRESH_MS);
  setInterval(() => follower.poll().catch((e) => setFooter(e.message)), LOG_POLL_MS);
}

// --- top ----------------------------------------------------------------------

async function topPage(main) {
  main.replaceChildren(el("h1", {}, "top job"), el("div", {id: "top-jobs"}),
    el("h2", {}, "ranks on this machine"), el("div", {id: "top-ranks"}),
    el("p", {class: "quiet"}, "Ranks on other hosts are not sampled from here."),
    el("h2", {}, "top node: hosts of the running jobs"), el("div", {id: "top-nodes"}),
    el("p", {class: "quiet"}, "From the job records. Every GPU of a host, with its use and " +
      "memory: dlaunch top node --hosts FILE."));
  async function draw() {
    const jobs = await getJson("/api/jobs");
    const hosts = new Map();
    for (const j of jobs.jobs.filter((j) => j.status === "RUNNING" || j.status === "STALLED")) {
      for (const n of j.nodes.filter((n) => n.state === "running")) {
        const h = hosts.get(n.host) || {jobs: [], ranks: 0, gpus: 0};
        h.jobs.push(j.name);
        h.ranks += n.ranks;
        h.gpus += n.gpus;
        hosts.set(n.host, h);
      }
    }
    replace("top-nodes", hosts.size ? table([{name: "host"}, {name: "jobs"},
      {name: "ranks", num: 1}, {name: "gpus held", num: 1}],
      [...hosts.entries()].sort().map(([host, h]) => el("tr", {"data-host": host},
        el("td", {}, host), el("td", {}, h.jobs.join(", ")), el("td", {class: "num"}, h.ranks),
        el("td", {class: "num"}, h.gpus))))
      : el("p", {class: "quiet"}, "no running jobs"));
    const data = await getJson("/api/top");
    document.getElementById("state-dir").textContent = data.state_dir;
    const top = data.top;
    replace("top-jobs", top.jobs.length ? table([{name: "name"}, {name: "status"},
      {name: "hosts"}, {name: "ranks", num: 1}, {name: "gpus", num: 1}, {name: "cpu %", num: 1},
      {name: "memory", num: 1}], top.jobs.map((j) => el("tr", {"data-job": j.name},
        el("td", {}, el("a", {href: "/job/" + encodeURIComponent(j.name)}, j.name)),
        el("td", {}, statusBadge(j.status)), el("td", {}, j.hosts.join(", ")),
        el("td", {class: "num"}, j.ranks), el("td", {class: "num"}, j.gpus ?? "-"),
        el("td", {class: "num"}, j.cpu_pct.toFixed(1)),
        el("td", {class: "num"}, (j.memory_bytes / 1048576).toFixed(0) + " MiB"))))
      : el("p", {class: "quiet"}, "no active jobs"));
    replace("top-ranks", table([{name: "job"}, {name: "rank", num: 1}, {name: "pid", num: 1},
      {name: "cpu %", num: 1}, {name: "rss", num: 1}, {name: "command"}],
      top.ranks.map((r) => el("tr", {}, el("td", {}, r.job), el("td", {class: "num"}, r.rank ?? "-"),
        el("td", {class: "num"}, r.pid), el("td", {class: "num"}, r.cpu_pct.toFixed(1)),
        el("td", {class: "num"}, (r.rss_bytes / 1048576).toFixed(0) + " MiB"),
        el("td", {}, r.command)))));
    setFooter("sampled over " + top.interval_s + " s; refreshed " + new Date().toLocaleTimeString());
  }
  await draw();
  setInterval(() => draw().catch((e) => setFooter(e.message)), REFRESH_MS * 2);
}

document.addEventListener("DOMContentLoaded", () => {
  const main = document.getElementById("main");
  const path = location.pathname;
  const page = path === "/top" ? topPage(main)
    : path.startsWith("/job/") ? jobPage(main, decodeURIComponent(path.slice(5)))
    : jobsPage(main);
  page.catch((e) => main.replaceChildren(el("p", {class: "cause"}, e.message)));
});
