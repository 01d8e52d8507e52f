// The Run evals dialog: it opens on the obvious answer, prices the
// run as its fields settle, and starts only from the button that names the amount.
import { api, get, h, href, usd, when, errorBox, showDialog, cancelButton, cancelled } from "./lib.js";

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

// What `reruns: "auto"` chose, from the estimate's `reruns_auto`, and what the reruns cost; with
// reruns given by hand, how likely they leave a confirmed regression to luck (the estimate's
// `luck`, measured by an earlier comparison) and the reruns that would not; null when neither.
export function rerunsText(est) {
  const auto = est.reruns_auto;
  if (!auto) return est.luck ? h("p", { id: "estimate-luck" }, `Luck: ${est.luck.sentence}`) : null;
  const count = `${auto.chosen} rerun${auto.chosen === 1 ? "" : "s"}`;
  return h("p", { id: "estimate-reruns" },
    `Reruns: auto suggests ${count} of each flip: ${auto.reason}. They cost up to ${usd(est.rerun_ceiling_usd)}.`);
}

// Whether the agent's draft differs from its latest version (`latest` null: nothing published).
export function draftDiffers(agent, latest) {
  return latest ? latest.spec_hash !== agent.draft.spec_hash : true;
}

// What the dialog needs of an agent: its row, its latest version, whether the draft differs.
export async function agentState(agentId) {
  const agent = await get(`api/v1/agents/${encodeURIComponent(agentId)}`);
  const latest = agent.latest_version
    ? await get(`api/v1/agents/${encodeURIComponent(agentId)}/versions/${agent.latest_version}`)
    : null;
  return { agent, latest, differs: draftDiffers(agent, latest) };
}

// Where the candidate's answers come from: a `recorded` spec replays one of the organization's
// recordings (or answers written in the spec); anything else answers live.
async function recordingText(spec) {
  if (!spec) return "Recordings: whoever may edit this agent sees whether its spec replays one.";
  if (spec.runtime !== "recorded") return `Recordings: none; the candidate answers live (runtime ${spec.runtime || "?"}).`;
  if (!spec.recording_id) return "Recordings: the candidate replays the answers written in its spec.";
  try {
    const r = await get(`api/v1/recordings/${encodeURIComponent(spec.recording_id)}`);
    return `Recordings: the candidate replays recording ${r.recording_id} (${r.lines} answers, uploaded ${when(r.uploaded_at)}).`;
  } catch (err) {
    if (err.status === 404) return `Recordings: the candidate replays recording ${spec.recording_id}, which this organization does not have: every case would fail.`;
    return `Recordings: the candidate replays recording ${spec.recording_id}.`;
  }
}

// The start dialog. From an agent's page: `{agent, differs, runs, candidate}`, the
// dataset chosen from `runs`. From a dataset's page: `{agents: {id: name}, agentId, datasetId}`,
// which asks first which agent to test and keeps the dataset.
export async function openStartDialog(ctx, opts) {
  const [datasets, envs] = await Promise.all([
    get("api/v1/datasets").then((d) => d.datasets || []),
    get("api/v1/environments").then((e) => e.environments || []).catch(() => []),
  ]);
  let { agent, differs } = opts.agent ? opts : await agentState(opts.agentId);
  const agentSel = opts.agents
    ? h("select", { id: "start-agent", name: "agent_id" },
      Object.entries(opts.agents).map(([id, name]) => h("option", { value: id }, name)))
    : null;
  if (agentSel) agentSel.value = agent.agent_id;
  const title = h("h2", { id: "start-title" });
  const cand = h("select", { id: "start-candidate", name: "candidate" });
  const base = h("input", { id: "start-baseline", type: "checkbox", name: "paired_baseline" });
  const baseLabel = h("label", { for: "start-baseline", class: "inline" }, base, " ", h("span", { id: "start-baseline-text" }, ""));
  // The candidate and its baseline on the obvious answer for `agent` (again when it changes).
  const choose = (candidate) => {
    const versions = [];
    for (let v = agent.latest_version || 0; v >= 1; v--) versions.push(v);
    cand.replaceChildren(h("option", { value: "draft" }, agent.latest_version && !differs ? "The draft (same as the latest)" : "The draft"),
      ...versions.map((v) => h("option", { value: String(v) }, `v${v}${v === agent.live_version ? " (live)" : ""}`)));
    const obvious = obviousChoice({ agent, differs });
    const choice = candidate ? { ...obvious, candidate, baseline: candidate === "draft" && !!agent.latest_version && differs } : obvious;
    cand.value = choice.candidate;
    base.checked = choice.baseline;
    title.textContent = `Run evals · ${agent.name}`;
  };
  choose(opts.candidate);
  const dataset = h("select", { id: "start-dataset", name: "dataset_id" },
    datasets.map((d) => h("option", { value: d.dataset_id }, d.name || d.dataset_id)));
  dataset.value = opts.datasetId || chosenDataset(opts.runs || [], datasets);
  const env = h("select", { id: "start-environment", name: "environment_id" },
    envs.map((e) => h("option", { value: e.environment_id }, e.name || e.environment_id)));
  const def = envs.find((e) => e.default);
  if (def) env.value = def.environment_id;
  const reruns = h("input", { id: "start-reruns", type: "number", min: "0", max: "5", inputmode: "numeric", placeholder: "default" });
  // "Reruns: auto" (with a baseline only): the fewest reruns that keep a confirmed regression
  // unlikely to be luck, as the newest comparison measured the noise (docs/concepts/noise.md).
  const autoReruns = h("input", { id: "start-reruns-auto", type: "checkbox", name: "reruns_auto" });
  const autoField = h("div", { class: "field", id: "start-reruns-auto-field", hidden: true },
    h("label", { for: "start-reruns-auto", class: "inline" }, autoReruns, " Reruns: auto (the fewest that keep a regression unlikely to be luck)"));
  const recordings = h("p", { id: "start-recordings", class: "muted", "aria-live": "polite" });
  // Which recording the candidate replays: read again only when the candidate (or agent) changes.
  let recordingOf = null;
  const showRecordings = async () => {
    const which = `${agent.agent_id}#${cand.value}`;
    if (which === recordingOf) return;
    recordingOf = which;
    const spec = cand.value === "draft" ? agent.draft.spec
      : await get(`api/v1/agents/${encodeURIComponent(agent.agent_id)}/versions/${cand.value}`).then((r) => r.spec).catch(() => null);
    const text = await recordingText(spec);
    if (which === recordingOf) recordings.textContent = text;
  };
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
    if (base.checked && autoReruns.checked) out.reruns = "auto";
    else if (reruns.value !== "") out.reruns = Number(reruns.value);
    return out;
  };
  const baselineText = () => {
    const v = cand.value === "draft" ? (agent.live_version || agent.latest_version) : Number(cand.value) - 1;
    base.disabled = !v;
    if (!v) base.checked = false;
    document.getElementById("start-baseline-text").textContent = v ? `Against v${v}, in the same run` : "No earlier version to compare with";
    autoField.hidden = !base.checked;
    reruns.disabled = base.checked && autoReruns.checked;
  };
  const lacking = () => {
    const needs = [["runs:view"], ["datasets:run", { dataset: dataset.value }], ["agents:run", { agent: agent.agent_id }]];
    if (cand.value === "draft") needs.push(["agents:edit", { agent: agent.agent_id }]);
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
    showRecordings();
    try {
      const [est, ds] = await Promise.all([
        api("POST", `api/v1/agents/${encodeURIComponent(agent.agent_id)}/eval-runs/estimate`, body()),
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
        rerunsText(est),
        (est.warnings || []).filter((w) => !(est.reruns_auto && w.startsWith('reruns "auto"'))).map((w) => h("p", { class: "why" }, w)),
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
      if (cancelled(e)) return dialog.close();
      startButton.disabled = true;
      try {
        const run = await api("POST", `api/v1/agents/${encodeURIComponent(agent.agent_id)}/eval-runs`, body());
        location.assign(href("runs", run.run_id));
      } catch (err) {
        errors.replaceChildren(errorBox(err));
        startButton.disabled = false;
      }
    } },
      title,
      agentSel ? h("div", { class: "field" }, h("label", { for: "start-agent" }, "Agent to test"), agentSel) : null,
      h("div", { class: "field" }, h("label", { for: "start-candidate" }, "What runs"), cand),
      h("div", { class: "field" }, baseLabel),
      autoField,
      h("div", { class: "field" }, h("label", { for: "start-dataset" }, "Dataset"), dataset),
      h("details", { id: "start-advanced" }, h("summary", {}, "Advanced"),
        h("div", { class: "field" }, h("label", { for: "start-environment" }, "Environment"), env),
        h("div", { class: "field" }, h("label", { for: "start-reruns" }, "Reruns of each flip"), reruns),
        recordings),
      estimate, why, errors,
      h("div", { class: "actions" }, startButton, cancelButton())));
  for (const el of [cand, base, dataset, env, reruns, autoReruns]) el.addEventListener("change", settle);
  reruns.addEventListener("input", settle);
  if (agentSel) {
    agentSel.addEventListener("change", async () => {
      startButton.disabled = true;
      ({ agent, differs } = await agentState(agentSel.value));
      choose();
      settle();
    });
  }
  showDialog(dialog, agentSel || cand);
  price();
  return dialog;
}
