// The Consistency view's script, shipped in the package: nothing is fetched from elsewhere.
// - keeps the progress of running jobs up to date while the page is open (it polls the view's JSON endpoints), and
//   reloads the page when one of them ended (its report is there now);
// - the undo button: a confirmation, then the undo DAG triggered through Airflow's REST API with the UI's login
//   cookie (Airflow checks the permission again);
// - links to Airflow's own pages open them in the UI around this frame (as a link of the UI would), or here.
"use strict";

const POLL_MS = 2000;
const airflow = document.body.dataset.airflow;

function number(value) {
  return value === null || value === undefined ? "-" : Math.round(value).toLocaleString("en-US");
}

function describe(job) {
  const parts = [`${job.stage} (${job.stageNumber}/${job.stages.length})`];
  if (job.ranges) parts.push(`ranges ${job.ranges.done} of ${job.ranges.total}`);
  if (job.rowsScanned) parts.push(`${number(job.rowsScanned)} rows scanned`);
  if (job.rowsPerSecond !== null && job.rowsPerSecond !== undefined) parts.push(`${number(job.rowsPerSecond)} rows/s`);
  if (job.estimatedScanEnd) parts.push(`scan ends ~${new Date(job.estimatedScanEnd).toLocaleTimeString()}`);
  if (job.silent) parts.push(`nothing published since ${new Date(job.updatedAt).toLocaleTimeString()}`);
  return parts.join(", ");
}

function render(block, jobs) {
  const running = jobs.filter((job) => job.state === "running");
  block.replaceChildren();
  for (const job of running) {
    const line = document.createElement("p");
    line.className = "job" + (job.silent ? " silent" : "");
    line.dataset.state = job.state;
    line.dataset.rangesDone = job.ranges ? job.ranges.done : "";
    const who = document.createElement("strong");
    who.textContent = `${job.run ? job.run + " " : ""}${job.task}`;
    line.append(who, `: ${job.target} ${job.mode} on ${job.keyspace}, ${describe(job)}`);
    block.append(line);
  }
  if (!running.length) {
    const none = document.createElement("p");
    none.className = "none";
    none.textContent = "No job running.";
    block.append(none);
  }
  const section = block.closest("section");
  if (section && section.id === "progress") section.hidden = !running.length;
  return running;
}

function follow(block) {
  let seenRunning = new Set(Array.from(block.querySelectorAll(".job strong"), (task) => task.textContent));
  async function poll() {
    try {
      const response = await fetch(block.dataset.progressUrl, { credentials: "same-origin" });
      if (response.ok) {
        const running = render(block, (await response.json()).jobs);
        const now = new Set(running.map((job) => `${job.run ? job.run + " " : ""}${job.task}`));
        if ([...seenRunning].some((task) => !now.has(task))) {
          window.location.reload();  // a job ended: its report is there now
          return;
        }
        seenRunning = now;
      }
    } catch (error) {
      // the api-server restarting: the next poll tries again
    }
    setTimeout(poll, POLL_MS);
  }
  setTimeout(poll, POLL_MS);
}

function undo(control) {
  const [ask, confirm, cancel] = control.querySelectorAll("button");
  const result = control.querySelector("output");
  const show = (asking) => { ask.hidden = !asking; confirm.hidden = asking; cancel.hidden = asking; };
  ask.addEventListener("click", () => { result.textContent = ""; show(false); });
  cancel.addEventListener("click", () => show(true));
  confirm.addEventListener("click", async () => {
    show(true);
    ask.disabled = true;
    const dag = control.dataset.undoDag;
    const response = await fetch(`${airflow}/api/v2/dags/${encodeURIComponent(dag)}/dagRuns`, {
      method: "POST",
      credentials: "same-origin",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ logical_date: null, conf: { run_dir: control.dataset.undoRunDir } }),
    });
    const answer = await response.json().catch(() => ({}));
    if (!response.ok) {
      result.textContent = `not triggered (${response.status}): ${answer.detail ? JSON.stringify(answer.detail) : ""}`;
      ask.disabled = false;
      return;
    }
    const link = document.createElement("a");
    link.href = `${airflow}/dags/${encodeURIComponent(dag)}/runs/${encodeURIComponent(answer.dag_run_id)}`;
    link.dataset.airflowLink = "";
    link.textContent = answer.dag_run_id;
    openInUi(link);
    const dagState = await fetch(`${airflow}/api/v2/dags/${encodeURIComponent(dag)}`, { credentials: "same-origin" });
    const paused = dagState.ok && (await dagState.json()).is_paused;
    result.replaceChildren(`${dag} run `, link, paused
      ? ` queued; ${dag} is paused: unpause it to start the dry run and the approval`
      : " triggered: its dry run, then the approval");
  });
}

// The UI around this frame follows its browser history: a link of ours to one of its pages is opened there.
function openInUi(link) {
  link.addEventListener("click", (event) => {
    try {
      if (window.parent !== window && window.parent.location.origin === window.location.origin) {
        window.parent.history.pushState({}, "", link.href);
        window.parent.dispatchEvent(new PopStateEvent("popstate"));
        event.preventDefault();
      }
    } catch (error) {
      // not allowed: the link opens here
    }
  });
}

document.querySelectorAll("[data-progress-url]").forEach(follow);
document.querySelectorAll("[data-undo-run-dir]").forEach(undo);
document.querySelectorAll("a[data-airflow-link]").forEach(openInUi);
