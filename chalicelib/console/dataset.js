// A dataset's Results → Test runs (/datasets/{id}): every agent measured on it, a shared trend, the
// runs table, and Run evals, which opens the start dialog on the dataset asking which agent to
// test, the agent last measured on it chosen. Its Review tab (?tab=review, review.js) holds the
// answers waiting for a person's verdict; the tab's label counts them.
import { get, h, href, show, errorBox, guarded, pct, plural, when, crumbs } from "./lib.js";
import { chart } from "./chart.js";
import { openStartDialog } from "./start.js";
import { render as renderReview, tabLabel, waitingCount } from "./review.js";
import { agentLink, candidateResult, countCell, couldNotRun, names, rateCell, runLink, runsTable,
  statusText, testedAgainst, verdictCell } from "./lists.js";

const MAX_PAGES = 20; // 200 runs a page: a dataset's history, read once per visit

async function allRuns(id) {
  const runs = [];
  let cursor = null;
  for (let i = 0; i < MAX_PAGES; i++) {
    const q = new URLSearchParams({ limit: "200" });
    if (cursor) q.set("cursor", cursor);
    const page = await get(`api/v1/datasets/${encodeURIComponent(id)}/eval-runs?${q}`);
    runs.push(...page.runs);
    cursor = page.next_cursor;
    if (!cursor) break;
  }
  return runs;
}

// An unknown dataset's chart answers 404 as the dataset does: the page says so once, not twice.
async function trend(id, rerender) {
  try {
    return await chart(`api/v1/datasets/${encodeURIComponent(id)}/eval-runs/chart`, rerender);
  } catch (err) {
    if (err.status === 404) return null;
    return errorBox(err);
  }
}

// The dataset's tabs, `current` ("results" or "review") marked; Review counts what waits.
function tabsOf(id, current) {
  return (waiting) => h("nav", { class: "tabs", "aria-label": "Dataset" },
    h("a", { href: href("datasets", id), id: "tab-results", "aria-current": current === "results" ? "page" : null }, "Results"),
    h("a", { href: `${href("datasets", id)}?tab=review`, id: "tab-review", "aria-current": current === "review" ? "page" : null },
      tabLabel(waiting)));
}

export async function render(ctx) {
  const { access, params } = ctx;
  const id = params[0];
  if (new URLSearchParams(location.search).get("tab") === "review") {
    const dataset = await get(`api/v1/datasets/${encodeURIComponent(id)}`);
    const head = [crumbs(["Datasets", href("datasets")], [dataset.name || id, href("datasets", id)], ["Review"]),
      h("h1", {}, dataset.name || id)];
    return renderReview(ctx, { dataset, head, tabs: tabsOf(id, "review") });
  }
  const rerender = () => render(ctx);
  const [dataset, runs, agents, figure, waiting] = await Promise.all([
    get(`api/v1/datasets/${encodeURIComponent(id)}`), allRuns(id), names("agents"),
    trend(id, rerender), waitingCount(id)]);
  const measured = new Map(); // agent id -> its runs, newest first
  for (const r of runs) measured.set(r.agent_id, [...(measured.get(r.agent_id) || []), r]);
  const tabs = tabsOf(id, "results")(waiting);
  const subtabs = h("nav", { class: "tabs subtabs", "aria-label": "Results" },
    h("a", { href: href("datasets", id), "aria-current": "page" }, "Test runs"));
  const runnable = Object.keys(agents).filter((a) => access.may("agents:run", { agent: a }));
  const lacking = access.missing([["runs:view"], ["datasets:run", { dataset: id }]])
    || (runnable.length ? null : "agents:run");
  const button = h("button", { type: "button", class: "primary", id: "run-evals",
    onclick: () => openStartDialog(ctx, { agents, datasetId: id,
      agentId: [...measured.keys()].find((a) => runnable.includes(a)) || runnable[0] }) }, "Run evals");
  const version = dataset.version;
  const head = h("div", { class: "actions" }, guarded(button, lacking, "run evals on this dataset"),
    version ? h("span", { class: "muted" }, `v${version.version} · ${plural(version.case_count || 0, "case")}`) : null);
  const agentList = measured.size
    ? h("ul", { class: "measured", "aria-label": "Agents measured" }, [...measured].map(([a, rs]) => {
      const latest = rs[0];
      return h("li", { "data-agent": a }, agentLink(a, agents), " — ", plural(rs.length, "run"),
        ", latest ", couldNotRun(latest) ? "could not run" : pct(candidateResult(latest).pass_rate),
        " (", runLink(latest, when(latest.started_at || latest.created_at)), ")");
    }))
    : h("section", { class: "empty", id: "no-runs" }, h("p", {}, "No agent was measured on this dataset yet."),
      h("p", {}, lacking
        ? `Ask somebody who may run evals on it (${lacking}) to start one.`
        : ["Choose ", h("strong", {}, "Run evals"), " above and pick the agent to measure."]));
  const table = runs.length ? runsTable(runs, [
    ["Run", (r) => runLink(r, when(r.started_at || r.created_at))],
    ["Agent", (r) => agentLink(r.agent_id, agents)],
    ["Tested", testedAgainst],
    ["Status", statusText],
    ["Verdict", verdictCell],
    ["Pass rate", rateCell],
    ["Passed", countCell],
  ], "Test runs on this dataset, newest first") : null;
  show(dataset.name || id, crumbs(["Datasets", href("datasets")], [dataset.name || id]), h("h1", {}, dataset.name || id), tabs, subtabs, head,
    h("h2", {}, "Agents measured"), agentList, figure, table);
}
