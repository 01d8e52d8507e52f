// The publish dialog: it says what the draft's last run found, or that
// the draft was not tested since it last changed, or that the test it had is out of date, and
// never holds the publish back.
import { api, get, h, href, when, errorBox, showDialog, cancelButton, cancelled } from "./lib.js";
import { testedAgainst, verdictPhrase } from "./lists.js";

// The draft's test: `{state: "current" | "earlier" | "untested", run}`: the newest run of the
// draft as it stands (`?draft=current`), else of a draft it moved away from (`?draft=earlier`).
export async function draftTest(agentId) {
  const newest = (which) => get(`api/v1/agents/${encodeURIComponent(agentId)}/eval-runs?draft=${which}&limit=1`)
    .then((page) => page.runs[0] || null);
  const current = await newest("current");
  if (current) return { state: "current", run: current };
  const earlier = await newest("earlier");
  return earlier ? { state: "earlier", run: earlier } : { state: "untested", run: null };
}

function testText({ state, run }) {
  const said = {
    current: () => ["The draft's last run found: ", h("strong", {}, verdictPhrase(run)), "."],
    earlier: () => ["The draft changed since its last run: that test is out of date."],
    untested: () => ["The draft was not tested since it last changed."],
  }[state]();
  return h("div", {}, h("p", { id: "publish-test", "data-state": state }, ...said),
    run ? h("p", { class: "muted" }, "Run: ", h("a", { href: href("runs", run.run_id), id: "publish-run" },
      `${testedAgainst(run)}, ${when(run.started_at || run.created_at)}`)) : null);
}

// Opens the dialog for `agent` (an agent row); `onPublished(version)` runs once it published.
export async function openPublishDialog(agent, onPublished) {
  const found = await draftTest(agent.agent_id).catch((err) => ({ state: "unknown", err }));
  const next = (agent.latest_version || 0) + 1;
  const errors = h("div", { id: "publish-error" });
  const go = h("button", { type: "submit", class: "primary", id: "publish-confirm" }, `Publish as v${next}`);
  const dialog = h("dialog", { id: "publish-dialog", "aria-labelledby": "publish-title" },
    h("form", { method: "dialog", onsubmit: async (e) => {
      e.preventDefault();
      if (cancelled(e)) return dialog.close();
      go.disabled = true;
      try {
        const v = await api("POST", `api/v1/agents/${encodeURIComponent(agent.agent_id)}/versions`, {});
        dialog.close();
        onPublished(v);
      } catch (err) {
        errors.replaceChildren(errorBox(err));
        go.disabled = false;
      }
    } },
      h("h2", { id: "publish-title" }, `Publish the draft of ${agent.name}`),
      found.err ? errorBox(found.err) : testText(found),
      h("p", { class: "muted" }, "Publishing does not wait for a test."),
      errors,
      h("div", { class: "actions" }, go, cancelButton())));
  return showDialog(dialog, go);
}
