// An agent's page on its Evals tab: the badges, each environment's guards, the pass-rate chart
// above the run history, the runs table, Run evals and the Suites card.
import { get, h, href, pct, when, show, guarded, verdictClass, errorBox, crumbs } from "./lib.js";
import { chart } from "./chart.js";
import { draftDiffers, openStartDialog } from "./start.js";
import { openPublishDialog } from "./publish.js";
import { names } from "./lists.js";
import { guardWord, thresholdWords, triggerWords } from "./words.js";

export async function render(ctx) {
  const [agentId] = ctx.params;
  const rerender = () => render(ctx);
  // the chart needs nothing else of the page: asked for first, it draws as soon as the rest does
  const trendP = chart(`api/v1/agents/${encodeURIComponent(agentId)}/eval-runs/chart`, rerender)
    .catch(errorBox);
  const agent = await get(`api/v1/agents/${encodeURIComponent(agentId)}`);
  const [latest, envs, promotions, runs, suites, datasetNames, guards] = await Promise.all([
    agent.latest_version ? get(`api/v1/agents/${encodeURIComponent(agentId)}/versions/${agent.latest_version}`) : null,
    get("api/v1/environments").catch(() => ({ environments: [] })),
    get(`api/v1/agents/${encodeURIComponent(agentId)}/promotions`).catch(() => ({ promotions: [] })),
    get(`api/v1/agents/${encodeURIComponent(agentId)}/eval-runs?limit=50`),
    get(`api/v1/agents/${encodeURIComponent(agentId)}/suites`).catch(() => ({ suites: [] })),
    names("datasets"),
    get(`api/v1/agents/${encodeURIComponent(agentId)}/guards`).catch(() => ({ environments: [] })),
  ]);
  const differs = draftDiffers(agent, latest);
  const state = { agent, latest, differs, runs: runs.runs, environments: envs.environments || [] };
  const open = (preset) => openStartDialog(ctx, { agent, latest, differs, runs: runs.runs, ...preset });

  const badges = h("div", { class: "badges", id: "badges" });
  if (!agent.latest_version) badges.append(h("span", { class: "badge" }, "Not published yet"));
  else if (differs) badges.append(h("span", { class: "badge", id: "draft-differs" }, `Draft differs from v${agent.latest_version}`));
  for (const env of state.environments) {
    const serving = (env.serving || {})[agentId];
    const waiting = (promotions.promotions || []).find((p) => p.environment_id === env.environment_id && p.status === "waiting");
    if (serving && agent.latest_version && serving < agent.latest_version && waiting) {
      badges.append(h("span", { class: "badge warn", "data-environment": env.environment_id },
        `${env.environment_id} on v${serving} (waiting for evals)`));
    } else if (serving) {
      // What each environment serves, so nobody needs the CLI to know what production runs.
      badges.append(h("span", { class: "badge", "data-environment": env.environment_id },
        `${env.environment_id} on v${serving}`));
    }
  }
  if (differs) {
    badges.append(startControl(ctx, agent, true, "Test draft", () => open({ candidate: "draft" })));
    const publish = h("button", { type: "button", id: "publish", onclick: () => openPublishDialog(agent, rerender) }, "Publish");
    badges.append(guarded(publish, ctx.access.missing([["agents:edit", { agent: agentId }]]), "publish"));
  }

  const tabs = h("nav", { class: "tabs", "aria-label": "Agent" },
    h("a", { href: href("agents", agentId), "aria-current": "page" }, "Evals"));

  const trend = await trendP;
  const runEvals = startControl(ctx, agent, false, "Run evals", () => open({}));
  const main = show(agent.name,
    crumbs(["Agents", href("agents")], [agent.name]),
    h("h1", {}, agent.name),
    badges,
    guardsCard(agentId, guards.environments || []),
    tabs,
    h("div", { class: "actions" }, runEvals),
    trend,
    h("h2", { id: "runs-heading" }, "Runs"),
    runs.runs.length ? runsTable(runs.runs, { datasets: datasetNames }) : noRuns(ctx, agent),
    suitesCard(agentId, suites.suites || [], datasetNames));
  if (new URLSearchParams(location.search).get("start") === "draft") open({ candidate: "draft" });
  return main;
}

// Run evals / Test draft, disabled with the reason for a reader who may not start; which dataset
// is chosen is checked again in the dialog.
function startControl(ctx, agent, draft, label, onclick) {
  const needs = [["runs:view"], ["agents:run", { agent: agent.agent_id }]];
  if (draft) needs.push(["agents:edit", { agent: agent.agent_id }]);
  const button = h("button", { type: "button", class: draft ? "" : "primary", onclick, "data-action": draft ? "test-draft" : "run-evals" }, label);
  return guarded(button, ctx.access.missing(needs), draft ? "test the draft" : "run evals");
}

function modelRates(run) {
  const candidates = (run.arms || []).filter((a) => a.role === "candidate");
  return candidates.map((a) => {
    const summary = (run.summaries || {})[a.arm_id] || {};
    const q = summary.quality || {};
    // the model the side's answers reported, else the one its spec names, else "default"
    return { arm: a, model: summary.model || a.model || a.model_profile_id || "default", q, broken: summary.could_not_run };
  });
}

// No run yet: the next step is Run evals above, or who may start one.
function noRuns(ctx, agent) {
  const may = !ctx.access.missing([["runs:view"], ["agents:run", { agent: agent.agent_id }]]);
  return h("section", { class: "empty", id: "runs-empty" },
    h("p", {}, "No eval runs yet. An eval run has this agent answer every case of a dataset and scores the answers."),
    h("p", {}, may
      ? ["Choose ", h("strong", {}, "Run evals"), " above to measure it on a dataset."]
      : "Ask somebody who may run this agent (agents:run) to start one."));
}

// The runs table, newest first: what was tested against what, status, verdict, the model each
// side answered on (the one its answers reported, else the one its spec names, else "default"),
// each model's pass rate (first answers' rate on hover) and passed/total.
export function runsTable(runs, { datasets = Object.create(null) } = {}) {
  const rows = runs.map((run) => {
    const rates = modelRates(run);
    return h("tr", { "data-run-id": run.run_id },
      h("td", {}, h("a", { href: href("runs", run.run_id) }, run.tested || run.run_id)),
      h("td", {}, h("a", { href: href("datasets", run.dataset_id) }, datasets[run.dataset_id] || run.dataset_id),
        h("span", { class: "muted" }, ` v${run.dataset_version}`)),
      h("td", {}, run.status),
      h("td", { class: `verdict ${verdictClass(run.verdict_phrase)}` }, run.verdict_phrase),
      h("td", {}, rates.map((r) => h("div", {}, r.model))),
      h("td", {}, rates.map((r) => h("div", { title: r.broken ? r.broken : `first answers: ${pct(r.q.first_pass_rate)}`, class: "rate" },
        r.broken ? "Could not run" : pct(r.q.pass_rate)))),
      h("td", {}, rates.map((r) => h("div", {}, r.q.cases !== undefined ? `${r.q.passed}/${r.q.cases}` : `${run.progress.passed}/${run.progress.expected}`))),
      h("td", {}, when(run.started_at || run.created_at)));
  });
  return h("div", { class: "scroll" }, h("table", { class: "runs" },
    h("caption", { class: "muted" }, "Newest first"),
    h("thead", {}, h("tr", {},
      h("th", { scope: "col" }, "Tested"),
      h("th", { scope: "col" }, "Dataset"),
      h("th", { scope: "col" }, "Status"), h("th", { scope: "col" }, "Verdict"),
      h("th", { scope: "col" }, "Model"), h("th", { scope: "col" }, "Pass rate"),
      h("th", { scope: "col" }, "Passed/total"), h("th", { scope: "col" }, "Started"))),
    h("tbody", {}, rows)));
}

// Each environment's guards, where the environments are shown: per environment what it serves
// and each guard's word (Passed, Failed, Corrected by <names>, Out of date, Not checked) linked to
// the run it rests on; nothing when no environment has a guard.
function guardsCard(agentId, environments) {
  const withGuards = environments.filter((e) => (e.guards || []).length);
  if (!withGuards.length) return null;
  const item = (g) => {
    const word = guardWord(g);
    const why = g.state === "out_of_date" ? g.why_out_of_date
      : g.state === "corrected" ? `${g.result_before_review} by the scorers, ${g.result} after review`
      : g.state === "failed" && g.result !== "failed" ? `came out ${g.result}` : null;
    return h("li", { "data-guard": g.suite_id, "data-state": g.state },
      h("a", { href: href("agents", agentId, "suites", g.suite_id) }, g.name || g.suite_id), ": ",
      g.run_id
        ? h("a", { href: href("runs", g.run_id), class: "guard-word", title: why || undefined }, word)
        : h("span", { class: "guard-word muted" }, word),
      g.version ? h("span", { class: "muted" }, ` (v${g.version})`) : null,
      g.state === "out_of_date" && why ? h("span", { class: "muted why" }, ` — ${why}`) : null);
  };
  return h("section", { class: "card", id: "guards", "aria-labelledby": "guards-heading" },
    h("h2", { id: "guards-heading" }, "Guards"),
    withGuards.map((e) => h("div", { "data-environment-guards": e.environment_id },
      h("h3", {}, e.environment_id, h("span", { class: "muted" },
        e.serving ? ` serves v${e.serving}` : " serves nothing yet")),
      h("ul", {}, e.guards.map(item)))));
}

// The Suites card: each suite's dataset, when it runs, its threshold and how it last came out, in
// words.
function suitesCard(agentId, suites, datasets) {
  const body = suites.length
    ? h("ul", {}, suites.map((s) => h("li", { "data-suite-id": s.suite_id },
      h("a", { href: href("agents", agentId, "suites", s.suite_id) }, s.name || s.suite_id), " · ",
      h("a", { href: href("datasets", s.dataset_id) }, datasets[s.dataset_id] || s.dataset_id), " · ",
      h("span", { class: "schedule" }, `runs ${triggerWords(s.triggers)}`), " · ",
      h("span", { class: "threshold" }, thresholdWords(s.threshold) || "no threshold"), " · ",
      s.paused ? `paused${s.paused_reason ? ": " + s.paused_reason : ""}` : lastResult(s))))
    : h("p", { class: "muted" }, "No suites yet. A suite runs evals on a schedule or on publish and checks a threshold; save one with ",
      h("code", {}, `assay suites create ${agentId} suite.json`), ".");
  return h("section", { class: "card", "aria-labelledby": "suites-heading" }, h("h2", { id: "suites-heading" }, "Suites"), body);
}

function lastResult(s) {
  const last = s.last_result || s.last;
  if (!last) return "not run yet";
  return `last ${last.result || last.status || "?"}${last.at ? " " + when(last.at) : ""}`;
}
