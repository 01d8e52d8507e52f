// The dashboard (/): this month's usage (production, the eval traffic beside it), and its Eval
// runs card, the organization's latest runs, each told apart by its agent, what it tested against
// what, its dataset, its verdict and when it started.
import { get, h, href, show, errorBox, whenShort, usd, plural } from "./lib.js";
import { agentLink, names, runLink, runsTable, testedAgainst, verdictCell } from "./lists.js";

export async function render() {
  const usage = usageCard();  // read while the runs are
  const card = h("section", { class: "card", id: "eval-runs-card", "aria-labelledby": "eval-runs-title" },
    h("h2", { id: "eval-runs-title" }, "Eval runs"));
  try {
    const [page, agents, datasets] = await Promise.all([get("api/v1/eval-runs?limit=5"), names("agents"), names("datasets")]);
    if (!page.runs.length) {
      card.append(h("p", { class: "muted", id: "dashboard-empty" }, "No eval runs yet. Open an agent on the ",
        h("a", { href: href("agents") }, "Agents"), " page and choose Run evals; ",
        h("a", { href: href("evals") }, "Eval runs"), " says how to start from nothing."));
    }
    else card.append(runsTable(page.runs, [
      ["Agent", (r) => agentLink(r.agent_id, agents)],
      ["Tested", (r) => runLink(r, testedAgainst(r))],
      ["Dataset", (r) => h("a", { href: href("datasets", r.dataset_id) }, datasets[r.dataset_id] || r.dataset_id)],
      ["Verdict", verdictCell],
      ["Started", (r) => h("time", { datetime: r.started_at || r.created_at || "" }, whenShort(r.started_at || r.created_at))],
    ], "Latest eval runs"));
  } catch (err) {
    card.append(errorBox(err));
  }
  card.append(h("p", {}, h("a", { href: href("evals"), id: "see-all" }, "See all")));
  show("Dashboard", h("h1", {}, "Dashboard"), await usage, card);
}

// This month's usage: production's runs, tokens and cost, with the eval traffic's and the judge's
// cost beside it, never folded in.
async function usageCard() {
  const card = h("section", { class: "card", id: "usage-card", "aria-labelledby": "usage-title" },
    h("h2", { id: "usage-title" }, "Usage this month"));
  try {
    const u = await get("api/v1/usage");
    const tokens = u.tokens.production || {};
    card.append(
      h("p", { class: "figure", id: "usage-production" }, h("strong", {}, usd(u.cost.production_usd)),
        ` in production · ${plural(u.runs.production, "run")} · ${plural((tokens.input || 0) + (tokens.output || 0), "token")}`),
      h("p", { class: "muted", id: "usage-beside" }, `Beside it, not counted in it: evals ${usd(u.cost.eval_usd)}`,
        ` (${plural(u.runs.eval, "attempt")}) · grader ${usd(u.cost.grader_usd)} (${plural(u.runs.grader, "grading")})`),
      h("p", {}, h("a", { href: href("activity") }, "Activity")));
  } catch (err) {
    card.append(errorBox(err));
  }
  return card;
}
