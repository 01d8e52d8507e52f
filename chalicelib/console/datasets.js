// Datasets (/datasets): every dataset the reader may see with its latest version, case count and
// scorers (GET /api/v1/datasets carries them), and the agents last measured on it, from the
// organization's newest runs (one page of GET /api/v1/eval-runs).
import { get, h, href, show, crumbs, emptyState, plural, when } from "./lib.js";
import { agentLink, names } from "./lists.js";
import { COMMANDS } from "./words.js";

const RUNS_READ = 200;

// `Map(dataset id -> Map(agent id -> newest run of it there))`, newest first, from the newest
// runs; `more` when older runs were left unread. A Map, not an object: a dataset id is the
// tenant's, and `__proto__` or `constructor` must be just another id.
async function measured() {
  try {
    const page = await get(`api/v1/eval-runs?limit=${RUNS_READ}`);
    const by = new Map();
    for (const r of page.runs) {
      if (!by.has(r.dataset_id)) by.set(r.dataset_id, new Map());
      const agents = by.get(r.dataset_id);
      if (!agents.has(r.agent_id)) agents.set(r.agent_id, r);
    }
    return { by, more: !!page.next_cursor, refused: false };
  } catch (err) {
    if (err.status === 403) return { by: new Map(), more: false, refused: true };
    throw err;
  }
}

function scorers(version) {
  const required = (version && version.scoring && version.scoring.required) || [];
  return required.length ? required.map((s) => h("code", { class: "scorer" }, s)).reduce((acc, el, i) => (i ? [...acc, ", ", el] : [el]), [])
    : h("span", { class: "muted" }, "—");
}

function measuredCell(d, found, agents) {
  if (found.refused) return h("span", { class: "muted" }, "—");
  const seen = found.by.get(d.dataset_id);
  if (!seen || !seen.size) {
    return h("span", { class: "muted" }, found.more ? "not in the latest runs: see its page" : "not measured yet");
  }
  return h("ul", { class: "measured" }, [...seen].slice(0, 3).map(([a, run]) => h("li", { "data-agent": a },
    agentLink(a, agents), h("span", { class: "muted" }, " · "),
    h("a", { href: href("runs", run.run_id), class: "run-link" }, when(run.completed_at || run.started_at || run.created_at)))),
  seen.size > 3 ? h("li", { class: "muted" }, `and ${plural(seen.size - 3, "more agent")}`) : null);
}

export async function render(ctx) {
  const [body, found, agents] = await Promise.all([get("api/v1/datasets"), measured(), names("agents")]);
  const datasets = body.datasets || [];
  const title = [crumbs(["Datasets"]), h("h1", {}, "Datasets")];
  if (!datasets.length) {
    const mayCreate = ctx.access.may("datasets:edit");
    return show("Datasets", title, emptyState("datasets-empty",
      "No datasets yet. A dataset is the cases an agent is measured on, each with what it expects, in numbered versions that never change.",
      mayCreate ? "Import one from a JSONL, CSV, GSM8K, promptfoo or Inspect file with the CLI:" : "Ask somebody who may edit datasets to import one; with the CLI:",
      { command: COMMANDS.importDataset },
      "Then open an agent and choose Run evals on it."));
  }
  const table = h("div", { class: "scroll" }, h("table", { class: "datasets", "aria-label": "Datasets" },
    h("thead", {}, h("tr", {}, ["Dataset", "Latest version", "Cases", "Scorers", "Agents last measured"]
      .map((c) => h("th", { scope: "col" }, c)))),
    h("tbody", {}, datasets.map((d) => h("tr", { "data-dataset": d.dataset_id },
      h("td", {}, h("a", { href: href("datasets", d.dataset_id) }, d.name || d.dataset_id)),
      h("td", {}, d.version ? `v${d.version.version}` : h("span", { class: "muted" }, "no version yet")),
      h("td", { class: "cases-count" }, d.version ? String(d.version.case_count) : "—"),
      h("td", {}, scorers(d.version)),
      h("td", {}, measuredCell(d, found, agents)))))));
  show("Datasets", title, table,
    found.refused ? h("p", { class: "why" }, "Which agents were measured needs runs:view, which you do not hold.") : null);
}
