// The toolcards dashboard: read-only views of one team, kept live by server-sent events.
// Everything shown comes from the team (tasks, entities, files, tool errors) and is untrusted:
// it is put on the page with textContent and attributes only, never parsed as markup.
"use strict";

(function () {
  const SVG = "http://www.w3.org/2000/svg";
  // The board's four statuses (the words the API, the tools and the plan use), in column
  // order, each with the label people read; data-status attributes hold the word itself.
  const STATUSES = [
    ["pending", "Pending"],
    ["in_progress", "In progress"],
    ["completed", "Completed"],
    ["aborted", "Aborted"],
  ];
  const STATUS_LABEL = new Map(STATUSES);
  const PALETTE = ["#2563eb", "#16a34a", "#d97706", "#9333ea", "#dc2626", "#0891b2",
    "#db2777", "#65a30d", "#4f46e5", "#ea580c", "#0d9488", "#7c3aed"];
  const TABS = ["board", "graph", "calls", "team", "files"];
  const SCALE = 90; // pixels per layout unit (the ideal distance between related entities)
  const VIEWS_OF_TAB = {
    board: ["planning.board"],
    graph: ["knowledge_graph.graph"],
    calls: ["team.calls"],
    team: ["team.roster", "team.usage"],
    files: ["workspace.tree"],
  };

  const state = {
    tab: "board",
    views: [],
    stale: new Set(),
    graph: null,
    selected: null,
    hits: new Set(),
    calls: [],
    file: null,
    openDirs: new Set(),
    viewBox: null,
  };

  // -- helpers ---------------------------------------------------------------------------

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (value === null || value === undefined || value === false) continue;
      if (key === "class") node.className = value;
      else if (key === "text") node.textContent = value;
      else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
      else node.setAttribute(key, value === true ? "" : String(value));
    }
    for (const child of children) {
      if (child === null || child === undefined || child === false) continue;
      node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return node;
  }

  function svg(tag, attrs) {
    const node = document.createElementNS(SVG, tag);
    for (const [key, value] of Object.entries(attrs || {})) node.setAttribute(key, String(value));
    return node;
  }

  function clear(node) {
    while (node.firstChild) node.firstChild.remove();
    return node;
  }

  function $(id) {
    return document.getElementById(id);
  }

  async function api(name, params) {
    const query = params ? "?" + new URLSearchParams(params).toString() : "";
    const response = await fetch("/api/views/" + encodeURIComponent(name) + query, {
      credentials: "same-origin",
      cache: "no-store",
    });
    const body = await response.json().catch(() => ({ error: response.statusText }));
    if (!response.ok) {
      const error = new Error(body.error || response.statusText);
      error.status = response.status;
      throw error;
    }
    return body;
  }

  function has(view) {
    return state.views.includes(view);
  }

  function time(iso) {
    if (!iso) return "";
    const date = new Date(iso);
    const pad = (n, w = 2) => String(n).padStart(w, "0");
    return `${pad(date.getHours())}:${pad(date.getMinutes())}:${pad(date.getSeconds())}.${pad(date.getMilliseconds(), 3)}`;
  }

  function dateTime(iso) {
    return iso ? new Date(iso).toLocaleString() : "";
  }

  function size(bytes) {
    if (bytes === undefined || bytes === null) return "";
    if (bytes < 1024) return `${bytes} B`;
    if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KB`;
    return `${(bytes / 1024 / 1024).toFixed(1)} MB`;
  }

  function count(id, value) {
    $(id).textContent = value === null || value === undefined ? "" : String(value);
  }

  function missing(container, what) {
    clear(container).append(el("p", { class: "empty", text: `This team has no ${what} card.` }));
  }

  // -- tabs and live updates ---------------------------------------------------------------

  function showTab(tab) {
    if (!TABS.includes(tab)) tab = "board";
    state.tab = tab;
    for (const name of TABS) {
      $("tab-" + name).setAttribute("aria-selected", String(name === tab));
      $("panel-" + name).hidden = name !== tab;
    }
    if (location.hash !== "#" + tab) history.replaceState(null, "", "#" + tab);
    refresh(VIEWS_OF_TAB[tab]);
  }

  const loaders = {
    "planning.board": loadBoard,
    "knowledge_graph.graph": loadGraph,
    "team.calls": loadCalls,
    "team.roster": loadRoster,
    "team.usage": loadUsage,
    "workspace.tree": loadFiles,
  };
  const running = new Map();

  function refresh(views) {
    if (!state.views.length) return; // before "hello": the team's views are not known yet
    for (const view of views) {
      const visible = VIEWS_OF_TAB[state.tab].includes(view);
      // The board and the calls are counted in the tabs, so they stay fresh on every tab.
      if (!visible && view !== "planning.board" && view !== "team.calls") {
        state.stale.add(view);
        continue;
      }
      state.stale.delete(view);
      load(view);
    }
  }

  function load(view) {
    const loader = loaders[view];
    if (!loader) return;
    if (running.has(view)) {
      running.set(view, true); // load again once the running one ends
      return;
    }
    running.set(view, false);
    Promise.resolve()
      .then(loader)
      .catch((error) => console.warn(view, error))
      .finally(() => {
        const again = running.get(view);
        running.delete(view);
        if (again) load(view);
      });
  }

  function connect() {
    const live = $("live");
    const events = new EventSource("/api/events");
    events.addEventListener("hello", (event) => {
      const hello = JSON.parse(event.data);
      state.views = hello.views;
      $("team").textContent = hello.team;
      document.title = `${hello.team} · toolcards`;
      live.dataset.state = "live";
      $("live-text").textContent = "live";
      refresh(["planning.board", "team.calls", ...VIEWS_OF_TAB[state.tab]]);
      for (const view of Object.keys(loaders)) if (!VIEWS_OF_TAB[state.tab].includes(view)) state.stale.add(view);
    });
    events.addEventListener("changed", (event) => {
      const changed = JSON.parse(event.data).views;
      const views = changed.includes("*") ? Object.keys(loaders) : changed;
      refresh(views.filter((view) => view in loaders));
      if (changed.includes("workspace.tree") || changed.includes("*")) refreshPreview();
    });
    events.onerror = () => {
      live.dataset.state = "lost";
      $("live-text").textContent = "reconnecting";
    };
  }

  // -- board -----------------------------------------------------------------------------

  async function loadBoard() {
    const board = $("board");
    if (!has("planning.board")) {
      missing(board, "planning");
      return;
    }
    const data = await api("planning.board");
    const tasks = data.tasks;
    // Lease times are the server's: shift them by the difference of the two clocks.
    const skew = Date.now() / 1000 - (data.now || Date.now() / 1000);
    const claims = new Map((data.claims || []).map((c) => [c.task_id, { ...c, until: c.until + skew }]));
    count("count-board", tasks.filter((t) => t.status === "pending" || t.status === "in_progress").length || null);
    const byId = new Map(tasks.map((t) => [t.id, t]));
    clear(board);
    for (const [status, title] of STATUSES) {
      const mine = tasks.filter((t) => t.status === status);
      const column = el("div", { class: "column", "data-status": status },
        el("h2", {}, el("span", { class: "swatch" }), `${title} · ${mine.length}`));
      if (!mine.length) column.append(el("div", { class: "none", text: "No tasks" }));
      for (const task of mine) column.append(taskCard(task, byId, claims.get(task.id)));
      board.append(column);
    }
  }

  function leaseLeft(claim) {
    const left = Math.max(0, Math.round(claim.until - Date.now() / 1000));
    return left < 90 ? `${left} s` : `${Math.round(left / 60)} min`;
  }

  function taskCard(task, byId, claim) {
    const meta = el("div", { class: "meta" });
    meta.append(el("span", { class: "chip owner", title: "owner", text: task.owner || "unassigned" }));
    if (claim) {
      meta.append(el("span", {
        class: "chip claim", title: "claimed: the lease ends unless its holder keeps working",
        "data-until": claim.until, text: `claimed · lease ${leaseLeft(claim)}`,
      }));
    }
    meta.append(el("span", { class: "chip", title: "creator", text: "by " + task.creator }));
    if (task.dependencies.length) {
      const open = task.dependencies.filter((id) => {
        const dep = byId.get(id);
        return dep && dep.status !== "completed";
      });
      meta.append(el("span", {
        class: "chip", title: "dependencies",
        text: "needs " + task.dependencies.map((id) => "#" + id).join(", ") + (open.length ? "" : " ✓"),
      }));
    }
    return el("button", { type: "button", class: "task", "data-task-id": task.id, onclick: () => showTask(task, byId) },
      el("div", { class: "id", text: "#" + task.id }),
      el("div", { class: "desc", text: task.description }),
      meta,
      task.output ? el("div", { class: "output", text: task.output }) : null);
  }

  function showTask(task, byId) {
    const deps = task.dependencies.length
      ? el("span", {}, ...task.dependencies.map((id, i) => {
        const dep = byId.get(id);
        return el("span", {}, i ? ", " : "", `#${id}${dep ? ` ${dep.description} (${statusLabel(dep.status)})` : ""}`);
      }))
      : "none";
    const dependents = [...byId.values()].filter((t) => t.dependencies.includes(task.id)).map((t) => "#" + t.id);
    openDrawer(`Task #${task.id}`, el("dl", { class: "fields" },
      el("dt", { text: "Description" }), el("dd", { text: task.description }),
      el("dt", { text: "Status" }), el("dd", { "data-status": task.status, text: statusLabel(task.status) }),
      el("dt", { text: "Owner" }), el("dd", { text: task.owner || "unassigned" }),
      el("dt", { text: "Creator" }), el("dd", { text: task.creator }),
      el("dt", { text: "Depends on" }), el("dd", {}, deps),
      el("dt", { text: "Needed by" }), el("dd", { text: dependents.join(", ") || "none" }),
      el("dt", { text: "Output" }), el("dd", { text: task.output || "—" }),
      el("dt", { text: "Created" }), el("dd", { text: dateTime(task.created_at) }),
      el("dt", { text: "Updated" }), el("dd", { text: dateTime(task.updated_at) }),
      el("dt", { text: "History" }), el("dd", { text: (task.history || []).join("; ") || "—" })));
  }

  function statusLabel(status) {
    return STATUS_LABEL.get(status) || status;
  }

  function openDrawer(title, content) {
    $("drawer-title").textContent = title;
    clear($("drawer-content")).append(content);
    $("drawer").hidden = false;
    $("drawer-close").focus();
  }

  function closeDrawer() {
    $("drawer").hidden = true;
  }

  // -- graph -----------------------------------------------------------------------------

  function typeColours(entities) {
    const types = [...new Set(entities.map((e) => e.entity_type))].sort();
    return new Map(types.map((type, i) => [type, PALETTE[i % PALETTE.length]]));
  }

  async function loadGraph() {
    const canvas = $("graph-svg");
    if (!has("knowledge_graph.graph")) {
      clear(canvas);
      $("graph-empty").hidden = false;
      $("graph-empty").textContent = "This team has no knowledge graph card.";
      return;
    }
    const graph = await api("knowledge_graph.graph");
    state.graph = graph;
    count("count-graph", graph.entities.length || null);
    drawGraph();
    if (state.selected) {
      const still = graph.entities.find((e) => e.name === state.selected);
      if (still) showEntity(still.name);
      else state.selected = null;
    }
  }

  function drawGraph() {
    const graph = state.graph;
    const canvas = clear($("graph-svg"));
    const empty = $("graph-empty");
    empty.hidden = graph.entities.length > 0;
    empty.textContent = "The knowledge graph is empty.";
    const colours = typeColours(graph.entities);
    drawLegend(colours);
    if (!graph.entities.length) return;
    const scale = SCALE;
    const at = (name) => {
      const p = graph.positions[name] || [0, 0];
      return [p[0] * scale, p[1] * scale];
    };
    const xs = graph.entities.map((e) => at(e.name)[0]);
    const ys = graph.entities.map((e) => at(e.name)[1]);
    const pad = 80;
    // Never closer than the natural size: a small graph is drawn small, in the middle.
    const width = Math.max(Math.max(...xs) - Math.min(...xs) + 2 * pad, canvas.clientWidth || 900);
    const height = Math.max(Math.max(...ys) - Math.min(...ys) + 2 * pad, canvas.clientHeight || 560);
    const cx = (Math.max(...xs) + Math.min(...xs)) / 2;
    const cy = (Math.max(...ys) + Math.min(...ys)) / 2;
    const box = [cx - width / 2, cy - height / 2, width, height];
    state.fit = box;
    if (!state.viewBox) state.viewBox = box.slice();
    const defs = svg("defs");
    const marker = svg("marker", { id: "arrow", viewBox: "0 0 10 10", refX: 19, refY: 5, markerWidth: 7, markerHeight: 7, orient: "auto-start-reverse" });
    marker.append(svg("path", { d: "M 0 0 L 10 5 L 0 10 z", fill: "#b6c0d1" }));
    defs.append(marker);
    canvas.append(defs);
    const edges = svg("g", { class: "edges" });
    const labels = svg("g", { class: "edge-labels" });
    for (const relation of graph.relations) {
      const [x1, y1] = at(relation.from_entity);
      const [x2, y2] = at(relation.to_entity);
      const line = svg("line", { class: "edge", x1, y1, x2, y2, "marker-end": "url(#arrow)" });
      line.dataset.from = relation.from_entity;
      line.dataset.to = relation.to_entity;
      edges.append(line);
      const label = svg("text", { class: "edge-label", x: (x1 + x2) / 2, y: (y1 + y2) / 2 - 3 });
      label.textContent = relation.relation_type;
      labels.append(label);
    }
    const nodes = svg("g", { class: "nodes" });
    for (const entity of graph.entities) {
      const [x, y] = at(entity.name);
      const node = svg("g", { class: "node" + (entity.is_root ? " root" : ""), transform: `translate(${x} ${y})` });
      node.dataset.name = entity.name;
      node.setAttribute("role", "button");
      node.setAttribute("tabindex", "0");
      node.setAttribute("aria-label", `${entity.name} (${entity.entity_type})`);
      node.append(svg("circle", { r: entity.is_root ? 11 : 8, fill: colours.get(entity.entity_type) }));
      const title = svg("title");
      title.textContent = `${entity.name} · ${entity.entity_type}`;
      node.append(title);
      const text = svg("text", { class: "label", x: 0, y: entity.is_root ? 25 : 22, "text-anchor": "middle" });
      text.textContent = entity.name.length > 40 ? entity.name.slice(0, 39) + "…" : entity.name;
      node.append(text);
      node.addEventListener("click", (event) => {
        event.stopPropagation();
        showEntity(entity.name);
      });
      node.addEventListener("keydown", (event) => {
        if (event.key === "Enter" || event.key === " ") showEntity(entity.name);
      });
      nodes.append(node);
    }
    canvas.append(edges, labels, nodes);
    applyViewBox();
    markGraph();
  }

  function drawLegend(colours) {
    const legend = clear($("graph-legend"));
    for (const [type, colour] of colours) {
      const swatch = el("i");
      swatch.style.background = colour;
      legend.append(el("span", {}, swatch, type));
    }
    if (colours.size) legend.append(el("span", {}, el("i", { class: "root-mark" }), "root"));
  }

  function applyViewBox() {
    const canvas = $("graph-svg");
    const box = state.viewBox;
    if (!box) return;
    canvas.setAttribute("viewBox", box.map((v) => v.toFixed(1)).join(" "));
    const pixels = canvas.clientWidth || 800;
    const zoom = pixels / box[2];
    const entities = state.graph ? state.graph.entities.length : 0;
    canvas.classList.toggle("dense", zoom < 0.55 || (entities > 150 && zoom < 0.9));
  }

  function zoom(factor, cx, cy) {
    const box = state.viewBox;
    if (!box) return;
    const x = cx === undefined ? box[0] + box[2] / 2 : cx;
    const y = cy === undefined ? box[1] + box[3] / 2 : cy;
    state.viewBox = [x - (x - box[0]) * factor, y - (y - box[1]) * factor, box[2] * factor, box[3] * factor];
    applyViewBox();
  }

  function markGraph() {
    for (const node of document.querySelectorAll("#graph-svg .node")) {
      node.classList.toggle("selected", node.dataset.name === state.selected);
      node.classList.toggle("hit", state.hits.has(node.dataset.name));
    }
    for (const edge of document.querySelectorAll("#graph-svg .edge")) {
      edge.classList.toggle("lit", !!state.selected && (edge.dataset.from === state.selected || edge.dataset.to === state.selected));
    }
  }

  function showEntity(name) {
    const graph = state.graph;
    const entity = graph && graph.entities.find((e) => e.name === name);
    if (!entity) return;
    state.selected = name;
    markGraph();
    const colours = typeColours(graph.entities);
    const detail = clear($("graph-detail"));
    const type = el("span", { class: "chip type", text: entity.entity_type });
    type.style.borderColor = colours.get(entity.entity_type);
    detail.append(el("h2", { text: entity.name }), type);
    if (entity.is_root) detail.append(el("span", { class: "chip", text: "root" }));
    detail.append(el("h3", { text: "Description" }), el("p", { text: entity.description || "—" }));
    detail.append(el("h3", { text: `Observations · ${entity.observations.length}` }));
    detail.append(entity.observations.length
      ? el("ul", { class: "observations" }, ...entity.observations.map((o) => el("li", { text: o })))
      : el("p", { class: "muted", text: "None yet." }));
    const outgoing = graph.relations.filter((r) => r.from_entity === name);
    const incoming = graph.relations.filter((r) => r.to_entity === name);
    detail.append(el("h3", { text: `Relations · ${outgoing.length + incoming.length}` }));
    const list = el("ul", { class: "relations" });
    for (const r of outgoing) list.append(el("li", {}, `${r.relation_type} → `, entityLink(r.to_entity)));
    for (const r of incoming) list.append(el("li", {}, entityLink(r.from_entity), ` → ${r.relation_type}`));
    detail.append(outgoing.length + incoming.length ? list : el("p", { class: "muted", text: "None." }));
  }

  function entityLink(name) {
    return el("button", { type: "button", class: "linkish", text: name, onclick: () => focusEntity(name) });
  }

  function focusEntity(name) {
    const p = state.graph && state.graph.positions[name];
    if (p && state.viewBox) {
      const box = state.viewBox;
      state.viewBox = [p[0] * SCALE - box[2] / 2, p[1] * SCALE - box[3] / 2, box[2], box[3]];
      applyViewBox();
    }
    showEntity(name);
  }

  let searchTimer = null;
  function onSearch() {
    clearTimeout(searchTimer);
    searchTimer = setTimeout(async () => {
      const query = $("graph-search").value.trim();
      if (!query || !has("knowledge_graph.search")) {
        state.hits = new Set();
        markGraph();
        return;
      }
      try {
        const result = await api("knowledge_graph.search", { query });
        state.hits = new Set(result.hits.map((h) => h.name));
        markGraph();
        const detail = clear($("graph-detail"));
        detail.append(el("h2", { text: `${result.hits.length} matches` }),
          el("p", { class: "muted", text: `“${result.query}” · ${result.mode} search` }));
        if (result.hits.length) {
          detail.append(el("ul", { class: "hits" }, ...result.hits.map((h) => el("li", {}, entityLink(h.name)))));
        }
      } catch (error) {
        clear($("graph-detail")).append(el("p", { class: "error", text: error.message }));
      }
    }, 250);
  }

  function setUpGraphControls() {
    const canvas = $("graph-svg");
    let drag = null;
    canvas.addEventListener("pointerdown", (event) => {
      if (event.target.closest && event.target.closest(".node")) return;
      drag = { x: event.clientX, y: event.clientY, box: state.viewBox && state.viewBox.slice() };
      canvas.classList.add("dragging");
      canvas.setPointerCapture(event.pointerId);
    });
    canvas.addEventListener("pointermove", (event) => {
      if (!drag || !drag.box) return;
      const per = drag.box[2] / (canvas.clientWidth || 1);
      state.viewBox = [drag.box[0] - (event.clientX - drag.x) * per, drag.box[1] - (event.clientY - drag.y) * per,
        drag.box[2], drag.box[3]];
      applyViewBox();
    });
    const stop = () => {
      drag = null;
      canvas.classList.remove("dragging");
    };
    canvas.addEventListener("pointerup", stop);
    canvas.addEventListener("pointercancel", stop);
    canvas.addEventListener("wheel", (event) => {
      event.preventDefault();
      const box = state.viewBox;
      if (!box) return;
      const rect = canvas.getBoundingClientRect();
      const cx = box[0] + ((event.clientX - rect.left) / rect.width) * box[2];
      const cy = box[1] + ((event.clientY - rect.top) / rect.height) * box[3];
      zoom(event.deltaY > 0 ? 1.15 : 1 / 1.15, cx, cy);
    }, { passive: false });
    $("zoom-in").addEventListener("click", () => zoom(1 / 1.3));
    $("zoom-out").addEventListener("click", () => zoom(1.3));
    $("zoom-fit").addEventListener("click", () => {
      if (state.fit) state.viewBox = state.fit.slice();
      applyViewBox();
    });
    $("graph-search").addEventListener("input", onSearch);
    window.addEventListener("resize", applyViewBox);
  }

  // -- tool calls ------------------------------------------------------------------------

  async function loadCalls() {
    const data = await api("team.calls");
    state.calls = data.calls;
    count("count-calls", data.calls.length || null);
    fillFilter($("filter-agent"), data.calls.map((c) => c.agent || "—"));
    fillFilter($("filter-tool"), data.calls.map((c) => c.tool));
    drawCalls();
  }

  function fillFilter(select, values) {
    const current = select.value;
    const options = [...new Set(values)].sort();
    clear(select).append(el("option", { value: "", text: "all" }));
    for (const value of options) select.append(el("option", { value, text: value }));
    select.value = options.includes(current) ? current : "";
  }

  function drawCalls() {
    const agent = $("filter-agent").value;
    const tool = $("filter-tool").value;
    const failedOnly = $("filter-failed").checked;
    const shown = state.calls.filter((c) => (!agent || (c.agent || "—") === agent) && (!tool || c.tool === tool)
      && (!failedOnly || !c.success));
    const body = clear(document.querySelector("#calls tbody"));
    for (const call of shown) {
      const result = el("td", {}, el("span", { class: "result " + (call.success ? "ok" : "refused"), text: call.success ? "ok" : "refused" }));
      if (call.error) result.append(el("div", { class: "error", text: call.error }));
      body.append(el("tr", { "data-tool": call.tool },
        el("td", { title: call.at || "", text: time(call.at) }),
        el("td", { text: call.agent || "—" }),
        el("td", { class: "tool", text: call.tool }),
        el("td", { text: call.channel.replace("_", " ") }),
        result,
        el("td", { class: "num", text: `${call.latency_ms.toFixed(1)} ms` })));
    }
    const failed = state.calls.filter((c) => !c.success).length;
    $("calls-summary").textContent = `${shown.length} of ${state.calls.length} calls · ${failed} refused`;
    $("calls-empty").hidden = state.calls.length > 0;
  }

  // -- team ------------------------------------------------------------------------------

  async function loadRoster() {
    const roster = await api("team.roster");
    const members = clear(document.querySelector("#members tbody"));
    for (const m of roster.members) {
      members.append(el("tr", { "data-handle": m.handle }, el("td", { text: m.handle }), el("td", { text: m.role }),
        el("td", { class: "muted", title: `joined ${dateTime(m.joined)}`, text: `${m.host} · ${m.pid}` }),
        el("td", { title: m.seen, text: time(m.seen) })));
    }
    if (!roster.members.length) members.append(el("tr", {}, el("td", { colspan: 4, class: "muted", text: "Nobody is in the team right now." })));
    const seen = clear(document.querySelector("#agents-seen tbody"));
    for (const a of roster.agents_seen) {
      const now = el("span", { class: "result " + (a.present ? "ok" : "gone"), text: a.present ? "present" : "left" });
      seen.append(el("tr", { "data-handle": a.handle }, el("td", { text: a.handle }), el("td", {}, now),
        el("td", { class: "num", text: a.calls }), el("td", { class: "num", text: a.failed }), el("td", { text: time(a.last_call) })));
    }
    if (!roster.agents_seen.length) seen.append(el("tr", {}, el("td", { colspan: 5, class: "muted", text: "No tool calls yet." })));
    const roles = clear($("roles"));
    const entries = Object.entries(roster.roles);
    for (const [role, description] of entries) roles.append(el("li", {}, el("strong", { text: role }), description ? ` — ${description}` : ""));
    if (!entries.length) roles.append(el("li", { class: "muted", text: "No role profiles registered here." }));
    count("count-team", roster.members.length || null);
  }

  async function loadUsage() {
    const box = $("usage-box");
    if (!has("team.usage")) {
      box.hidden = true;
      return;
    }
    box.hidden = false;
    const usage = await api("team.usage");
    const t = usage.total;
    $("usage-summary").textContent = `${t.calls.toLocaleString()} calls, ${t.result_tokens.toLocaleString()} result tokens, `
      + `${t.argument_tokens.toLocaleString()} argument tokens, ${t.tool_time_s.toFixed(1)} s of tool time (tokens: ${usage.counted_with}).`;
    const fill = (id, rows, label) => {
      const body = clear(document.querySelector(`#${id} tbody`));
      const ranked = Object.entries(rows).sort((a, b) => b[1].result_tokens - a[1].result_tokens);
      for (const [name, u] of ranked) {
        body.append(el("tr", { "data-name": name }, el("td", { text: label(name) }), el("td", { class: "num", text: u.calls.toLocaleString() }),
          el("td", { class: "num", text: u.result_tokens.toLocaleString() }), el("td", { class: "num", text: u.argument_tokens.toLocaleString() }),
          el("td", { class: "num", text: `${u.tool_time_s.toFixed(1)} s` })));
      }
      if (!ranked.length) body.append(el("tr", {}, el("td", { colspan: 5, class: "muted", text: "No tool calls yet." })));
    };
    fill("usage-members", usage.by_member, (name) => name);
    fill("usage-tasks", usage.by_task, (name) => (name === "none" ? "no task" : `#${name}`));
    fill("usage-cards", usage.by_card, (name) => name);
    const budgets = clear(document.querySelector("#usage-budgets tbody"));
    for (const b of usage.budgets) {
      const limits = ["calls", "result_tokens", "tool_time_s"].filter((k) => b[k] !== null).map((k) => `${k} ${b[k]}`).join(", ");
      const pct = Math.round(b.share * 100);
      budgets.append(el("tr", { "data-budget": b.label, class: pct >= 100 ? "spent" : pct >= 80 ? "warn" : "" },
        el("td", { text: b.label }), el("td", { text: limits }), el("td", { class: "num", text: `${pct} %` }), el("td", { text: b.set_by })));
    }
    if (!usage.budgets.length) budgets.append(el("tr", {}, el("td", { colspan: 4, class: "muted", text: "No budgets set." })));
  }

  // -- files -----------------------------------------------------------------------------

  async function loadFiles() {
    const tree = $("tree");
    if (!has("workspace.tree")) {
      missing(tree, "workspace");
      return;
    }
    const data = await api("workspace.tree");
    count("count-files", data.entries.filter((e) => e.kind === "file").length || null);
    const root = { children: new Map() };
    for (const entry of data.entries) {
      const parts = entry.path.split("/");
      let node = root;
      for (let i = 0; i < parts.length - 1; i++) {
        if (!node.children.has(parts[i])) node.children.set(parts[i], { entry: { kind: "dir", path: parts.slice(0, i + 1).join("/") }, children: new Map() });
        node = node.children.get(parts[i]);
      }
      const name = parts[parts.length - 1];
      const existing = node.children.get(name);
      node.children.set(name, { entry, children: existing ? existing.children : new Map() });
    }
    clear(tree).append(treeList(root));
    if (!data.entries.length) tree.append(el("p", { class: "muted", text: "The workspace is empty." }));
    if (data.truncated) tree.append(el("p", { class: "muted", text: "Only the first entries are listed." }));
  }

  function treeList(node) {
    const list = el("ul");
    for (const [name, child] of node.children) {
      const entry = child.entry;
      if (entry.kind === "dir") {
        const open = state.openDirs.has(entry.path);
        const item = el("li", { class: "dir" + (open ? " open" : "") });
        item.append(el("button", {
          type: "button", text: name + (entry.skipped ? " (not listed)" : ""),
          onclick: () => {
            if (state.openDirs.has(entry.path)) state.openDirs.delete(entry.path);
            else state.openDirs.add(entry.path);
            loadFiles();
          },
        }));
        if (open) item.append(treeList(child));
        list.append(item);
      } else if (entry.kind === "file") {
        list.append(el("li", { class: "file" }, el("button", {
          type: "button", class: state.file === entry.path ? "current" : null, "data-path": entry.path,
          onclick: () => preview(entry.path),
        }, name, el("span", { class: "size", text: size(entry.size) }))));
      } else {
        list.append(el("li", { class: "special", text: `${name} (${entry.kind === "link" ? "link" : "special file"})` }));
      }
    }
    return list;
  }

  let previews = 0; // the number of the latest preview: an earlier one's late answer is dropped

  async function preview(path) {
    const turn = ++previews;
    state.file = path;
    for (const button of document.querySelectorAll("#tree .file > button")) {
      button.classList.toggle("current", button.dataset.path === path);
    }
    // Built apart and put in place whole once the answer is in: a click and a refresh (or two
    // clicks) overlapping would otherwise both fill the box.
    const parts = [el("h2", { text: path })];
    try {
      const file = await api("workspace.file", { path });
      parts.push(el("p", { class: "muted", text: `${size(file.size)} · ${file.kind}` }));
      if (file.kind === "text") {
        parts.push(el("pre", { class: "file-text", text: file.text }));
        if (file.truncated) parts.push(el("p", { class: "muted", text: "Only the beginning of the file is shown." }));
      } else if (file.kind === "image") {
        parts.push(el("img", { src: "/api/files/image?" + new URLSearchParams({ path }).toString(), alt: path }));
      } else {
        parts.push(el("p", { class: "muted", text: "A binary file: no preview." }));
      }
    } catch (error) {
      parts.push(el("p", { class: "error", text: error.message }));
    }
    if (turn === previews) clear($("preview")).append(...parts);
  }

  function refreshPreview() {
    if (state.file && state.tab === "files") preview(state.file);
  }

  // -- start -----------------------------------------------------------------------------

  function start() {
    if (new URLSearchParams(location.search).has("token")) {
      // The cookie now holds the session: keep the token out of the address bar and history.
      history.replaceState(null, "", location.pathname + location.hash);
    }
    for (const tab of TABS) $("tab-" + tab).addEventListener("click", () => showTab(tab));
    window.addEventListener("hashchange", () => showTab(location.hash.slice(1)));
    $("drawer-close").addEventListener("click", closeDrawer);
    $("drawer").addEventListener("click", (event) => {
      if (event.target === $("drawer")) closeDrawer();
    });
    document.addEventListener("keydown", (event) => {
      if (event.key === "Escape") closeDrawer();
    });
    for (const id of ["filter-agent", "filter-tool", "filter-failed"]) $(id).addEventListener("change", drawCalls);
    setUpGraphControls();
    const tab = location.hash.slice(1);
    state.tab = TABS.includes(tab) ? tab : "board";
    for (const name of TABS) {
      $("tab-" + name).setAttribute("aria-selected", String(name === state.tab));
      $("panel-" + name).hidden = name !== state.tab;
    }
    connect();
    // Lease times count down between board changes.
    setInterval(() => {
      for (const chip of document.querySelectorAll(".chip.claim")) {
        chip.textContent = `claimed · lease ${leaseLeft({ until: Number(chip.dataset.until) })}`;
      }
    }, 5000);
  }

  document.addEventListener("DOMContentLoaded", start);
})();
