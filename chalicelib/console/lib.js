// What every console page shares: signing in, the API, building the page from text, formats.
// Tenant text is only ever set as text (never as HTML): a case, an answer or a name is untrusted.

export const BASE = new URL("..", import.meta.url);
const TOKEN_KEY = "assay.token";

// Sign in from the address's fragment (`#token=...`): no server or log sees it, and it is
// taken out of the address at once so a shared link never carries it.
export function signIn() {
  const hash = new URLSearchParams(location.hash.slice(1));
  const token = hash.get("token");
  if (token) {
    sessionStorage.setItem(TOKEN_KEY, token);
    hash.delete("token");
    const rest = hash.toString();
    history.replaceState(history.state, "", location.pathname + location.search + (rest ? "#" + rest : ""));
  }
  return sessionStorage.getItem(TOKEN_KEY);
}

export function signOut() {
  sessionStorage.removeItem(TOKEN_KEY);
}

export function token() {
  return sessionStorage.getItem(TOKEN_KEY);
}

export class ApiError extends Error {
  constructor(status, body) {
    const err = (body && body.error) || {};
    super(err.message || `HTTP ${status}`);
    this.status = status;
    this.code = err.code;
    this.field = err.field;
    this.permission = err.permission;
    this.problems = Array.isArray(err.problems) ? err.problems : [];
    this.body = body;
  }
}

// `api("GET", "api/v1/...")` -> the JSON body; any other status than 2xx throws ApiError.
export async function api(method, path, body) {
  const headers = { Authorization: `Bearer ${token()}` };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const res = await fetch(new URL(path.replace(/^\//, ""), BASE), {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  let data = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    data = { error: { message: text.slice(0, 200) } };
  }
  if (!res.ok) throw new ApiError(res.status, data);
  return data;
}

export const get = (path) => api("GET", path);

// `h("a", {href, class}, "text", child)`: an element whose strings are text nodes.
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith("on") && typeof v === "function") el.addEventListener(k.slice(2), v);
    else if (k === "dataset") Object.assign(el.dataset, v);
    else if (v === true) el.setAttribute(k, "");
    else el.setAttribute(k, String(v));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children.flat(Infinity)) {
    if (c === undefined || c === null || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

// A link inside the console: `href("runs", id)` -> the page's address under the service's root.
export function href(...parts) {
  return new URL(parts.map((p) => encodeURIComponent(String(p))).join("/"), BASE).pathname;
}

export function pct(rate) {
  return rate === null || rate === undefined ? "—" : `${(rate * 100).toFixed(1)}%`;
}

export function usd(amount) {
  if (amount === null || amount === undefined) return "—";
  return amount < 0.01 && amount > 0 ? `$${amount.toFixed(4)}` : `$${amount.toFixed(2)}`;
}

// Full date and time, in UTC like the chart's axis.
export function when(iso) {
  if (!iso) return "—";
  const d = new Date(iso);
  if (isNaN(d)) return String(iso);
  return d.toISOString().replace("T", " ").slice(0, 16) + " UTC";
}

// A time for a list row: "19:54 UTC" today, "Dec 3, 19:54 UTC" on another day of this year,
// "Dec 3 2025, 19:54 UTC" in another year (UTC days, as `when`).
const SHORT_MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
export function whenShort(iso, now = new Date()) {
  if (!iso) return "—";
  const d = new Date(iso);
  if (isNaN(d)) return String(iso);
  const time = d.toISOString().slice(11, 16) + " UTC";
  if (d.toISOString().slice(0, 10) === now.toISOString().slice(0, 10)) return time;
  const day = `${SHORT_MONTHS[d.getUTCMonth()]} ${d.getUTCDate()}`;
  return `${d.getUTCFullYear() === now.getUTCFullYear() ? day : `${day} ${d.getUTCFullYear()}`}, ${time}`;
}

export function plural(n, one, many = one + "s") {
  return `${n} ${n === 1 ? one : many}`;
}

// Where the page is, as links back up: `crumbs(["Agents", href("agents")], [name])`; the last is
// the page itself (no link).
export function crumbs(...trail) {
  return h("nav", { class: "crumbs", "aria-label": "Breadcrumb" }, h("ol", {}, trail.map(([text, link], i) =>
    h("li", {}, i ? h("span", { class: "sep", "aria-hidden": "true" }, "›") : null,
      i === trail.length - 1 || !link ? h("span", { "aria-current": i === trail.length - 1 ? "page" : null }, text)
        : h("a", { href: link }, text)))));
}

// An empty page's next step: what is missing, then what to do, each a paragraph; a command
// (`{command}`) is shown as code the reader can copy.
export function emptyState(id, ...lines) {
  return h("section", { class: "empty", id }, lines.map((line) => line && line.command
    ? h("pre", { class: "command" }, h("code", {}, line.command))
    : h("p", {}, line)));
}

// The page's main region, replaced whole; focus moves there for screen readers and keyboards.
export function show(title, ...children) {
  document.title = `${title} · assay`;
  const main = document.getElementById("main");
  main.replaceChildren(...children.flat(Infinity).filter(Boolean));
  return main;
}

// A modal dialog over the page, focused on `first`, gone from the page once closed.
export function showDialog(dialog, first) {
  document.body.append(dialog);
  dialog.addEventListener("close", () => dialog.remove());
  dialog.showModal();
  first.focus();
  return dialog;
}

// A dialog form's Cancel button, and whether its submit event came from it.
export const cancelButton = () => h("button", { type: "submit", value: "cancel", formnovalidate: true }, "Cancel");
export const cancelled = (event) => !!event.submitter && event.submitter.value === "cancel";

// A refusal that lists its problems field by field (`problems`: `[{field, message, permission?}]`,
// as a draft refused at start, estimate or publish): its message's lead words, then a list with
// each field beside its own problem (the field's name is not said twice).
function problemList(msg, problems) {
  const at = msg.indexOf(problems[0].message);
  const lead = at > 0 ? msg.slice(0, at).replace(/[\s:;]+$/, "") : msg;
  return [h("p", { class: "problems-lead" }, `${lead.charAt(0).toUpperCase()}${lead.slice(1)}:`),
    h("ul", { class: "problems" }, problems.map((p) => {
      const field = String(p.field || "");
      const text = String(p.message || "");
      return h("li", { "data-field": field }, h("code", {}, field),
        h("span", {}, text.startsWith(`${field}: `) ? text.slice(field.length + 2) : text));
    }))];
}

export function errorBox(err) {
  const msg = err instanceof ApiError ? err.message : String(err && err.message || err);
  const problems = (err && err.problems) || [];
  if (problems.length) return h("div", { class: "error", role: "alert" }, problemList(msg, problems));
  return h("div", { class: "error", role: "alert" },
    err && err.status === 404 ? "Not found, or not yours to see." : msg,
    err && err.permission ? h("span", { class: "muted" }, ` (needs ${err.permission})`) : null);
}

// What the reader may do, from GET /api/v1/me: organization-wide permissions and grants on one
// agent or dataset (run/edit imply view, as the service resolves them).
export class Access {
  constructor(me) {
    this.me = me;
    this.held = new Set(me.permissions || []);
    this.grants = new Map((me.grants || []).map((g) => [`${g.kind}:${g.resource_id}`, new Set(g.permissions)]));
  }
  may(permission, { agent, dataset } = {}) {
    if (this.held.has(permission)) return true;
    const kind = permission.split(":")[0];
    const id = kind === "agents" ? agent : kind === "datasets" ? dataset : undefined;
    if (id === undefined) return false;
    const g = this.grants.get(`${kind.slice(0, -1)}:${id}`);
    if (!g) return false;
    const action = permission.split(":")[1];
    return g.has(permission) || (action === "view" && (g.has(`${kind}:run`) || g.has(`${kind}:edit`)));
  }
  // The first permission of `needs` ([permission, {agent, dataset}] pairs) the reader lacks, or null.
  missing(needs) {
    for (const [p, on] of needs) if (!this.may(p, on || {})) return p;
    return null;
  }
}

// A control the reader may not use is shown disabled, saying why.
export function guarded(control, lacking, what) {
  if (!lacking) return control;
  control.disabled = true;
  control.setAttribute("aria-disabled", "true");
  const id = `why-${Math.random().toString(36).slice(2, 9)}`;
  control.setAttribute("aria-describedby", id);
  control.title = `You cannot ${what}: it needs ${lacking}`;
  return h("span", { class: "guarded" }, control,
    h("span", { id, class: "why" }, `You cannot ${what}: it needs ${lacking}.`));
}

export function verdictClass(phrase) {
  if (!phrase) return "";
  if (/^Breaks|^Worse|Could not run|failed/i.test(phrase)) return "bad";
  if (/^Fixes|^Better/i.test(phrase)) return "good";
  return "neutral";
}
