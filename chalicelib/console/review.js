// A dataset's Review tab (/datasets/{id}?tab=review): the answers waiting for a person's verdict
// and those decided, each beside what its case expects and every scorer's reason; Pass / Fail with
// a note, Undo, and a decision's note made a judge criterion. Answers, questions, notes and names
// are the tenant's text: set as text only.
import { api, get, h, href, show, errorBox, guarded, when, plural } from "./lib.js";
import { auditWords, personName, reasonWords } from "./words.js";
import { names } from "./lists.js";

const STATES = [["waiting", "Waiting"], ["decided", "Decided"], ["replaced", "Replaced"]];
const PAGE = 50;

// What the last decision or Undo changed, said once above the list after it is read again.
let said = null;

const path = (id, ...rest) => `api/v1/datasets/${encodeURIComponent(id)}/review${rest.map((p) => `/${encodeURIComponent(p)}`).join("")}`;

// The waiting count the Review tab's label carries; null when the queue cannot be read.
export async function waitingCount(id) {
  try {
    return (await get(`${path(id)}?${new URLSearchParams({ state: "waiting", limit: "1" })}`)).waiting;
  } catch {
    return null;
  }
}

export function tabLabel(waiting) {
  return waiting ? `Review (${waiting})` : "Review";
}

function navigate(changes) {
  const u = new URL(location.href);
  for (const [k, v] of Object.entries(changes)) {
    if (v) u.searchParams.set(k, v); else u.searchParams.delete(k);
  }
  u.searchParams.delete("cursor");
  history.pushState(null, "", u);
  dispatchEvent(new PopStateEvent("popstate"));
}

// `head`: the dataset page's crumbs and heading; `tabs(waiting)`: its tabs with Review current.
export async function render(ctx, { dataset, head, tabs }) {
  const id = dataset.dataset_id;
  const q = new URLSearchParams(location.search);
  const state = STATES.some(([s]) => s === q.get("state")) ? q.get("state") : "waiting";
  const query = new URLSearchParams({ state, limit: String(PAGE) });
  for (const k of ["agent_id", "tag", "cursor"]) if (q.get(k)) query.set(k, q.get(k));
  const [page, everything, agents] = await Promise.all([
    get(`${path(id)}?${query}`).catch((error) => ({ error })),
    get(`${path(id)}?limit=200`).catch(() => ({ items: [] })),
    names("agents")]);
  const rerender = () => render(ctx, { dataset, head, tabs });
  const mayDecide = ctx.access.missing([["datasets:edit", { dataset: id }]]);

  // the filters offer the agents and tags the queue holds, and whatever the address asks for
  const agentIds = new Set(everything.items.map((i) => i.agent_id));
  const tagSet = new Set(everything.items.flatMap((i) => i.tags || []));
  if (q.get("agent_id")) agentIds.add(q.get("agent_id"));
  if (q.get("tag")) tagSet.add(q.get("tag"));
  const select = (name, label, options, current) => h("div", {},
    h("label", { for: `review-${name}` }, label),
    h("select", { id: `review-${name}`, onchange: (ev) => navigate({ [name]: ev.target.value }) },
      options.map(([v, text]) => h("option", { value: v, selected: v === current }, text))));
  const filters = h("div", { class: "filters", role: "group", "aria-label": "Filter the review queue" },
    select("state", "Show", STATES, state),
    select("agent_id", "Agent", [["", "Every agent"], ...[...agentIds].sort().map((a) => [a, agents[a] || a])], q.get("agent_id") || ""),
    select("tag", "Tag", [["", "Every tag"], ...[...tagSet].sort().map((t) => [t, t])], q.get("tag") || ""));

  const waiting = page.error ? null : page.waiting;
  const note = said ? h("p", { class: "card said", id: "review-said", role: "status" }, said) : null;
  said = null;
  let list;
  if (page.error) {
    list = errorBox(page.error);
  } else if (!page.items.length) {
    list = h("section", { class: "empty", id: "review-empty" },
      h("p", {}, state === "waiting" ? "No answer is waiting for review." : `No ${state} answer here.`),
      h("p", {}, "A run sends its confirmed regressions and the answers its judge failed to grade here; on a run's page, ",
        h("strong", {}, "Send failed to review"), " sends a side's failed answers by hand."));
  } else {
    list = h("ol", { class: "review-items", "aria-label": `${STATES.find(([s]) => s === state)[1]} answers` },
      page.items.map((item) => h("li", {}, itemCard(ctx, id, item, agents, mayDecide, rerender))));
  }
  const next = page.next_cursor
    ? h("a", { class: "button", id: "review-next", href: `?${new URLSearchParams({ ...Object.fromEntries(q), cursor: page.next_cursor })}` }, "Next answers")
    : null;
  show(`Review · ${dataset.name || id}`, head, tabs(waiting), filters,
    waiting !== null ? h("p", { class: "muted", id: "review-waiting" }, `${plural(waiting, "answer")} waiting.`) : null,
    note, list, next);
}

// What the case expects, each part the item carries.
function expects(item) {
  const ex = item.expected || {};
  const shown = (v) => (typeof v === "string" ? v : JSON.stringify(v, null, 2));
  return [
    h("h4", {}, "What the case expects"),
    h("p", { class: "muted" }, "Question"), h("pre", { class: "question" }, item.question || ""),
    ex.reference !== undefined && ex.reference !== null ? [h("p", { class: "muted" }, "Reference"), h("pre", { class: "reference" }, shown(ex.reference))] : null,
    ex.counter_example !== undefined && ex.counter_example !== null ? [h("p", { class: "muted" }, "Not this (counter example)"), h("pre", {}, shown(ex.counter_example))] : null,
    ex.expected_calls ? [h("p", { class: "muted" }, "Expected tool calls"), h("pre", {}, shown(ex.expected_calls))] : null,
    ex.checks ? [h("p", { class: "muted" }, "Checks"), h("pre", {}, shown(ex.checks))] : null,
  ];
}

function itemCard(ctx, datasetId, item, agents, lacking, rerender) {
  return h("article", { class: "card review-item", "data-item-id": item.item_id, "data-case-id": item.case_id, "data-state": item.state },
    h("h3", {}, `Case ${item.case_id}`, " ",
      h("span", { class: "muted" }, "· ", h("a", { href: href("agents", item.agent_id) }, agents[item.agent_id] || item.agent_id),
        ` ${item.arm_label || ""} · `, h("a", { href: href("runs", item.run_id), class: "run-link" }, `run ${item.run_id}`))),
    h("p", { class: "why sent-why" }, `Sent ${when(item.sent_at)}: ${reasonWords(item)}.`),
    h("div", { class: "answer-beside" },
      h("div", { class: "answer" }, h("h4", {}, "The answer"),
        h("pre", { class: "answer-text" }, item.answer || ""),
        item.answer_truncated ? h("p", { class: "why" }, "Shown cut: the answer is too long to keep whole.") : null),
      h("div", { class: "expected" }, expects(item))),
    h("h4", {}, "What the scorers said"),
    h("ul", { class: "reasons scorer-reasons" }, (item.scores || []).map((s) => h("li", { "data-scorer": s.scorer },
      h("strong", {}, s.scorer), `: ${s.passed === null || s.passed === undefined ? "not graded" : s.passed ? "passed" : "failed"}`,
      s.reason ? ` — ${s.reason}` : ""))),
    (item.tags || []).length ? h("p", { class: "muted" }, `Tags: ${item.tags.join(", ")}`) : null,
    item.recomputing ? h("p", { class: "why", role: "status" }, "Recomputing the runs after this decision…") : null,
    item.state === "waiting" ? decideForm(datasetId, item, lacking, rerender)
      : item.state === "decided" ? decided(ctx, datasetId, item, lacking, rerender)
        : h("p", { class: "why replaced" }, `Replaced by a newer answer of the same agent${item.replaced_by ? ` (item ${item.replaced_by})` : ""}.`));
}

// A request of the item's; its error (a 403 naming the permission, a 409 when somebody decided
// first) is shown under the controls, which come back.
async function act(controls, where, work) {
  for (const c of controls) c.disabled = true;
  where.replaceChildren();
  try {
    await work();
  } catch (err) {
    where.replaceChildren(errorBox(err));
    for (const c of controls) c.disabled = false;
  }
}

function decideForm(datasetId, item, lacking, rerender) {
  const noteId = `note-${item.item_id}`;
  const note = h("textarea", { id: noteId, class: "review-note", rows: "2", maxlength: "4000" });
  const out = h("div", { class: "review-result" });
  const decide = (verdict) => act([pass, fail, note], out, async () => {
    const body = { verdict };
    if (note.value.trim()) body.note = note.value.trim();
    const done = await api("POST", path(datasetId, item.item_id, "decision"), body);
    said = `You ${verdict === "pass" ? "passed" : "failed"} case ${item.case_id}${done.item.corrected ? " (overturning the scorers)" : ""}. ${auditWords(done.audit)}`;
    await rerender();
  });
  const pass = h("button", { type: "button", class: "primary decide-pass", onclick: () => decide("pass") }, "Pass");
  const fail = h("button", { type: "button", class: "decide-fail", onclick: () => decide("fail") }, "Fail");
  const whyId = `why-${item.item_id}`;
  if (lacking) {
    for (const c of [note, pass, fail]) {
      c.disabled = true;
      c.setAttribute("aria-describedby", whyId);
    }
    pass.title = fail.title = `You cannot decide: it needs ${lacking}`;
  }
  return h("div", { class: "decide" },
    h("label", { for: noteId }, "Note (why; optional)"), note,
    h("div", { class: "actions" }, pass, fail,
      lacking ? h("span", { class: "why", id: whyId }, `You cannot decide: it needs ${lacking}.`) : null),
    out);
}

function decided(ctx, datasetId, item, lacking, rerender) {
  const out = h("div", { class: "review-result" });
  const undo = h("button", { type: "button", class: "undo", onclick: () => act([undo], out, async () => {
    const done = await api("POST", path(datasetId, item.item_id, "undo"), {});
    said = `Undid the decision on case ${item.case_id}: it waits again. ${auditWords(done.audit)}`;
    await rerender();
  }) }, "Undo");
  return h("div", { class: "decision" },
    h("p", { class: "verdict-line" },
      h("span", { class: `verdict-word ${item.verdict}` }, item.verdict === "pass" ? "Passed" : "Failed"),
      ` by ${personName(item.decided_by)}, ${when(item.decided_at)}`,
      item.corrected ? [" ", h("span", { class: "badge warn corrected", title: "the person's verdict overturned the scorers'" }, "corrected")] : null),
    item.note ? h("blockquote", { class: "review-note-text" }, item.note) : null,
    h("div", { class: "actions" }, guarded(undo, lacking, "undo this decision")),
    item.note ? criterion(datasetId, item, lacking) : null,
    out);
}

// "Make this note a judge criterion": the note grades the cases carrying the tags picked.
function criterion(datasetId, item, lacking) {
  const tags = item.tags || [];
  if (!tags.length) return h("p", { class: "why" }, "Its case carries no tags, so its note cannot become a judge criterion scoped to them.");
  const out = h("div", { class: "criterion-result" });
  const boxes = tags.map((t, i) => h("input", { type: "checkbox", id: `crit-${item.item_id}-${i}`, value: t, checked: true }));
  const make = h("button", { type: "button", class: "make-criterion", onclick: () => {
    const picked = boxes.filter((b) => b.checked).map((b) => b.value);
    if (!picked.length) {
      out.replaceChildren(h("p", { class: "error", role: "alert" }, "Pick at least one tag for the criterion."));
      return;
    }
    act([make], out, async () => {
      const added = await api("POST", path(datasetId, item.item_id, "criterion"), { tags: picked });
      out.replaceChildren(h("p", { role: "status", class: "said" }, added.message));
      make.disabled = false;
    });
  } }, "Make this note a judge criterion");
  return h("fieldset", { class: "criterion" },
    h("legend", {}, "For cases tagged"),
    boxes.map((b, i) => h("span", { class: "tag-pick" }, b, h("label", { for: b.id }, tags[i]))),
    h("div", { class: "actions" }, guarded(make, lacking, "make the note a criterion")),
    out);
}
