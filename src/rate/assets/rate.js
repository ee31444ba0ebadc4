// mbag rate's page: shows the next pending pair for this rater as two mbag view
// players and asks BEDD's questions; the server (src/rate/serve.rs) stores the
// answer and times it from when the pair was first shown.
//
// An answer is kept in localStorage until the server has confirmed it, and is
// sent again every few seconds while the server cannot be reached (a restarted
// server takes it then, or says it has it already), so a killed server loses
// nothing and a repeated submit is stored once.
"use strict";

const UNSENT = "mbag-rate-unsent";
const RATER = "mbag-rate-rater";
const RETRY_MS = 2000;
const LABELS = { left: "Left", right: "Right", draw: "Draw", na: "N/A" };

const el = (id) => document.getElementById(id);
const params = new URLSearchParams(location.search);
let rater = params.get("rater") || localStorage.getItem(RATER) || "";
let current = null;
// Answers the server confirmed, for people and tests reading the page.
window.mbagSent = [];

function setState(state, message) {
  document.body.dataset.state = state;
  if (message !== undefined) el("message").textContent = message;
}

// The server's per-run token, sent with every post (a page of another site
// cannot read it). A restarted server has a new one: a 403 fetches it again.
let token = null;

async function sessionToken(fresh) {
  if (token === null || fresh) {
    const r = await fetch("/session");
    token = (await r.json()).token;
  }
  return token;
}

function send(path, value, sessionTokenValue) {
  return fetch(path, {
    method: "POST",
    headers: { "content-type": "application/json", "x-mbag-token": sessionTokenValue },
    body: JSON.stringify(value),
  });
}

async function post(path, value) {
  let response = await send(path, value, await sessionToken(false));
  if (response.status === 403) response = await send(path, value, await sessionToken(true));
  let body = {};
  try { body = await response.json(); } catch (e) { body = { error: `${response.status}` }; }
  return { status: response.status, ok: response.ok, body };
}

// Sends a kept answer, if any. True when the page may go on to the next pair.
async function flushUnsent() {
  const text = localStorage.getItem(UNSENT);
  if (!text) return true;
  const answer = JSON.parse(text);
  setState("sending", "Sending your answer...");
  el("submit").disabled = true;
  let r;
  try {
    r = await post("/answer", answer);
  } catch (e) {
    r = null;
  }
  if (r === null || r.status >= 500) {
    setState("unsent", "The server did not take your answer; it is kept here and sent again in a moment.");
    setTimeout(flushAndNext, RETRY_MS);
    return false;
  }
  el("submit").disabled = false;
  if (r.status === 400 && current && current.comparison === answer.comparison) {
    localStorage.removeItem(UNSENT);
    setState("invalid", r.body.error);
    return false;
  }
  localStorage.removeItem(UNSENT);
  if (r.ok) {
    window.mbagSent.push(answer);
    setState("saved", r.body.stored === "already" ? "Your answer was already saved." : "Saved.");
  } else {
    setState("saved", `Not saved: ${r.body.error}`);
  }
  return true;
}

async function flushAndNext() {
  if (await flushUnsent()) await loadNext();
}

async function loadNext() {
  let r;
  try {
    r = await post("/next", { rater });
  } catch (e) {
    setState("unsent", "The server cannot be reached; trying again in a moment.");
    setTimeout(flushAndNext, RETRY_MS);
    return;
  }
  if (!r.ok) {
    setState("error", r.body.error);
    return;
  }
  if (r.body.done) {
    current = null;
    setState("done");
    return;
  }
  const keep = document.body.dataset.state === "saved" ? el("message").textContent : "";
  current = r.body;
  el("pending").textContent = `${current.pending} pair(s) pending`;
  show(current);
  setState("ready", keep);
}

function show(pair) {
  document.body.dataset.comparison = String(pair.comparison);
  for (const side of ["left", "right"]) {
    const frame = el(side);
    if (frame.getAttribute("src") !== pair[side]) frame.setAttribute("src", pair[side]);
  }
  const q = pair.questions;
  const table = el("questions");
  table.replaceChildren();
  const header = document.createElement("tr");
  header.append(document.createElement("th"));
  for (const c of ["left", "draw", "right", "na"]) {
    const th = document.createElement("th");
    th.textContent = LABELS[c];
    header.append(th);
  }
  table.append(header);
  const rows = [{ key: "overall", question: q.overall.question, choices: q.overall.choices }, ...q.factors];
  for (const row of rows) {
    const tr = document.createElement("tr");
    const td = document.createElement("td");
    td.className = "q";
    td.textContent = row.key === "overall" ? `${row.question} (required)` : row.question;
    tr.append(td);
    for (const c of ["left", "draw", "right", "na"]) {
      const cell = document.createElement("td");
      if (row.choices.includes(c)) {
        const input = document.createElement("input");
        input.type = "radio";
        input.name = row.key;
        input.value = c;
        input.setAttribute("aria-label", `${row.key}: ${LABELS[c]}`);
        cell.append(input);
      }
      tr.append(cell);
    }
    table.append(tr);
  }
  el("min").textContent = String(q.min_justification);
  el("justification").value = "";
  count();
  el("submit").disabled = false;
  fit();
}

function characters(text) {
  return [...text.trim()].length;
}

function count() {
  const n = characters(el("justification").value);
  el("count").textContent = String(n);
  el("count").className = current && n < current.questions.min_justification ? "short" : "";
}

function collect() {
  const pick = (name) => {
    const input = document.querySelector(`input[name="${name}"]:checked`);
    return input ? input.value : null;
  };
  const answer = { comparison: current.comparison, rater, overall: pick("overall") };
  for (const f of current.questions.factors) answer[f.key] = pick(f.key);
  answer.justification = el("justification").value;
  const missing = Object.keys(answer).filter((k) => answer[k] === null);
  if (missing.length > 0) return { error: `Answer every question (${missing.join(", ")}).` };
  const min = current.questions.min_justification;
  if (characters(answer.justification) < min) {
    return { error: `The justification needs at least ${min} characters.` };
  }
  return { answer };
}

el("form").addEventListener("submit", (e) => {
  e.preventDefault();
  if (!current || el("submit").disabled) return;
  const { answer, error } = collect();
  if (error) {
    setState("invalid", error);
    return;
  }
  localStorage.setItem(UNSENT, JSON.stringify(answer));
  flushAndNext();
});
el("justification").addEventListener("input", count);

// Each viewer page is 1080x660; scale it to half the window.
function fit() {
  for (const side of ["left", "right"]) {
    const frame = el(side);
    const width = frame.parentElement.parentElement.clientWidth || 500;
    const scale = Math.min(1, width / 1080);
    frame.style.transform = `scale(${scale})`;
    frame.parentElement.style.height = `${Math.ceil(660 * scale)}px`;
  }
}
window.addEventListener("resize", fit);

function start() {
  el("rater").textContent = rater;
  localStorage.setItem(RATER, rater);
  flushAndNext();
}

if (/^[A-Za-z0-9._@-]{1,64}$/.test(rater)) {
  start();
} else {
  setState("rater");
  el("raterSet").addEventListener("click", () => {
    const id = el("raterInput").value.trim();
    if (!/^[A-Za-z0-9._@-]{1,64}$/.test(id)) {
      el("raterMessage").textContent = "Use 1 to 64 letters, digits or ._@- characters.";
      return;
    }
    rater = id;
    start();
  });
}
