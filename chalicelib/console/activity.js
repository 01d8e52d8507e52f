// Activity (/activity): every run of the organization's agents, newest first, a page at a time -
// production runs the platform reported, eval cases (Eval) and the judge's gradings (Grader) -
// each saying what it was asked; Source narrows to one kind. An eval case opens its eval run on
// that case, and See what the model saw shows what its model was given.
import { get, h, href, show, when, crumbs, usd, errorBox } from "./lib.js";
import { agentLink, names } from "./lists.js";

const SOURCES = [["", "Every source"], ["production", "Production"], ["eval", "Eval"], ["grader", "Grader"]];
const LIMIT = 25;

function address(source, before) {
  const q = new URLSearchParams();
  if (source) q.set("source", source);
  if (before) q.set("before", before);
  const s = q.toString();
  return href("activity") + (s ? `?${s}` : "");
}

function go(url, ctx) {
  return (e) => {
    e?.preventDefault?.();
    history.pushState(null, "", url);
    render(ctx).then(() => document.getElementById("main").focus());
  };
}

// What the model was given, read when the reader opens it (the list does not carry it).
function modelSaw(run) {
  const body = h("div", { class: "model-saw" });
  const details = h("details", { class: "saw", ontoggle: async () => {
    if (!details.open || body.childElementCount) return;
    try {
      const full = await get(`api/v1/runs/${encodeURIComponent(run.agent_run_id)}`);
      body.append(full.request === undefined
        ? h("p", { class: "muted" }, "It asked a case of a dataset you may not see.")
        : full.request === null
          ? h("p", { class: "muted" }, run.surface === "production"
            ? "What its model was given was not reported with it."
            : "What the judge was given is not kept.")
          : h("pre", { class: "request" }, JSON.stringify(full.request, null, 2)));
    } catch (err) {
      body.append(errorBox(err));
    }
  } }, h("summary", {}, "See what the model saw"), body);
  return details;
}

function caseLink(run) {
  const c = run.eval_case;
  if (!c) return null;
  const url = `${href("runs", c.run_id)}?${new URLSearchParams({ case: c.case_id })}#cases`;
  return h("a", { href: url, class: "eval-case" }, `Case ${c.case_id} of its eval run`);
}

// What an empty Activity says, by Source: none yet, and the next step that makes one.
function emptyWords(source) {
  const agents = h("a", { href: href("agents") }, "Agents");
  const evals = ["open an agent on ", agents, " and choose Run evals: each case it answers shows here as Eval"];
  const production = ["the platform that serves your agent reports each request it served (",
    h("code", {}, "POST /api/v1/usage/runs"), ") and it shows here as Production"];
  if (source === "production") return ["No production runs yet: ", ...production, "."];
  if (source === "eval") return ["No eval cases yet: ", ...evals, "."];
  if (source === "grader") return ["No gradings yet: an eval run on a dataset a judge scores shows each grading here; ",
    ...evals, "."];
  return ["No runs yet. To see some, ", ...evals, "; ", ...production, "."];
}

export async function render(ctx) {
  const params = new URLSearchParams(location.search);
  const source = SOURCES.some(([v]) => v === params.get("source")) ? params.get("source") || "" : "";
  const before = params.get("before");
  const query = new URLSearchParams({ limit: String(LIMIT) });
  if (source) query.set("surface", source);
  if (before) query.set("before", before);
  const [page, agents] = await Promise.all([get(`api/v1/runs?${query}`), names("agents")]);
  const filter = h("select", { id: "source", onchange: (ev) => go(address(ev.target.value, null), ctx)() },
    SOURCES.map(([v, label]) => h("option", { value: v, selected: v === source }, label)));
  const rows = page.runs.map((r) => h("tr", { "data-agent-run": r.agent_run_id, "data-surface": r.surface },
    h("td", {}, h("span", { class: `badge source ${r.surface}` }, r.label)),
    h("td", {}, agentLink(r.agent_id, agents)),
    h("td", { class: "asked" }, h("p", {}, r.asked || h("span", { class: "muted" }, "(not kept)")), caseLink(r), modelSaw(r)),
    h("td", { class: "num" }, usd(r.cost_usd)),
    h("td", {}, when(r.started_at))));
  const table = rows.length
    ? h("div", { class: "scroll" }, h("table", { class: "activity", "aria-label": "Runs, newest first" },
      h("thead", {}, h("tr", {}, ["Source", "Agent", "Asked", "Cost", "Started (UTC)"].map((c) => h("th", { scope: "col" }, c)))),
      h("tbody", {}, rows)))
    : h("p", { class: "muted", id: "activity-empty" }, before ? "No more runs." : emptyWords(source));
  const nav = h("nav", { class: "actions pager", "aria-label": "Pages of runs" },
    before ? h("a", { href: address(source, null), onclick: go(address(source, null), ctx) }, "First page") : null,
    page.next ? h("a", { href: address(source, page.next), class: "button", id: "next-page", onclick: go(address(source, page.next), ctx) }, "Next page") : null);
  show("Activity", crumbs(["Activity"]), h("h1", {}, "Activity"),
    h("div", { class: "filters" }, h("div", {}, h("label", { for: "source" }, "Source"), filter)), table, nav);
}
