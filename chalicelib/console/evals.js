// Eval runs (/evals): every run the reader may see, across agents, newest first, a page at a time;
// the page's cursor is kept in the address so Back returns to the page before.
import { get, h, href, show, when, crumbs } from "./lib.js";
import { COMMANDS } from "./words.js";
import { agentLink, countCell, names, rateCell, runLink, runsTable, statusText, testedAgainst, verdictCell } from "./lists.js";

const DEFAULT_LIMIT = 25;

function pageSize(params) {
  const n = parseInt(params.get("limit") || "", 10);
  return Number.isInteger(n) && n >= 1 && n <= 200 ? n : DEFAULT_LIMIT;
}

export async function render(ctx) {
  const params = new URLSearchParams(location.search);
  const cursor = params.get("cursor");
  const limit = pageSize(params);
  const query = new URLSearchParams({ limit: String(limit) });
  if (cursor) query.set("cursor", cursor);
  const [page, agents, datasets] = await Promise.all([
    get(`api/v1/eval-runs?${query}`), names("agents"), names("datasets")]);
  const title = [crumbs(["Eval runs"]), h("h1", {}, "Eval runs")];
  if (!page.runs.length && !cursor) return show("Eval runs", title, emptyState(ctx, agents));
  const table = runsTable(page.runs, [
    ["Run", (r) => runLink(r)],
    ["Agent", (r) => agentLink(r.agent_id, agents)],
    ["Tested", testedAgainst],
    ["Dataset", (r) => h("a", { href: href("datasets", r.dataset_id) }, datasets[r.dataset_id] || r.dataset_id)],
    ["Status", statusText],
    ["Verdict", verdictCell],
    ["Pass rate", rateCell],
    ["Passed", countCell],
    ["Started (UTC)", (r) => when(r.started_at || r.created_at)],
  ], "Eval runs, newest first");
  const nav = h("nav", { class: "actions pager", "aria-label": "Pages of eval runs" },
    cursor ? h("a", { href: pageHref(null, limit), onclick: go(null, limit, ctx) }, "First page") : null,
    page.next_cursor
      ? h("a", { href: pageHref(page.next_cursor, limit), class: "button", id: "next-page",
        onclick: go(page.next_cursor, limit, ctx) }, "Next page")
      : h("span", { class: "muted" }, "No more runs."));
  show("Eval runs", title, table, nav);
}

function pageHref(cursor, limit) {
  const q = new URLSearchParams();
  if (limit !== DEFAULT_LIMIT) q.set("limit", String(limit));
  if (cursor) q.set("cursor", cursor);
  const s = q.toString();
  return href("evals") + (s ? `?${s}` : "");
}

// Pushes the page into the address (Back returns to this one) and draws it.
function go(cursor, limit, ctx) {
  return (e) => {
    e.preventDefault();
    history.pushState(null, "", pageHref(cursor, limit));
    render(ctx).then(() => document.getElementById("main").focus());
  };
}

function emptyState(ctx, agents) {
  const ids = Object.keys(agents);
  const about = h("p", {}, "No eval runs yet. An eval run has an agent answer every case of a dataset, scores each ",
    "answer the way the dataset's scoring says, and compares the result with an earlier version: did ",
    "this change make the agent better, worse, or neither — and what did it cost.");
  if (!ids.length) {
    return h("section", { class: "empty", id: "evals-empty" }, about,
      h("p", {}, "First create an agent", ctx.access.may("agents:edit") ? "" : " (or ask somebody who may edit agents)", ":"),
      h("pre", { class: "command" }, h("code", {}, COMMANDS.createAgent)),
      h("p", {}, "and import the cases to measure it on:"),
      h("pre", { class: "command" }, h("code", {}, COMMANDS.importDataset)),
      h("p", {}, "Then open the agent on the ", h("a", { href: href("agents") }, "Agents"), " page and choose ",
        h("strong", {}, "Run evals"), "."));
  }
  return h("section", { class: "empty", id: "evals-empty" }, about,
    h("p", {}, "To start one, open an agent below and choose ", h("strong", {}, "Run evals"), "."),
    h("ul", { "aria-label": "Agents you can see" }, ids.map((id) => h("li", {}, agentLink(id, agents)))));
}
