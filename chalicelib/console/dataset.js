// A dataset's Results → Test runs (/datasets/{id}): every agent measured on it, a shared trend, the
// runs table, and Run evals, which opens the start dialog on the dataset asking which agent to
// test (seed 004 "In the console").
import { api, get, h, href, show, errorBox, guarded, pct, plural, usd, when } from "./lib.js";
import { chart } from "./chart.js";
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

export async function render(ctx) {
  const { access, params } = ctx;
  const id = params[0];
  const rerender = () => render(ctx);
  const [dataset, runs, agents, figure] = await Promise.all([
    get(`api/v1/datasets/${encodeURIComponent(id)}`), allRuns(id), names("agents"),
    trend(id, rerender)]);
  const measured = new Map(); // agent id -> its runs, newest first
  for (const r of runs) measured.set(r.agent_id, [...(measured.get(r.agent_id) || []), r]);
  const tabs = h("nav", { class: "tabs", "aria-label": "Dataset" },
    h("a", { href: href("datasets", id), "aria-current": "page" }, "Results"));
  const subtabs = h("nav", { class: "tabs subtabs", "aria-label": "Results" },
    h("a", { href: href("datasets", id), "aria-current": "page" }, "Test runs"));
  const runnable = Object.keys(agents).filter((a) => access.may("agents:run", { agent: a }));
  const lacking = access.missing([["runs:view"], ["datasets:run", { dataset: id }]])
    || (runnable.length ? null : "agents:run");
  const button = h("button", { type: "button", class: "primary", id: "run-evals",
    onclick: () => openDialog(ctx, dataset, agents, measured) }, "Run evals");
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
    : h("p", { class: "muted", id: "no-runs" }, "No agent was measured on this dataset yet.");
  const table = runs.length ? runsTable(runs, [
    ["Run", (r) => runLink(r, when(r.started_at || r.created_at))],
    ["Agent", (r) => agentLink(r.agent_id, agents)],
    ["Tested", testedAgainst],
    ["Status", statusText],
    ["Verdict", verdictCell],
    ["Pass rate", rateCell],
    ["Passed", countCell],
  ], "Test runs on this dataset, newest first") : null;
  show(dataset.name || id, h("h1", {}, dataset.name || id), tabs, subtabs, head,
    h("h2", {}, "Agents measured"), agentList, figure, table);
}

function scoringText(dataset, estimate) {
  if (estimate && estimate.judge) {
    const j = estimate.judge;
    return `the judge ${j.judge_id} v${j.version}${j.model ? ` (${j.model})` : ""}`;
  }
  const s = dataset.version && dataset.version.scoring;
  const req = (s && s.required) || [];
  return req.length ? `the dataset's scoring: ${req.join(", ")}` : "the dataset's scoring";
}

function budgetText(after) {
  return after === null || after === undefined ? "no budget set" : `${usd(after)} left after it`;
}

// The start dialog on the dataset: which agent, then the candidate, the estimate, and the start
// button that names the amount. The agent the dataset was last measured with is chosen first.
async function openDialog(ctx, dataset, agents, measured) {
  const { access } = ctx;
  const id = dataset.dataset_id;
  const ids = Object.keys(agents);
  const first = [...measured.keys()].find((a) => agents[a]) || ids[0];
  const agentSel = h("select", { id: "start-agent", name: "agent", required: true },
    ids.map((a) => h("option", { value: a, selected: a === first }, agents[a])));
  const candSel = h("select", { id: "start-candidate", name: "candidate" });
  const estimateBox = h("div", { class: "estimate", id: "start-estimate", "aria-live": "polite" }, "Working out the cost…");
  const startSlot = h("div", { class: "actions" });
  const cancel = h("button", { type: "button", onclick: () => dialog.close() }, "Cancel");
  const dialog = h("dialog", { id: "start-dialog", "aria-labelledby": "start-title" },
    h("form", { method: "dialog", onsubmit: (e) => e.preventDefault() },
      h("h2", { id: "start-title" }, `Run evals on ${dataset.name || id}`),
      h("div", { class: "field" }, h("label", { for: "start-agent" }, "Agent to test"), agentSel),
      h("div", { class: "field" }, h("label", { for: "start-candidate" }, "Candidate"), candSel),
      estimateBox, startSlot, h("div", { class: "actions" }, cancel)));
  dialog.addEventListener("close", () => dialog.remove());
  document.body.append(dialog);
  dialog.showModal();
  let seq = 0;

  const body = () => {
    const b = { dataset_id: id };
    if (candSel.value === "draft") b.candidate = "draft";
    else Object.assign(b, { candidate: "version", version: "latest" });
    return b;
  };

  async function estimate() {
    const mine = ++seq;
    const agent = agentSel.value;
    startSlot.replaceChildren();
    estimateBox.replaceChildren("Working out the cost…");
    let est;
    try {
      est = await api("POST", `api/v1/agents/${encodeURIComponent(agent)}/eval-runs/estimate`, body());
    } catch (err) {
      if (mine === seq) estimateBox.replaceChildren(errorBox(err));
      return;
    }
    if (mine !== seq) return;
    const base = (est.arms || []).find((a) => a.role === "baseline");
    estimateBox.replaceChildren(
      h("p", {}, h("strong", { id: "estimate-total" }, usd(est.total_usd)), ` for ${plural(est.cases, "case")}`,
        base ? " against the version before" : " alone", "."),
      h("p", {}, "Graded by ", scoringText(dataset, est), "."),
      h("p", {}, `The agent's budget: ${budgetText(est.agent_after_usd)}; the organization's: ${budgetText(est.org_after_usd)}.`),
      est.within_budget === false ? h("p", { class: "error" }, "This run is over budget.") : null,
      (est.warnings || []).filter(Boolean).map((w) => h("p", { class: "muted" }, typeof w === "string" ? w : w.message || JSON.stringify(w))));
    const start = h("button", { type: "button", class: "primary", id: "start-run", onclick: async () => {
      start.disabled = true;
      try {
        const run = await api("POST", `api/v1/agents/${encodeURIComponent(agent)}/eval-runs`, body());
        location.assign(href("runs", run.run_id));
      } catch (err) {
        start.disabled = false;
        estimateBox.append(errorBox(err));
      }
    } }, `Start for ${usd(est.total_usd)}`);
    const lacking = access.missing([["runs:view"], ["datasets:run", { dataset: id }], ["agents:run", { agent }]]);
    startSlot.replaceChildren(guarded(start, lacking, "start this run"));
  }

  // The obvious candidate: the draft when it differs from the latest version (or none is
  // published), else the latest version.
  async function candidates() {
    const agent = agentSel.value;
    const row = await get(`api/v1/agents/${encodeURIComponent(agent)}`).catch(() => null);
    const latest = row && row.latest_version;
    let differs = true;
    if (latest) {
      const v = await get(`api/v1/agents/${encodeURIComponent(agent)}/versions/${latest}`).catch(() => null);
      differs = !v || v.spec_hash !== (row.draft && row.draft.spec_hash);
    }
    candSel.replaceChildren(
      h("option", { value: "draft", selected: differs }, latest ? (differs ? `Draft (differs from v${latest})` : "Draft") : "Draft (nothing published)"),
      latest ? h("option", { value: "latest", selected: !differs }, `Latest version (v${latest})`) : null);
    await estimate();
  }

  agentSel.addEventListener("change", candidates);
  candSel.addEventListener("change", estimate);
  agentSel.focus();
  if (ids.length) await candidates();
  else estimateBox.replaceChildren("You cannot see any agent to test.");
}
