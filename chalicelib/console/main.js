// The console's router: which page the address names, after signing in.
import { signIn, signOut, get, h, show, errorBox, Access, BASE } from "./lib.js";

const ROUTES = [
  [/^$/, () => import("./dashboard.js"), "dashboard"],
  [/^evals$/, () => import("./evals.js"), "evals"],
  [/^activity$/, () => import("./activity.js"), "activity"],
  [/^agents$/, () => import("./agents.js"), "agents"],
  [/^datasets$/, () => import("./datasets.js"), "datasets"],
  [/^agents\/([^/]+)$/, () => import("./agent.js"), "agent"],
  [/^agents\/([^/]+)\/suites\/([^/]+)$/, () => import("./suite.js"), "suite"],
  [/^runs\/([^/]+)$/, () => import("./run.js"), "run"],
  [/^datasets\/([^/]+)$/, () => import("./dataset.js"), "dataset"],
];

// The sign-in form; `refused`: the API's reason the last token was not taken (a 401's message),
// shown above it.
function signInForm(refused) {
  const input = h("input", { id: "token", type: "password", autocomplete: "off", required: true });
  const form = h("form", { class: "signin", onsubmit: (e) => {
    e.preventDefault();
    sessionStorage.setItem("assay.token", input.value.trim());
    start();
  } },
    h("h1", {}, "Sign in to assay"),
    refused ? h("p", { class: "error", role: "alert", id: "signin-refused" }, `That token was refused: ${refused}`) : null,
    h("p", {}, "Paste a token or an API key. ", h("code", {}, "assay dev"), " and ", h("code", {}, "make demo ARGS=--serve"),
      " print an address that signs you in."),
    h("label", { for: "token" }, "Token or API key"), input,
    h("button", { type: "submit", class: "primary" }, "Sign in"));
  show("Sign in", form);
  input.focus();
}

// The page the address names: its pattern's groups and its module, asked for at once (it loads
// while the reader's identity is asked for), or null.
function route() {
  const path = location.pathname.slice(BASE.pathname.length).replace(/\/$/, "");
  for (const [pattern, load, name] of ROUTES) {
    const m = path.match(pattern);
    if (m) return { name, params: m.slice(1).map(decodeURIComponent), module: load() };
  }
  return null;
}

export async function start() {
  const token = signIn();
  if (!token) return signInForm();
  const page = route();
  page?.module.catch(() => {});  // its failure is shown once the reader is known
  let me;
  try {
    me = await get("api/v1/me");
  } catch (err) {
    if (err.status === 401) {
      signOut();
      return signInForm(err.message || "not a token this assay accepts");
    }
    return show("Error", errorBox(err));
  }
  const who = document.getElementById("who");
  who.replaceChildren(h("span", {}, `${me.user_id} · ${me.org_id}${me.role ? " · " + me.role : ""}`), " ",
    h("button", { type: "button", class: "link", onclick: () => { signOut(); location.reload(); } }, "Sign out"));
  if (page) {
    document.body.dataset.page = page.name;
    try {
      const mod = await page.module;
      await mod.render({ access: new Access(me), me, params: page.params });
    } catch (err) {
      console.error(err);
      show("Error", errorBox(err));
    }
    return;
  }
  show("Not found", h("h1", {}, "Not found"), h("p", {}, h("a", { href: BASE.pathname }, "Back to the dashboard")));
}

window.addEventListener("popstate", () => start());
start();
