// What the run lists share (dashboard, Eval runs, a dataset's Test runs): a run's verdict phrase,
// what it tested against what, its candidate's pass rate, and names for agent and dataset ids.
import { get, h, href, pct, verdictClass } from "./lib.js";

// The run's verdict phrase as the service names it (`verdict_phrase`, `domain.verdict_text`).
export function verdictPhrase(run) {
  return run.verdict_phrase || "—";
}

export function candidateArm(run) {
  if (run.outcome && run.outcome.arm_id) return run.outcome.arm_id;
  const arm = (run.arms || []).find((a) => a.role === "candidate");
  return arm ? arm.arm_id : "candidate";
}

// The setup error every answer of the candidate failed with, or null (such a run shows
// "Could not run" instead of a pass rate).
export function couldNotRun(run) {
  const arm = candidateArm(run);
  const summary = run.summaries && run.summaries[arm];
  if (summary && summary.could_not_run) return summary.could_not_run;
  const broken = run.outcome && run.outcome.comparison && run.outcome.comparison.could_not_run;
  return (broken && broken[arm]) || null;
}

// What was tested against what as the service says it (`tested`: "v4 against v3", "The draft
// alone").
export function testedAgainst(run) {
  return run.tested || run.run_id;
}

// `{pass_rate, passed, total}` of the candidate, nulls while there is none.
export function candidateResult(run) {
  const summary = run.summaries && run.summaries[candidateArm(run)];
  const q = summary && summary.quality;
  if (q) return { pass_rate: q.pass_rate, first: q.first_pass_rate, passed: q.passed, total: q.cases };
  const o = run.outcome;
  if (o) return { pass_rate: o.pass_rate, first: o.first_pass_rate, passed: o.passed, total: o.total };
  return { pass_rate: null, first: null, passed: null, total: null };
}

export function verdictCell(run) {
  const phrase = verdictPhrase(run);
  return h("span", { class: `verdict ${verdictClass(phrase)}` }, phrase);
}

// The pass-rate cell: "Could not run" (with the error on hover) instead of a rate for such a run.
export function rateCell(run) {
  const err = couldNotRun(run);
  if (err) return h("span", { class: "verdict bad could-not-run", title: err }, "Could not run");
  const r = candidateResult(run);
  return h("span", { title: r.first !== null && r.first !== undefined ? `First answers: ${pct(r.first)}` : null },
    pct(r.pass_rate));
}

export function countCell(run) {
  const r = candidateResult(run);
  return r.total === null || r.total === undefined ? "—" : `${r.passed}/${r.total}`;
}

export function runLink(run, text) {
  return h("a", { href: href("runs", run.run_id), class: "run-link" }, text || run.run_id);
}

// `{id: name}` of the agents (or datasets) the reader may see; empty when the list is refused.
// An object without a prototype: an id is the tenant's, and looking up `constructor` or
// `__proto__` must find that agent's name or nothing, never one of Object's own members.
export async function names(kind) {
  const found = Object.create(null);
  try {
    const body = await get(`api/v1/${kind}`);
    const key = kind === "agents" ? "agent_id" : "dataset_id";
    for (const x of body[kind] || []) found[x[key]] = x.name || x[key];
  } catch {
    // refused: no names, the ids stand for themselves
  }
  return found;
}

export function agentLink(id, agents) {
  return h("a", { href: href("agents", id) }, agents[id] || id);
}

// A table from `columns` ([header, run => cell]) and runs, newest first as the service lists them.
export function runsTable(runs, columns, label) {
  return h("div", { class: "scroll" }, h("table", { class: "runs", "aria-label": label },
    h("thead", {}, h("tr", {}, columns.map(([name]) => h("th", { scope: "col" }, name)))),
    h("tbody", {}, runs.map((run) => h("tr", { "data-run": run.run_id },
      columns.map(([, cell]) => h("td", {}, cell(run))))))));
}

export function statusText(run) {
  return run.status === "running" && run.progress
    ? `running · ${Math.round((run.progress.fraction || 0) * 100)}%`
    : String(run.status || "").replace(/_/g, " ");
}
