// What the console says in words rather than in a setting's raw form: a suite's schedule (a cron
// line) and its threshold, a verdict word, a latency, and the commands an empty page points to.
import { pct } from "./lib.js";

// The next steps an empty page names: the CLI command for each, in one place.
export const COMMANDS = {
  createAgent: "assay agents create my-agent --spec agent.json",
  importDataset: 'assay import my-set cases.csv --create "My set" --scorer equals',
};

const DAYS = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"];
const MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August",
  "September", "October", "November", "December"];

const two = (n) => String(n).padStart(2, "0");
const isInt = (s) => /^\d+$/.test(s);

// `"1,3"` / `"1-5"` / `"4"` -> the numbers it names (each in lo..hi), or null for anything else
// (a step, a name, `*`).
function numbers(field, lo, hi) {
  const out = [];
  for (const part of field.split(",")) {
    const range = part.match(/^(\d+)-(\d+)$/);
    if (range) {
      const [a, b] = [Number(range[1]), Number(range[2])];
      if (a > b) return null;
      for (let n = a; n <= b; n++) out.push(n);
    } else if (isInt(part)) out.push(Number(part));
    else return null;
  }
  return out.every((n) => n >= lo && n <= hi) ? out : null;
}

function list(words) {
  return words.length <= 1 ? words.join("") : `${words.slice(0, -1).join(", ")} and ${words.at(-1)}`;
}

// Days of the week in words: "1-5" -> "Monday to Friday", "0,6" -> "Sunday and Saturday".
function weekdays(field) {
  const range = field.match(/^([0-7])-([0-7])$/);
  if (range && Number(range[1]) < Number(range[2])) return `${DAYS[Number(range[1]) % 7]} to ${DAYS[Number(range[2]) % 7]}`;
  const days = numbers(field, 0, 7);
  return days ? list(days.map((d) => DAYS[d % 7])) : null;
}

// A 5-field cron line (minute hour day-of-month month day-of-week) in words, read on the wall
// clock of `timezone`: "0 6 * * *" -> "every day at 06:00 UTC". A line this cannot say plainly is
// quoted: `on the schedule "…" (UTC)`.
export function cronWords(cron, timezone = "UTC") {
  const tz = timezone || "UTC";
  const raw = `on the schedule "${cron}" (${tz})`;
  const f = String(cron || "").trim().split(/\s+/);
  if (f.length !== 5) return raw;
  const [min, hour, dom, mon, dow] = f;
  // every N minutes / hourly
  if (hour === "*" && dom === "*" && mon === "*" && dow === "*") {
    if (min === "*") return "every minute";
    const step = min.match(/^\*\/(\d+)$/);
    if (step) return Number(step[1]) === 1 ? "every minute" : `every ${step[1]} minutes`;
    const mins = numbers(min, 0, 59);
    if (mins && mins.length === 1) return mins[0] === 0 ? "every hour, on the hour" : `every hour at ${mins[0]} past`;
    return mins ? `every hour at minutes ${list(mins.map(String))}` : raw;
  }
  const mins = numbers(min, 0, 59);
  if (!mins || mins.length !== 1) return raw;
  let when;
  const hourStep = hour.match(/^\*\/(\d+)$/);
  if (hourStep) {
    when = `every ${hourStep[1]} hours at ${mins[0]} past`;
  } else {
    const hours = numbers(hour, 0, 23);
    if (!hours) return raw;
    when = `at ${list(hours.map((h) => `${two(h)}:${two(mins[0])}`))} ${tz}`;
  }
  const months = mon === "*" ? null : numbers(mon, 1, 12);
  if (mon !== "*" && !months) return raw;
  const inMonths = months ? ` in ${list(months.map((m) => MONTHS[m - 1]))}` : "";
  if (hourStep && (dom !== "*" || dow !== "*")) return raw;
  if (dom === "*" && dow === "*") return hourStep ? `${when}${inMonths}` : `every day${inMonths} ${when}`;
  if (dom === "*") {
    const days = weekdays(dow);
    if (!days) return raw;
    return `every ${days}${inMonths} ${when}`;
  }
  if (dow === "*") {
    const dates = numbers(dom, 1, 31);
    if (!dates) return raw;
    const nth = (d) => `${d}${d % 10 === 1 && d !== 11 ? "st" : d % 10 === 2 && d !== 12 ? "nd" : d % 10 === 3 && d !== 13 ? "rd" : "th"}`;
    return `on the ${list(dates.map(nth))} of ${months ? list(months.map((m) => MONTHS[m - 1])) : "every month"} ${when}`;
  }
  return raw;
}

const given = (v) => v !== undefined && v !== null;

// A suite's threshold in words; settings left unset are left out. "" when nothing is set.
export function thresholdWords(th) {
  const t = th || {};
  const parts = [];
  if (given(t.min_pass_rate)) parts.push(`pass rate at least ${pct(t.min_pass_rate)}`);
  if (given(t.max_regressions)) {
    parts.push(t.max_regressions === 0 ? "no confirmed regressions allowed"
      : `at most ${t.max_regressions} confirmed ${t.max_regressions === 1 ? "regression" : "regressions"}`);
  }
  if (given(t.max_cost_per_pass_rise_pct)) parts.push(`cost per passed case may rise at most ${t.max_cost_per_pass_rise_pct}% over the baseline`);
  if (given(t.max_p95_latency_rise_pct)) parts.push(`p95 latency may rise at most ${t.max_p95_latency_rise_pct}% over the baseline`);
  const known = new Set(["min_pass_rate", "max_regressions", "max_cost_per_pass_rise_pct", "max_p95_latency_rise_pct"]);
  for (const [k, v] of Object.entries(t)) if (!known.has(k) && given(v)) parts.push(`${k.replaceAll("_", " ")} ${v}`);
  return parts.join("; ");
}

// When a suite runs, in words: its schedule and the events that start it.
export function triggerWords(triggers) {
  const t = triggers || {};
  const parts = [];
  if (t.schedule && t.schedule.cron) parts.push(cronWords(t.schedule.cron, t.schedule.timezone));
  if (t.on_publish) parts.push("when a version is published");
  if (t.on_promotion) parts.push("before a promotion");
  if (t.on_dependency_change) parts.push("when what it depends on changes");
  return parts.length ? parts.join("; ") : "only when started by hand";
}

// Milliseconds for reading: "11 ms", "0.4 ms", "1.2 s"; "—" when there is none.
export function ms(value) {
  if (value === null || value === undefined || Number.isNaN(Number(value))) return "—";
  const n = Number(value);
  if (n >= 10000) return `${(n / 1000).toFixed(1)} s`;
  return n >= 10 ? `${Math.round(n)} ms` : `${n.toFixed(1)} ms`;
}

// The verdict beside a version (pass / partial / fail / none) as the page shows it: `none` is
// neutral, "not measured yet", never a failure.
export const VERDICT_WORDS = { pass: "pass", partial: "partial", fail: "fail", none: "not measured yet" };

// A tool call's status in words, as a case's detail shows it (docs/guides/tools.md, "Reading the
// calls"): "executed on shop-test", "blocked — not executed", ...
const CALL_WORDS = {
  blocked: "blocked — not executed",
  replayed: "replayed from the recording",
  divergent: "divergent — held",
  unverified: "unverified — reported by the agent",
  intended: "intended — recorded, not executed",
};
export function callStatusWords(call) {
  const status = (call && call.status) || "executed";
  if (status === "executed") return call.connection_id ? `executed on ${call.connection_id}` : "executed";
  return Object.hasOwn(CALL_WORDS, status) ? CALL_WORDS[status] : String(status);
}

// A case's calls that did not run as asked, counted: "2 blocked · 1 divergent"; "" for none.
export function callCountWords(blocked, divergent) {
  return [blocked ? `${blocked} blocked` : "", divergent ? `${divergent} divergent` : ""].filter(Boolean).join(" · ");
}

// The run's cases that diverged from the recording: "3 cases diverged from the recording".
export function divergedWords(n) {
  return `${n} ${n === 1 ? "case" : "cases"} diverged from the recording`;
}

// A guard's state on an environment in words (`GET /agents/{id}/guards`): Passed, Failed,
// Corrected by <names>, Out of date or Not checked. A reviewer who is no longer a member of the
// organization is "a former member": a name is never kept with the result.
export function guardWord(guard) {
  switch (guard.state) {
    case "passed": return "Passed";
    case "failed": return "Failed";
    case "corrected": {
      const names = (guard.reviewed_by || []).map((r) => r.name || "a former member");
      return names.length ? `Corrected by ${names.join(", ")}` : "Corrected";
    }
    case "out_of_date": return "Out of date";
    default: return "Not checked";
  }
}

// A person the review queue names (`{user_id, name}`): their current name, "a former member" once
// they left the organization (the service keeps no name with a decision), or "" for nobody.
export function personName(person) {
  if (!person) return "";
  return person.name || "a former member";
}

// Why an answer is in the review queue, in words.
export function reasonWords(item) {
  switch (item.reason) {
    case "confirmed_regression": return "a confirmed regression (every rerun of the case failed where the baseline passed)";
    case "judge_failed": return "the judge failed to grade it";
    case "sent_by_hand": return item.sent_by ? `sent by hand by ${personName(item.sent_by)}` : "sent by hand";
    default: return String(item.reason || "");
  }
}

// A person's verdict on a case's side (`review` of GET .../cases): "corrected by <name>" when it
// overturned the scorers, else "reviewed by <name>".
export function reviewMark(review) {
  return `${review.corrected ? "corrected" : "reviewed"} by ${personName(review.by)}`;
}

// What a review queue's send did: "Sent 3 answers to review (1 replaced older ones)".
export function sentWords(routed, replacing) {
  const n = routed || 0;
  return `Sent ${n} ${n === 1 ? "answer" : "answers"} to review${replacing ? ` (${replacing} replaced ${replacing === 1 ? "an older one" : "older ones"})` : ""}`;
}

// One number of a run before → after, when it moved: "7 → 8 passed".
function moved(label, before, after) {
  if (before === after || before === undefined || after === undefined) return null;
  return `${label} ${before ?? "—"} → ${after ?? "—"}`;
}

// What a decision or Undo changed, from its audit entry (`runs`, `suite_results`): one sentence
// per run, "Run r1: 7 → 8 passed; confirmed regressions 3 → 2; compared worse → not significant".
export function auditWords(audit) {
  const runs = (audit.runs || []).map((r) => {
    const b = r.before || {};
    const a = r.after || {};
    const parts = [
      b.passed !== a.passed ? `${b.passed ?? "—"} → ${a.passed ?? "—"} passed` : `still ${a.passed ?? "—"} passed`,
      moved("confirmed regressions", b.confirmed_regressions, a.confirmed_regressions),
      moved("compared", b.comparison, a.comparison),
      moved("verdict", b.verdict, a.verdict),
    ].filter(Boolean);
    return `Run ${r.run_id}: ${parts.join("; ")}.`;
  });
  const suites = (audit.suite_results || []).filter((s) => s.before !== s.after)
    .map((s) => `Suite ${s.suite_id} (run ${s.run_id}): ${s.before ?? "—"} → ${s.after ?? "—"}.`);
  const all = [...runs, ...suites];
  return all.length ? all.join(" ") : "No run's numbers changed.";
}
