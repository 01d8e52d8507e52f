// Agents (/agents): every agent the reader may see, with its live version, whether the draft
// differs, the verdict beside each (pass / partial / fail / none) and its last run: one read of
// GET /api/v1/agents, which carries all of it, and the datasets' names.
import { get, h, href, show, crumbs, emptyState, when } from "./lib.js";
import { names } from "./lists.js";
import { COMMANDS, VERDICT_WORDS } from "./words.js";

// A verdict as the page shows it: the word, with its passed/total; `none` neutral, never red.
export function verdictWord(summary) {
  if (!summary) return h("span", { class: "muted" }, "—");
  const word = summary.verdict;
  return h("span", { class: `verdict-word ${word}`, "data-verdict": word,
    title: word === "none" ? "No completed run measured it yet" : `${summary.passed} of ${summary.total} cases passed` },
  VERDICT_WORDS[word] || word,
  word !== "none" ? h("span", { class: "muted" }, ` ${summary.passed}/${summary.total}`) : null,
  summary.stale ? h("span", { class: "muted" }, " (the draft changed since)") : null);
}

function liveCell(a) {
  return a.live_version ? `v${a.live_version}` : h("span", { class: "muted" }, "not published yet");
}

function draftCell(a) {
  if (!a.live_version) return h("span", { class: "badge" }, "Draft only");
  return a.draft_differs
    ? h("span", { class: "badge", "data-differs": "true" }, `Differs from v${a.latest_version}`)
    : h("span", { class: "muted", "data-differs": "false" }, `Same as v${a.latest_version}`);
}

function lastRunCell(a, datasets) {
  const r = a.last_run;
  if (!r) return h("span", { class: "muted" }, a.verdicts ? "no run yet" : "—");
  return h("span", {}, h("a", { href: href("runs", r.run_id), class: "run-link" }, when(r.completed_at)),
    h("div", { class: "muted" }, `${r.version === "draft" ? "the draft" : "v" + r.version} on `,
      h("a", { href: href("datasets", r.dataset_id) }, datasets[r.dataset_id] || r.dataset_id)));
}

export async function render(ctx) {
  const [body, datasets] = await Promise.all([get("api/v1/agents"), names("datasets")]);
  const agents = body.agents || [];
  const title = [crumbs(["Agents"]), h("h1", {}, "Agents")];
  if (!agents.length) {
    const mayCreate = ctx.access.may("agents:edit");
    return show("Agents", title, emptyState("agents-empty",
      "No agents yet. An agent is what assay asks each case of a dataset: its spec says how (an HTTP endpoint, a Python function, a recording).",
      mayCreate ? "Create one from a spec file with the CLI:" : "Ask somebody who may edit agents to create one; with the CLI:",
      { command: COMMANDS.createAgent },
      "(or POST /api/v1/agents with its name and spec). Then open it here and choose Run evals."));
  }
  const readsRuns = agents.some((a) => a.verdicts);
  const table = h("div", { class: "scroll" }, h("table", { class: "agents", "aria-label": "Agents" },
    h("thead", {}, h("tr", {}, ["Agent", "Live version", "Draft", "Live verdict", "Draft verdict", "Last run (UTC)"]
      .map((c) => h("th", { scope: "col" }, c)))),
    h("tbody", {}, agents.map((a) => h("tr", { "data-agent": a.agent_id },
      h("td", {}, h("a", { href: href("agents", a.agent_id) }, a.name || a.agent_id)),
      h("td", {}, liveCell(a)),
      h("td", {}, draftCell(a)),
      h("td", { class: "live-verdict" }, a.verdicts ? verdictWord(a.verdicts.live) : "—"),
      h("td", { class: "draft-verdict" }, a.verdicts && (a.draft_differs || !a.live_version)
        ? verdictWord(a.verdicts.draft) : h("span", { class: "muted" }, a.verdicts ? "as live" : "—")),
      h("td", {}, lastRunCell(a, datasets)))))));
  const note = readsRuns ? h("p", { class: "muted" },
    "A verdict sums the latest completed run of each dataset that measured the version: pass when every case passed, partial when some did, fail when none did; not measured yet until a run completes.")
    : h("p", { class: "why" }, "Verdicts and runs need runs:view, which you do not hold.");
  show("Agents", title, table, note);
}
