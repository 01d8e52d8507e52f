// The pass-rate chart, drawn by the service as SVG: this module asks
// for it, puts it in the page, and keeps the 10 / 30 / all switch in the page's address.
import { get, h } from "./lib.js";

const WINDOWS = [["10", "Last 10"], ["30", "Last 30"], ["all", "All"]];

export function chosenWindow() {
  const last = new URLSearchParams(location.search).get("last");
  return WINDOWS.some(([w]) => w === last) ? last : "10";
}

// `chart("api/v1/agents/x/eval-runs/chart", rerender)` -> a section with the switch (past 10
// measured runs) and the figure, or null when nothing is measured yet. Choosing a window pushes
// it into the address (Back returns to the last one) and calls `rerender()`.
export async function chart(apiPath, rerender) {
  const last = chosenWindow();
  const data = await get(`${apiPath}?last=${last}`);
  if (!data.measured) return null;
  const svg = new DOMParser().parseFromString(data.svg, "image/svg+xml").documentElement;
  const figure = h("figure", { id: "chart", "data-last": last, "data-shown": data.shown },
    document.importNode(svg, true),
    h("figcaption", { class: "muted" }, `Pass rate of ${data.shown} of ${data.measured} measured runs, oldest left; times in UTC.`));
  let switcher = null;
  if (data.switch) {
    switcher = h("div", { class: "switch", role: "group", "aria-label": "Runs shown in the chart" },
      WINDOWS.map(([w, label]) => h("a", {
        href: `?last=${w}`, "aria-current": w === last ? "true" : "false", "data-last": w,
        onclick: (e) => {
          e.preventDefault();
          if (w === last) return;
          const url = new URL(location.href);
          url.searchParams.set("last", w);
          history.pushState(null, "", url);
          rerender();
        },
      }, label)));
  }
  return h("section", { class: "trend", "aria-label": "Pass-rate trend" }, switcher, figure);
}
