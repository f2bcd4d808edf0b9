/**
 * The dashboard page: a hash router over the views (runs, run, compare, episode, recipe) and the poll
 * that keeps the shown view live (every 2 s; a failed poll is shown, not thrown).
 */
import { ApiError } from "./api.ts";
import { compareView } from "./compare-view.ts";
import { h, replace } from "./dom.ts";
import { episodePage } from "./episode-page.ts";
import { recipeView } from "./recipe-view.ts";
import { currentRoute } from "./routes.ts";
import { runView } from "./run-view.ts";
import { runsView } from "./runs-view.ts";
import type { View } from "./view.ts";

const POLL_MS = 2000;
const main = document.getElementById("main")!;
const live = document.getElementById("live")!;
let current: View | null = null;
let polling = false;

function viewFor(): View {
  const { view, params } = currentRoute();
  const run = params.get("run");
  if (view === "run" && run) return runView(run);
  if (view === "recipe" && params.get("path")) return recipeView(params.get("path")!, params.get("claim"));
  if (view === "compare") return compareView(params.getAll("run"));
  if (view === "episode" && run && params.get("seq"))
    return episodePage(run, params.get("seq")!, params.get("with"));
  return runsView();
}

function showError(error: unknown): void {
  const message = error instanceof Error ? error.message : String(error);
  const status = error instanceof ApiError ? `${error.status}: ` : "";
  replace(
    main,
    h(
      "div",
      { class: "error-page" },
      h("h1", {}, "Cannot show this page"),
      h("p", {}, status, message),
      h("a", { href: "#/" }, "all runs"),
    ),
  );
}

async function navigate(): Promise<void> {
  current?.dispose?.();
  const view = viewFor();
  current = view;
  document.title = `agentrl · ${view.title}`;
  replace(main, view.element);
  try {
    await view.load();
    document.body.dataset.ready = "true";
  } catch (error) {
    if (current === view) showError(error);
  }
}

async function poll(): Promise<void> {
  if (polling || !current?.refresh) return;
  polling = true;
  const view = current;
  try {
    await view.refresh?.();
    live.textContent = `updated ${new Date().toLocaleTimeString()}`;
    live.classList.remove("bad");
  } catch (error) {
    live.textContent = `update failed: ${error instanceof Error ? error.message : String(error)}`;
    live.classList.add("bad");
  } finally {
    polling = false;
  }
}

window.addEventListener("hashchange", () => {
  document.body.dataset.ready = "false";
  void navigate();
});
setInterval(() => void poll(), POLL_MS);
void navigate();
