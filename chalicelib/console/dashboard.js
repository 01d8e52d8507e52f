// The dashboard (/): its Eval runs card, the organization's latest runs.
import { get, h, href, show, errorBox, when } from "./lib.js";
import { agentLink, names, runLink, runsTable, verdictCell } from "./lists.js";

export async function render() {
  const card = h("section", { class: "card", id: "eval-runs-card", "aria-labelledby": "eval-runs-title" },
    h("h2", { id: "eval-runs-title" }, "Eval runs"));
  try {
    const [page, agents] = await Promise.all([get("api/v1/eval-runs?limit=5"), names("agents")]);
    if (!page.runs.length) {
      card.append(h("p", { class: "muted", id: "dashboard-empty" }, "No eval runs yet. Open an agent on the ",
        h("a", { href: href("agents") }, "Agents"), " page and choose Run evals; ",
        h("a", { href: href("evals") }, "Eval runs"), " says how to start from nothing."));
    }
    else card.append(runsTable(page.runs, [
      ["Run", (r) => runLink(r, when(r.started_at || r.created_at))],
      ["Agent", (r) => agentLink(r.agent_id, agents)],
      ["Verdict", verdictCell],
    ], "Latest eval runs"));
  } catch (err) {
    card.append(errorBox(err));
  }
  card.append(h("p", {}, h("a", { href: href("evals"), id: "see-all" }, "See all")));
  show("Dashboard", h("h1", {}, "Dashboard"), card);
}
