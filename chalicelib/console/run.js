// A run's page: the verdict in a few sentences and what to do next,
// then the sides next to each other, how they compare, and the cases.
import { api, get, h, href, pct, usd, when, show, guarded, verdictClass, errorBox, plural, crumbs } from "./lib.js";
import { ms, callStatusWords, callCountWords, divergedWords, reviewMark, sentWords } from "./words.js";
import { openPublishDialog } from "./publish.js";

const OUTCOMES = [
  ["", "Every case"], ["regression", "Broke"], ["fixed", "Fixed"], ["unchanged", "Unchanged"],
  ["incomplete", "Incomplete"], ["failed", "Failed on a side"], ["passed", "Passed on a side"],
  ["ungraded", "Ungraded"],
];

const COUNT_WORDS = { regression: "broke", fixed: "fixed", unchanged: "unchanged", incomplete: "incomplete", not_compared: "not compared", changed: "changed" };

let poll = null;

// An agent's or a dataset's name, read once per run shown: the page renders again every 2 s while
// the run answers.
const names = new Map();
let namesOf = null;
function named(kind, id) {
  const key = `${kind}/${id}`;
  if (!names.has(key)) {
    names.set(key, get(`api/v1/${kind}/${encodeURIComponent(id)}`).then((r) => r.name || id).catch(() => id));
  }
  return names.get(key);
}

export async function render(ctx) {
  clearTimeout(poll);
  const [runId] = ctx.params;
  if (namesOf !== runId) {
    names.clear();
    namesOf = runId;
  }
  const q = new URLSearchParams(location.search);
  const run = await get(`api/v1/eval-runs/${encodeURIComponent(runId)}`);
  const story = run.story;
  const agentId = run.agent_id;
  // under a tag the comparison reads only its cases; the verdict above stays over every case
  const compared = q.get("tag") ? `?${new URLSearchParams({ tag: q.get("tag") })}` : "";
  const [comparison, agentName, datasetName, cases] = await Promise.all([
    run.outcome && run.outcome.comparison ? get(`api/v1/eval-runs/${encodeURIComponent(runId)}/comparison${compared}`).catch((error) => ({ error })) : null,
    named("agents", agentId), named("datasets", run.dataset_id), readCases(run, q)]);
  const rerender = () => render(ctx);

  // Header: what ran, its verdict, Grade again for whoever may run the dataset, and how many cases
  // diverged from the recording the run answered from.
  const header = h("header", { class: "run-header" },
    crumbs(["Agents", href("agents")], [agentName, href("agents", agentId)], [`Run ${runId}`]),
    h("h1", {}, `${run.tested} on `, h("a", { href: href("datasets", run.dataset_id) }, datasetName)),
    h("div", { class: "badges" },
      h("span", { class: "badge", id: "run-status" }, run.status),
      h("span", { class: `badge verdict ${verdictClass(story.phrase)}`, id: "verdict-phrase" }, story.phrase),
      story.headline ? h("span", { id: "verdict-headline" }, story.headline) : null,
      h("span", { class: "muted" }, `started ${when(run.started_at || run.created_at)} by ${run.created_by || "?"}`),
      gradeAgain(ctx, run, rerender)),
    cases.page && cases.page.diverged_cases
      ? h("p", { class: "why", id: "diverged", role: "status" }, `${divergedWords(cases.page.diverged_cases)}: their calls the recording did not hold were held, not made.`)
      : null);

  const sentences = h("section", { class: "sentences card", id: "verdict", "aria-label": "Verdict" },
    story.sentences.map((s) => h("p", {}, s)),
    run.outcome && run.outcome.noise && run.outcome.noise.sentence
      ? h("p", { id: "noise-sentence", class: "muted" }, run.outcome.noise.sentence)
      : null,
    run.reason && run.status === "completed" ? h("p", { class: "muted" }, run.reason) : null,
    (run.warnings || []).map((w) => h("p", { class: "why" }, w)));

  const main = show(`${run.tested} · run`, header, sentences, reviewSection(ctx, run, rerender), nextSteps(ctx, run, story),
    sidesAndComparison(run, comparison, q.get("tag")),
    casesSection(run, q, cases));
  if (run.status === "queued" || run.status === "running" || run.recomputing) {
    poll = setTimeout(() => { if (location.pathname.endsWith(runId)) rerender(); }, 2000);
  }
  return main;
}

function gradeAgain(ctx, run, rerender) {
  if (!(run.ungraded_score_ids || []).length) return null;
  const button = h("button", { type: "button", id: "grade-again", onclick: async () => {
    button.disabled = true;
    try {
      await api("POST", `api/v1/eval-runs/${encodeURIComponent(run.run_id)}/grade-again`, {});
      rerender();
    } catch (err) {
      button.after(errorBox(err));
      button.disabled = false;
    }
  } }, `Grade again (${run.ungraded_score_ids.length})`);
  return guarded(button, ctx.access.missing([["datasets:run", { dataset: run.dataset_id }]]), "grade again");
}

// The review queue from the run's side: what finalizing sent (with a link to the dataset's Review
// tab), why a send fell short, "Recomputing…" while a person's verdict is being applied, and Send
// failed to review for each side once the run has ended.
function reviewSection(ctx, run, rerender) {
  const queue = `${href("datasets", run.dataset_id)}?tab=review`;
  const box = h("section", { id: "review", "aria-label": "Review" });
  if (run.routed_to_review) {
    box.append(h("p", { id: "routed" }, `${sentWords(run.routed_to_review, run.routed_replacing)}. `,
      h("a", { href: queue, id: "routed-link" }, "Open the review queue")));
  }
  if (run.routing_error) {
    box.append(h("p", { class: "why warn-line", id: "routing-error", role: "alert" }, `Not every answer went to review: ${run.routing_error}`));
  }
  if (run.recomputing) {
    box.append(h("p", { id: "recomputing", role: "status" }, "Recomputing after a review decision…"));
  }
  if (run.status !== "queued" && run.status !== "running") {
    const out = h("div", { id: "send-result", role: "status" });
    const lacking = ctx.access.missing([["datasets:edit", { dataset: run.dataset_id }]]);
    const sides = (run.arms || []).some((a) => a.role === "baseline") ? ["candidate", "baseline"] : ["candidate"];
    const buttons = sides.map((side) => {
      const button = h("button", { type: "button", id: `send-${side}`, onclick: async () => {
        button.disabled = true;
        out.replaceChildren();
        try {
          const sent = await api("POST", `api/v1/eval-runs/${encodeURIComponent(run.run_id)}/review`, { side });
          const left = (sent.not_sent || []).length;
          out.replaceChildren(h("div", {}, h("p", {}, `${sentWords(sent.routed_to_review, sent.routed_replacing)} from the ${side}`,
            left ? `; ${plural(left, "failed answer")} not sent (${[...new Set(sent.not_sent.map((n) => n.why))].join("; ")})` : "",
            ". ", sent.routed_to_review ? h("a", { href: queue }, "Open the review queue") : null),
          sent.error ? h("p", { class: "why warn-line" }, sent.error) : null));
        } catch (err) {
          out.replaceChildren(errorBox(err));
        }
        button.disabled = false;
      } }, sides.length > 1 ? `Send failed to review (${side})` : "Send failed to review");
      return guarded(button, lacking, "send answers to review");
    });
    box.append(h("div", { class: "actions" }, buttons), out);
  }
  return box;
}

// What to do next: see what changed, show the broken cases, go back, and publish or test again.
// Publish is the main action only when the story says so (`domain.verdict_text.run_story`).
function nextSteps(ctx, run, story) {
  const steps = h("div", { class: "actions", id: "next-steps", role: "group", "aria-label": "Next steps" });
  const base = (run.arms || []).find((a) => a.role === "baseline");
  const readsSpecs = ctx.access.missing([["agents:edit", { agent: run.agent_id }]]);
  if (base && readsSpecs) {
    steps.append(guarded(h("button", { type: "button", id: "see-changes" }, "See what changed"), readsSpecs, "see what changed"));
  } else if (base) {
    steps.append(h("a", { class: "button", id: "see-changes", href: `?changes=1#changes` }, "See what changed"));
  }
  if (run.outcome && run.outcome.comparison && run.outcome.comparison.confirmed_regressions) {
    steps.append(h("a", { class: "button", id: "show-broken", href: "?outcome=regression#cases" }, "Show the cases that broke"));
  }
  steps.append(h("a", { class: "button", href: href("agents", run.agent_id) }, "Back to the agent"));
  if (run.draft) {
    if (story.main_action === "test_again") {
      const again = h("a", { class: "button primary", id: "test-again", href: `${href("agents", run.agent_id)}?start=draft` }, "Test again");
      steps.append(again, h("span", { class: "why" }, "The draft changed since this run."));
    }
    if (story.published_as) {
      // the draft, unchanged since this run, is a published version already: nothing to publish
      steps.append(h("span", { role: "status", id: "published-as" }, `This draft is published as v${story.published_as}.`));
    } else {
      steps.append(...publishStep(ctx, run, story));
    }
  }
  const changes = base && !readsSpecs && new URLSearchParams(location.search).get("changes") ? specChanges(run) : null;
  return h("section", { "aria-label": "Next steps" }, steps, changes);
}

// The draft run's Publish: the main action when the story says so, else with why it is not.
function publishStep(ctx, run, story) {
  const editNeeds = [["agents:edit", { agent: run.agent_id }]];
  const publish = h("button", { type: "button", id: "publish", class: story.main_action === "publish" ? "primary" : "",
    "data-main": story.main_action === "publish" ? "true" : "false",
    onclick: async () => {
      try {
        const agent = await get(`api/v1/agents/${encodeURIComponent(run.agent_id)}`);
        await openPublishDialog(agent, (v) => publish.replaceWith(h("span", { role: "status", id: "published" }, `Published as v${v.version}.`)));
      } catch (err) {
        publish.after(errorBox(err));
      }
    } }, "Publish the draft");
  const why = story.main_action !== "publish" && story.publish_blockers.length
    ? h("span", { class: "why", id: "publish-why" }, `Publish is not the main action: ${story.publish_blockers.join("; ")}.`)
    : null;
  return [guarded(publish, ctx.access.missing(editNeeds), "publish"), why].filter(Boolean);
}

function sideName(side) {
  return side.draft ? "the draft" : `v${side.version}`;
}

// A value as one line of text: a string as it is, anything else as JSON.
function shown(value) {
  return typeof value === "string" ? value : JSON.stringify(value);
}

// What changed between the specs the run tested (`GET .../spec-changes`), not the draft as it is
// now: each place in the spec, what happened there, and a text's changed lines as a diff.
function specChanges(run) {
  const heading = () => h("h2", { id: "changes-heading" }, "What changed");
  const box = h("section", { id: "changes", class: "card", "aria-labelledby": "changes-heading" }, heading(),
    h("p", { class: "muted" }, "Reading the specs this run tested…"));
  get(`api/v1/eval-runs/${encodeURIComponent(run.run_id)}/spec-changes`).then((found) => {
    const from = `From ${sideName(found.baseline)} to ${sideName(found.candidate)}, as this run tested them`;
    if (!found.changes.length) {
      box.replaceChildren(heading(), h("p", { id: "changes-none" }, `${from}: the two specs are the same.`));
      return;
    }
    box.replaceChildren(heading(), h("p", { class: "muted" }, `${from}:`),
      h("ul", { class: "changes" }, found.changes.map((c) => h("li", { "data-path": c.path, "data-change": c.change },
        h("code", {}, c.path), ` ${c.change}`,
        c.lines.length
          ? h("pre", { class: "diff" }, c.lines.map((line) => h("span", {
            class: line.startsWith("+") ? "add" : line.startsWith("-") ? "del" : line.startsWith("@@") ? "hunk" : "" }, line + "\n")))
          : h("div", { class: "values" },
            c.change !== "added" ? h("div", { class: "del" }, h("span", { class: "muted" }, "before: "), shown(c.before)) : null,
            c.change !== "removed" ? h("div", { class: "add" }, h("span", { class: "muted" }, "after: "), shown(c.after)) : null),
        c.cut ? h("div", { class: "why" }, "Shown cut: the value is too long to show whole.") : null))),
      ...(found.left_out ? [h("p", { class: "why", id: "changes-left-out" }, `And ${plural(found.left_out, "more change")}, not shown.`)] : []));
  }).catch((err) => box.replaceChildren(heading(), errorBox(err)));
  return box;
}

// The sides next to each other, and how the two compare; a tag reads both under it.
function sidesAndComparison(run, comparison, tag) {
  const summaries = run.summaries || {};
  const tags = new Set();
  for (const s of Object.values(summaries)) for (const t of Object.keys(s.tags || {})) tags.add(t);
  const sides = h("div", { class: "sides", id: "sides" }, (run.arms || []).map((a) => {
    const s = summaries[a.arm_id] || {};
    const q = tag ? ((s.tags || {})[tag] || {}).quality || {} : s.quality || {};
    const e = tag ? ((s.tags || {})[tag] || {}).efficiency || {} : s.efficiency || {};
    return h("div", { class: "card side", "data-arm": a.arm_id },
      h("h3", {}, `${a.role === "baseline" ? "Baseline" : "Candidate"}: ${a.draft ? "the draft" : "v" + a.version}${a.model_profile_id ? " · " + a.model_profile_id : ""}${a.replay ? " · " + a.replay.label : ""}`),
      s.could_not_run ? h("p", { class: "verdict bad" }, `Could not run: ${s.could_not_run}`) :
        h("p", { class: "side-rate", title: `first answers: ${pct(q.first_pass_rate)}` }, `Pass rate ${pct(q.pass_rate)} · ${q.passed ?? 0}/${q.cases ?? 0} passed`),
      h("p", { class: "muted" }, `${q.ungraded ? plural(q.ungraded, "answer") + " ungraded · " : ""}cost ${usd(e.cost_usd)} · p50 ${ms(e.latency_p50_ms)}${e.latency_p95_ms !== null && e.latency_p95_ms !== undefined ? ` · p95 ${ms(e.latency_p95_ms)}` : ""}`),
      Object.keys(q.undecided_reasons || {}).length ? h("p", { class: "why undecided" }, `Not decided: ${Object.entries(q.undecided_reasons).map(([why, n]) => `${why} (${n})`).join(" · ")}`) : null);
  }));
  const tagPicker = tags.size ? h("div", { class: "field" },
    h("label", { for: "tag" }, "Tag"),
    h("select", { id: "tag", onchange: (ev) => { const u = new URL(location.href); if (ev.target.value) u.searchParams.set("tag", ev.target.value); else u.searchParams.delete("tag"); u.searchParams.delete("cursor"); history.pushState(null, "", u); dispatchEvent(new PopStateEvent("popstate")); } },
      h("option", { value: "" }, "Every case"), [...tags].sort().map((t) => h("option", { value: t, selected: t === tag }, t)))) : null;
  let compare = null;
  if (comparison && comparison.error) {
    compare = h("section", { class: "card", id: "comparison" }, h("h2", {}, "How the two compare"), errorBox(comparison.error));
  } else if (comparison) {
    const counts = comparison.counts || {};
    compare = h("section", { class: "card", id: "comparison", "aria-label": "How the two compare" },
      h("h2", {}, tag ? `How the two compare, under tag ${tag}` : "How the two compare"),
      h("p", {}, `Pass rate ${pct(comparison.pass_rate_before)} before, ${pct(comparison.pass_rate_after)} after; first answers ${pct(comparison.first_pass_rate_before)} → ${pct(comparison.first_pass_rate_after)}.`),
      h("p", {}, Object.entries(counts).filter(([, n]) => n).map(([k, n]) => `${n} ${COUNT_WORDS[k] || k.replace("_", " ")}`).join(" · ")),
      h("p", { id: "compared-words" }, `${comparison.in_words[0].toUpperCase()}${comparison.in_words.slice(1)}.`),
      h("p", { class: "muted" }, "A confirmed regression or fix is one every rerun of the case repeated."),
      (comparison.notes || []).map((n) => h("p", { class: "why" }, n)));
  }
  return h("section", { "aria-label": "Sides" }, h("h2", {}, tag ? `The sides, under tag ${tag}` : "The sides"), tagPicker, sides, compare);
}

// A page of the run's cases as the filters in the address ask (`{page}`, or `{error}`).
async function readCases(run, q) {
  const params = new URLSearchParams({ limit: "50" });
  for (const k of ["outcome", "tag", "cursor"]) if (q.get(k)) params.set(k, q.get(k));
  if (q.get("case")) params.set("case_id", q.get("case"));  // Activity's eval case opens on it
  try {
    return { page: await get(`api/v1/eval-runs/${encodeURIComponent(run.run_id)}/cases?${params}`) };
  } catch (error) {
    return { error };
  }
}

function casesSection(run, q, cases) {
  const filter = h("select", { id: "outcome", onchange: (ev) => {
    const u = new URL(location.href);
    if (ev.target.value) u.searchParams.set("outcome", ev.target.value); else u.searchParams.delete("outcome");
    u.searchParams.delete("cursor");
    history.pushState(null, "", u);
    dispatchEvent(new PopStateEvent("popstate"));
  } }, OUTCOMES.map(([v, label]) => h("option", { value: v, selected: v === (q.get("outcome") || "") }, label)));
  if (cases.error) return h("section", { id: "cases" }, h("h2", {}, "Cases"), errorBox(cases.error));
  const page = cases.page;
  const arms = run.arms || [];
  // Without a baseline there is nothing to compare: the column gives the candidate's own result.
  const candidate = arms.find((a) => a.role !== "baseline");
  const compares = arms.some((a) => a.role === "baseline");
  const rows = page.cases.map((c) => {
    const dots = arms.map((a) => {
      const side = (c.arms || {})[a.arm_id];
      const settled = side ? side.settled : null;
      const cls = settled === "passed" ? "passed" : settled === "failed" ? "failed" : "other";
      return h("span", { class: `dot ${cls}`, role: "img", "aria-label": `${a.role}: ${settled || "not asked"}`, title: `${a.role}: ${settled || "not asked"}`, "data-arm": a.arm_id, "data-state": settled || "" });
    });
    return h("tr", { "data-case-id": c.case_id, "data-outcome": c.outcome || "" },
      h("td", {}, dots),
      h("td", {}, caseDetails(c, arms, q.get("case") === c.case_id)),
      compares ? h("td", { class: "outcome" }, (c.outcome || "").replace(/_/g, " "))
        : h("td", { class: "result" }, settledWords(candidate && (c.arms || {})[candidate.arm_id])));
  });
  const next = page.next_cursor ? h("a", { class: "button", href: `?${new URLSearchParams({ ...Object.fromEntries(q), cursor: page.next_cursor })}#cases` }, "Next cases") : null;
  return h("section", { id: "cases", "aria-labelledby": "cases-heading" },
    h("h2", { id: "cases-heading" }, "Cases"),
    h("div", { class: "filters" }, h("div", {}, h("label", { for: "outcome" }, "Outcome"), filter)),
    rows.length ? h("div", { class: "scroll" }, h("table", { class: "cases" },
      h("thead", {}, h("tr", {}, h("th", { scope: "col" }, arms.map((a) => a.role).join(" / ")), h("th", { scope: "col" }, "Case"), h("th", { scope: "col" }, compares ? "Outcome" : "Result"))),
      h("tbody", {}, rows))) : h("p", { class: "empty" }, "No case matches."),
    next);
}

// A side's settled state in words: passed, failed, not graded (no required scorer applies),
// incomplete (not answered or not decided), not asked.
const SETTLED_WORDS = { passed: "passed", failed: "failed", ungraded: "not graded", incomplete: "incomplete" };
function settledWords(side) {
  if (!side || !side.settled) return "not asked";
  return SETTLED_WORDS[side.settled] || side.settled;
}

// A case opens onto what it expects and every side's answers, calls and scorer reasons.
function caseDetails(c, arms, open = false) {
  const ex = c.expects || {};
  return h("details", { class: "case", open },
    h("summary", {}, h("span", { class: "case-id" }, c.case_id), " ",
      callCountWords(c.blocked_calls, c.divergent_calls) ? h("span", { class: "badge warn call-counts" }, callCountWords(c.blocked_calls, c.divergent_calls)) : null, " ",
      arms.map((a) => {
        const review = ((c.arms || {})[a.arm_id] || {}).review;
        return review ? [h("span", { class: `badge review-mark${review.corrected ? " warn" : ""}`, "data-arm": a.arm_id,
          title: `${a.role}: a person's verdict (${review.verdict}) stands for the scorers'` },
        `${arms.length > 1 ? a.role + " " : ""}${reviewMark(review)}`), " "] : null;
      }),
      h("span", { class: "muted" }, (ex.input || "").slice(0, 140))),
    h("h4", {}, "Expects"),
    h("pre", {}, ex.input || ""),
    ex.reference ? h("p", {}, "Reference: ", h("code", {}, String(ex.reference))) : null,
    (ex.tags || []).length ? h("p", { class: "muted" }, `Tags: ${ex.tags.join(", ")}`) : null,
    arms.map((a) => {
      const side = (c.arms || {})[a.arm_id];
      if (!side) return null;
      return h("div", { class: "side-answers", "data-arm": a.arm_id },
        h("h4", {}, `${a.role}: ${side.settled}`),
        (side.attempts || []).map((t) => h("div", { class: "attempt" },
          h("p", { class: "muted" }, `try ${t.attempt} · ${t.state}${t.model ? " · " + t.model : ""}${t.latency_ms !== undefined && t.latency_ms !== null ? ` · ${ms(t.latency_ms)}` : ""}`),
          h("pre", {}, t.answer || (t.error ? `error: ${t.error}` : "")),
          (t.calls || []).length ? callList(t.calls) : null,
          (t.scores || []).map((s) => h("p", { class: "reason" }, `${s.scorer}: ${s.passed === null ? "not graded" : s.passed ? "passed" : "failed"} — ${s.reason || ""}`)))));
    }));
}

// An attempt's tool calls in the order made: each one's name, its status in words, its arguments
// and result (kept redacted; shown as text, whatever they hold), and its error and reason.
function callList(calls) {
  return h("ol", { class: "calls" }, calls.map((call) => h("li", { class: "call", "data-status": call.status || "executed" },
    h("code", { class: "call-name" }, call.name), " ",
    h("span", { class: `call-status ${call.status === "blocked" || call.status === "divergent" ? "badge warn" : "badge"}` }, callStatusWords(call)),
    h("div", { class: "call-arguments" }, h("span", { class: "muted" }, "arguments: "), h("pre", {}, JSON.stringify(call.arguments ?? {}, null, 2))),
    call.result !== undefined && call.result !== null
      ? h("div", { class: "call-result" }, h("span", { class: "muted" }, "result: "), h("pre", {}, typeof call.result === "string" ? call.result : JSON.stringify(call.result, null, 2)))
      : null,
    call.error ? h("p", { class: "call-error why" }, `error: ${call.error}`) : null,
    call.reason ? h("p", { class: "call-reason muted" }, call.reason) : null)));
}
