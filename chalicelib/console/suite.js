// A suite's page (/agents/{a}/suites/{s}): what it checks, when, against which bar, its state, and
// every result with why it fell short, the cases it broke and the run behind it.
import { get, h, href, show, usd, when, crumbs } from "./lib.js";
import { thresholdWords, triggerWords } from "./words.js";

const WORDS = { passed: "Passed", failed: "Failed", inconclusive: "Inconclusive", error: "Error",
  baseline_set: "Baseline set", not_run: "Not run" };

function limitOf() {
  const n = parseInt(new URLSearchParams(location.search).get("limit") || "", 10);
  return Number.isInteger(n) && n >= 1 && n <= 200 ? n : 50;
}

export async function render(ctx) {
  const [agentId, suiteId] = ctx.params;
  const base = `api/v1/agents/${encodeURIComponent(agentId)}/suites/${encodeURIComponent(suiteId)}`;
  const limit = limitOf();
  const [suite, results] = await Promise.all([get(base), get(`${base}/results?limit=${limit}`)]);
  const [dataset, agent] = await Promise.all([
    get(`api/v1/datasets/${encodeURIComponent(suite.dataset_id)}`).catch(() => null),
    get(`api/v1/agents/${encodeURIComponent(agentId)}`).catch(() => null)]);
  const state = suite.paused
    ? `Paused${suite.paused_reason ? `: ${suite.paused_reason}` : ""}`
    : suite.active_run_id ? "Running now" : "Active";
  const facts = h("dl", { class: "facts" },
    h("dt", {}, "Agent"), h("dd", {}, h("a", { href: href("agents", agentId) }, (agent && agent.name) || agentId)),
    h("dt", {}, "Dataset"), h("dd", {}, h("a", { href: href("datasets", suite.dataset_id) }, (dataset && dataset.name) || suite.dataset_id),
      suite.dataset_version ? ` (pinned to v${suite.dataset_version})` : " (its latest version)"),
    h("dt", {}, "Runs"), h("dd", { id: "suite-schedule" }, triggerWords(suite.triggers),
      suite.next_fire_at ? ` · next ${when(suite.next_fire_at)}` : ""),
    h("dt", {}, "Threshold"), h("dd", { id: "suite-threshold" }, thresholdWords(suite.threshold) || "no bar set"),
    h("dt", {}, "Environment"), h("dd", {}, suite.environment_id || "default", suite.guards ? " · guards promotions onto it" : ""),
    suite.max_run_usd !== null && suite.max_run_usd !== undefined ? [h("dt", {}, "Most a run may cost"), h("dd", {}, usd(suite.max_run_usd))] : null,
    h("dt", {}, "State"), h("dd", { id: "suite-state", class: suite.paused ? "verdict bad" : "" }, state,
      suite.active_run_id ? [" · ", h("a", { href: href("runs", suite.active_run_id) }, "its run")] : null),
    suite.owner ? [h("dt", {}, "Owner"), h("dd", {}, suite.owner)] : null);
  const rows = results.results || [];
  const table = rows.length ? h("div", { class: "scroll" }, h("table", { "aria-label": "Results, newest first" },
    h("thead", {}, h("tr", {}, ["When (UTC)", "Result", "Why", "Cases broken", "Run"].map((c) => h("th", { scope: "col" }, c)))),
    h("tbody", {}, rows.map((r) => h("tr", { "data-result": r.result_id },
      h("td", {}, when(r.started_at), r.trigger && r.trigger.kind ? h("div", { class: "muted" }, String(r.trigger.kind).replace(/_/g, " ")) : null),
      h("td", {}, h("span", { class: `verdict ${["failed", "error", "not_run", "inconclusive"].includes(r.result) ? "bad" : r.result === "passed" ? "good" : "neutral"}` },
        WORDS[r.result] || r.result), r.label ? h("div", { class: "muted" }, r.label) : null,
        r.version ? h("div", { class: "muted" }, `v${r.version}`) : null,
        (r.reviewed_by || []).length ? h("div", { class: "muted corrected", "data-reviewed": "" },
          `Corrected by ${r.reviewed_by.map((p) => p.name || "a former member").join(", ")}`,
          r.result_before_review ? ` (the scorers said ${WORDS[r.result_before_review] || r.result_before_review})` : "") : null,
        r.recomputing ? h("div", { class: "muted" }, "Recomputing after a review decision…") : null),
      h("td", {}, (r.reasons || []).length ? h("ul", { class: "reasons" }, r.reasons.map((x) => h("li", {}, String(x)))) : "—"),
      h("td", {}, (r.cases_broken || []).length
        ? h("ul", { class: "reasons" }, r.cases_broken.map((c) => h("li", {}, h("code", {}, String(c)))))
        : "—"),
      h("td", {}, r.run_id ? h("a", { href: href("runs", r.run_id) }, "Open run") : "—"))))))
    : h("p", { class: "muted", id: "no-results" }, "No results yet.");
  const more = rows.length >= limit && limit < 200
    ? h("p", {}, h("a", { href: `?limit=${Math.min(200, limit + 50)}`, id: "more-results", onclick: (e) => {
      e.preventDefault();
      history.pushState(null, "", `?limit=${Math.min(200, limit + 50)}`);
      render(ctx);
    } }, "Show more results"))
    : null;
  const trail = crumbs(["Agents", href("agents")], [(agent && agent.name) || agentId, href("agents", agentId)],
    [suite.name || suiteId]);
  show(suite.name || suiteId, trail, h("h1", {}, suite.name || suiteId), facts, h("h2", {}, "Results"), table, more);
}
