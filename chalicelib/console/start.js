// The Run evals dialog (seed 004 "In the console"): it opens on the obvious answer, prices the
// run as its fields settle, and starts only from the button that names the amount.
import { api, get, h, href, usd, errorBox } from "./lib.js";

// The obvious answer: the draft against the live version when the draft differs from it, the
// live version alone when it does not, the draft alone for an agent nobody published.
export function obviousChoice({ agent, differs }) {
  const live = agent.live_version || agent.latest_version;
  if (!agent.latest_version) return { candidate: "draft", baseline: false };
  if (differs) return { candidate: "draft", baseline: true, against: live };
  return { candidate: String(live), baseline: false };
}

// The dataset the agent was last measured on (its newest run's), or the only one there is.
export function chosenDataset(runs, datasets) {
  const measured = runs.find((r) => r.outcome) || runs[0];
  if (measured && datasets.some((d) => d.dataset_id === measured.dataset_id)) return measured.dataset_id;
  return datasets.length === 1 ? datasets[0].dataset_id : datasets.length ? datasets[0].dataset_id : "";
}

let seq = 0;

export async function openStartDialog(ctx, { agent, latest, differs, runs, candidate }) {
  const agentId = agent.agent_id;
  const [datasets, envs] = await Promise.all([
    get("api/v1/datasets").then((d) => d.datasets || []),
    get("api/v1/environments").then((e) => e.environments || []).catch(() => []),
  ]);
  const obvious = obviousChoice({ agent, differs });
  const choice = candidate ? { ...obvious, candidate, baseline: candidate === "draft" && !!agent.latest_version && differs } : obvious;
  const versions = [];
  for (let v = agent.latest_version || 0; v >= 1; v--) versions.push(v);

  const cand = h("select", { id: "start-candidate", name: "candidate" },
    h("option", { value: "draft" }, "The draft"),
    versions.map((v) => h("option", { value: String(v) }, `v${v}${v === agent.live_version ? " (live)" : ""}`)));
  cand.value = choice.candidate;
  const base = h("input", { id: "start-baseline", type: "checkbox", name: "paired_baseline" });
  base.checked = choice.baseline;
  const baseLabel = h("label", { for: "start-baseline", class: "inline" }, base, " ", h("span", { id: "start-baseline-text" }, ""));
  const dataset = h("select", { id: "start-dataset", name: "dataset_id" },
    datasets.map((d) => h("option", { value: d.dataset_id }, d.name || d.dataset_id)));
  dataset.value = chosenDataset(runs, datasets);
  const env = h("select", { id: "start-environment", name: "environment_id" },
    envs.map((e) => h("option", { value: e.environment_id }, e.name || e.environment_id)));
  const def = envs.find((e) => e.default);
  if (def) env.value = def.environment_id;
  const reruns = h("input", { id: "start-reruns", type: "number", min: "0", max: "5", inputmode: "numeric", placeholder: "default" });
  const estimate = h("div", { class: "estimate", id: "estimate", "aria-live": "polite" }, "Working out the cost…");
  const startButton = h("button", { type: "submit", class: "primary", id: "start-run", disabled: true }, "Start");
  const why = h("p", { class: "why", id: "start-why" });
  const errors = h("div", { id: "start-error" });

  const body = () => {
    const out = { dataset_id: dataset.value };
    if (cand.value === "draft") out.candidate = "draft";
    else { out.candidate = "version"; out.version = Number(cand.value); }
    if (base.checked) out.paired_baseline = true;
    if (env.value) out.environment_id = env.value;
    if (reruns.value !== "") out.reruns = Number(reruns.value);
    return out;
  };
  const baselineText = () => {
    const v = cand.value === "draft" ? (agent.live_version || agent.latest_version) : Number(cand.value) - 1;
    base.disabled = !v;
    if (!v) base.checked = false;
    document.getElementById("start-baseline-text").textContent = v ? `Against v${v}, in the same run` : "No earlier version to compare with";
  };
  const lacking = () => {
    const needs = [["runs:view"], ["datasets:run", { dataset: dataset.value }], ["agents:run", { agent: agentId }]];
    if (cand.value === "draft") needs.push(["agents:edit", { agent: agentId }]);
    return ctx.access.missing(needs);
  };

  let timer = null;
  const settle = () => {
    clearTimeout(timer);
    startButton.disabled = true;
    timer = setTimeout(price, 250);
  };
  async function price() {
    const mine = ++seq;
    baselineText();
    errors.replaceChildren();
    const missing = lacking();
    if (missing) {
      why.textContent = `You cannot start this run: it needs ${missing}.`;
      startButton.disabled = true;
      startButton.setAttribute("aria-describedby", "start-why");
    } else why.textContent = "";
    if (!dataset.value) {
      estimate.replaceChildren("Choose a dataset.");
      return;
    }
    estimate.replaceChildren("Working out the cost…");
    try {
      const [est, ds] = await Promise.all([
        api("POST", `api/v1/agents/${encodeURIComponent(agentId)}/eval-runs/estimate`, body()),
        get(`api/v1/datasets/${encodeURIComponent(dataset.value)}`),
      ]);
      if (mine !== seq) return; // a later change is being priced
      const scoring = (ds.version && ds.version.scoring && ds.version.scoring.required) || [];
      const grades = est.judge
        ? `The judge ${est.judge.judge_id} (v${est.judge.version}) on ${est.judge.model} grades the answers${scoring.length ? ", with " + scoring.join(", ") : ""}.`
        : `${scoring.length ? scoring.join(", ") : "The dataset's scorers"} grade${scoring.length === 1 ? "s" : ""} the answers; no judge is called.`;
      const after = (v) => (v === null || v === undefined ? "no budget set" : `${usd(v)} left after it`);
      estimate.replaceChildren(h("div", {},
        h("p", { id: "estimate-total" }, `${est.cases} cases: ${usd(est.first_pass_usd)} for the first answers, up to ${usd(est.total_usd)} with every rerun${est.basis === "fallback" ? " (a rough guess: no history yet)" : ""}.`),
        h("p", { id: "estimate-grading" }, grades),
        h("p", { id: "estimate-budgets" }, `The agent's budget: ${after(est.agent_after_usd)}. The organization's: ${after(est.org_after_usd)}.`),
        est.reused_baseline_run_id ? h("p", {}, `The baseline's first answers come from run ${est.reused_baseline_run_id}, at no cost.`) : null,
        (est.warnings || []).map((w) => h("p", { class: "why" }, w)),
        est.within_budget === false ? h("p", { class: "error" }, "This run would exceed a budget: it cannot start.") : null));
      startButton.textContent = `Start for ${usd(est.total_usd)}`;
      startButton.disabled = !!missing || est.within_budget === false;
    } catch (err) {
      if (mine !== seq) return;
      estimate.replaceChildren(errorBox(err));
      startButton.textContent = "Start";
      startButton.disabled = true;
    }
  }

  const dialog = h("dialog", { id: "start-dialog", "aria-labelledby": "start-title" },
    h("form", { method: "dialog", onsubmit: async (e) => {
      e.preventDefault();
      if (e.submitter && e.submitter.value === "cancel") return dialog.close();
      startButton.disabled = true;
      try {
        const run = await api("POST", `api/v1/agents/${encodeURIComponent(agentId)}/eval-runs`, body());
        location.assign(href("runs", run.run_id));
      } catch (err) {
        errors.replaceChildren(errorBox(err));
        startButton.disabled = false;
      }
    } },
      h("h2", { id: "start-title" }, `Run evals · ${agent.name}`),
      h("div", { class: "field" }, h("label", { for: "start-candidate" }, "What runs"), cand),
      h("div", { class: "field" }, baseLabel),
      h("div", { class: "field" }, h("label", { for: "start-dataset" }, "Dataset"), dataset),
      h("details", { id: "start-advanced" }, h("summary", {}, "Advanced"),
        h("div", { class: "field" }, h("label", { for: "start-environment" }, "Environment"), env),
        h("div", { class: "field" }, h("label", { for: "start-reruns" }, "Reruns of each flip"), reruns),
        h("p", { class: "muted" }, "Recordings: a version whose spec is recorded answers from its recording; ",
          h("a", { href: href("evals") }, "see the eval runs"), " for what each used.")),
      estimate, why, errors,
      h("div", { class: "actions" }, startButton, h("button", { type: "submit", value: "cancel", formnovalidate: true }, "Cancel"))));
  for (const el of [cand, base, dataset, env, reruns]) el.addEventListener("change", settle);
  reruns.addEventListener("input", settle);
  document.body.append(dialog);
  dialog.addEventListener("close", () => dialog.remove());
  dialog.showModal();
  cand.focus();
  price();
  return dialog;
}
