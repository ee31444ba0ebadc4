"use strict";
// mbag study survey's page. Everything it shows comes from /survey.json;
// answers go to /answer with the server's per-run token from /session (a page
// of another site can send a request here but cannot read either reply).
// URL parameters may fill one form (for entering answers given on paper):
// ?session=N&ITEM=POINT...&comment=TEXT. They never send it: a person checks
// the filled form and presses Save, so a link from elsewhere cannot answer.
const params = new URLSearchParams(location.search);
let token = null;
const statusEl = document.getElementById("status");

function show(text, kind) {
  statusEl.textContent = text;
  statusEl.className = kind || "";
}

function form(data, s) {
  const f = document.createElement("form");
  f.id = "session-" + s.index;
  f.dataset.session = s.index;
  const fs = document.createElement("fieldset");
  const lg = document.createElement("legend");
  lg.textContent = s.label;
  fs.appendChild(lg);
  for (const item of data.items) {
    const div = document.createElement("div");
    div.className = "item";
    const p = document.createElement("p");
    p.textContent = item.text;
    div.appendChild(p);
    const row = document.createElement("div");
    row.className = "scale";
    const low = document.createElement("span");
    low.className = "ends";
    low.textContent = "disagree";
    row.appendChild(low);
    for (let v = 1; v <= data.scale; v++) {
      const l = document.createElement("label");
      const r = document.createElement("input");
      r.type = "radio";
      r.name = item.id;
      r.value = v;
      r.required = true;
      if (s.answer && s.answer.scores[item.id] === v) r.checked = true;
      l.appendChild(r);
      l.appendChild(document.createTextNode(String(v)));
      row.appendChild(l);
    }
    const high = document.createElement("span");
    high.className = "ends";
    high.textContent = "agree";
    row.appendChild(high);
    div.appendChild(row);
    fs.appendChild(div);
  }
  const c = document.createElement("textarea");
  c.name = "comment";
  c.placeholder = "Anything else about this assistant?";
  c.value = s.answer ? s.answer.comment : "";
  fs.appendChild(c);
  const b = document.createElement("button");
  b.type = "submit";
  b.textContent = s.answer ? "Save again" : "Save";
  fs.appendChild(b);
  const note = document.createElement("span");
  note.className = "note";
  note.textContent = s.answer ? "  saved" : "";
  fs.appendChild(note);
  f.appendChild(fs);
  f.addEventListener("submit", (e) => {
    e.preventDefault();
    send(data, s, f, b, note);
  });
  return f;
}

async function send(data, s, f, button, note) {
  const scores = {};
  for (const item of data.items) {
    const picked = f.querySelector(`input[name="${item.id}"]:checked`);
    if (!picked) { show(`${s.label}: answer every statement`, "error"); return; }
    scores[item.id] = Number(picked.value);
  }
  const body = { session: s.index, scores, comment: f.querySelector("textarea").value };
  button.disabled = true;
  try {
    if (token === null) token = (await (await fetch("session")).json()).token;
    const r = await fetch("answer", {
      method: "POST",
      headers: { "content-type": "application/json", "x-mbag-token": token },
      body: JSON.stringify(body),
    });
    const reply = await r.json();
    if (!r.ok) throw new Error(reply.error || r.statusText);
    note.textContent = "  saved";
    note.className = "note saved";
    button.textContent = "Save again";
    document.body.dataset.saved = String(s.index);
    show(`Saved your answers about ${s.label}.`, "saved");
  } catch (err) {
    show(`Not saved: ${err.message}`, "error");
  } finally {
    button.disabled = false;
  }
}

function fillFromUrl(data) {
  if (!params.has("session")) return;
  const f = document.getElementById("session-" + params.get("session"));
  if (!f) { show(`no finished game ${params.get("session")} to rate`, "error"); return; }
  for (const item of data.items) {
    const v = params.get(item.id);
    const r = v && f.querySelector(`input[name="${item.id}"][value="${v}"]`);
    if (r) r.checked = true;
  }
  if (params.has("comment")) f.querySelector("textarea").value = params.get("comment");
  f.scrollIntoView();
  show(`${f.querySelector("legend").textContent}: filled from the link; check it and press Save`, "");
}

async function load() {
  try {
    const r = await fetch("survey.json");
    const data = await r.json();
    if (!r.ok) throw new Error(data.error || r.statusText);
    document.getElementById("who").textContent = "participant " + data.participant;
    const list = document.getElementById("sessions");
    if (data.sessions.length === 0) {
      list.textContent = "No finished game to rate yet.";
    }
    for (const s of data.sessions) list.appendChild(form(data, s));
    document.body.dataset.loaded = String(data.sessions.length);
    fillFromUrl(data);
  } catch (err) {
    show(`Cannot load the survey: ${err.message}`, "error");
  }
}
load();
