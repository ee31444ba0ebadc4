// mbag's episode viewer: draws a Scene (src/view/scene.rs) with WebGL, one
// shaded cube per block, players as tall boxes, the goal as translucent cubes.
// No libraries: the page must work with no internet, served by mbag alone.
//
// URL parameters: step=N (start at step N), camera=top|orbit, goal=1 (overlay
// on), play=1, bare=1 (the canvas alone at the page's corner, for screenshots). The top-down camera is orthographic with each (x, z) column in
// a square of the canvas, so tests can check a block's colour at a known pixel
// (mbag view's tests; `cellPixel` below is the mapping).
"use strict";

const COLOURS = {
  1: [0.25, 0.25, 0.25], // bedrock
  2: [0.47, 0.33, 0.2], // dirt
  3: [0.5, 0.5, 0.5], // cobblestone
  4: [0.75, 0.9, 0.95], // glass
  5: [0.4, 0.28, 0.15], // log
  6: [0.75, 0.6, 0.35], // planks
  7: [0.6, 0.6, 0.6], // stone
  8: [0.45, 0.45, 0.5], // stonebrick
  9: [0.95, 0.95, 0.95], // wool
};
const PLAYER_COLOURS = [[0.9, 0.2, 0.2], [0.2, 0.4, 0.95], [0.2, 0.8, 0.3]];

const params = new URLSearchParams(location.search);
const canvas = document.getElementById("world");
const gl = canvas.getContext("webgl", { preserveDrawingBuffer: true, antialias: false });
const ui = {
  play: document.getElementById("play"),
  speed: document.getElementById("speed"),
  step: document.getElementById("step"),
  stepLabel: document.getElementById("stepLabel"),
  goal: document.getElementById("goal"),
  camera: document.getElementById("camera"),
  status: document.getElementById("status"),
  title: document.getElementById("title"),
  pct: document.getElementById("pct"),
  legend: document.getElementById("legend"),
  chat: document.getElementById("chat"),
  belief: document.getElementById("belief"),
  plans: document.getElementById("plans"),
  explain: document.getElementById("explain"),
};
const TYPE_NAMES = ["noop", "place", "break", "move +x", "move -x", "move +y", "move -y", "move +z", "move -z", "give"];

let scene = null;
let blocks = null; // block ids at `shown`
let shown = 0; // steps applied to `blocks`
let playing = false;
let yaw = 0.7, pitch = 0.6, zoom = 1.0;

// ---- WebGL: one program, per-vertex position/normal/colour, a uniform alpha.
const VS = `
attribute vec3 p; attribute vec3 n; attribute vec3 c;
uniform mat4 m; varying vec3 col;
void main() {
  gl_Position = m * vec4(p, 1.0);
  float light = 0.55 + 0.45 * max(dot(n, normalize(vec3(0.4, 1.0, 0.3))), 0.0);
  col = c * light;
}`;
const FS = `
precision mediump float; varying vec3 col; uniform float a;
void main() { gl_FragColor = vec4(col, a); }`;

function shader(type, text) {
  const s = gl.createShader(type);
  gl.shaderSource(s, text);
  gl.compileShader(s);
  if (!gl.getShaderParameter(s, gl.COMPILE_STATUS)) throw new Error(gl.getShaderInfoLog(s));
  return s;
}
const program = gl.createProgram();
gl.attachShader(program, shader(gl.VERTEX_SHADER, VS));
gl.attachShader(program, shader(gl.FRAGMENT_SHADER, FS));
gl.linkProgram(program);
gl.useProgram(program);
const loc = {
  p: gl.getAttribLocation(program, "p"),
  n: gl.getAttribLocation(program, "n"),
  c: gl.getAttribLocation(program, "c"),
  m: gl.getUniformLocation(program, "m"),
  a: gl.getUniformLocation(program, "a"),
};
const buffer = gl.createBuffer();

// The six faces of a unit cube: normal and four corners.
const FACES = [
  [[1, 0, 0], [[1, 0, 0], [1, 1, 0], [1, 1, 1], [1, 0, 1]]],
  [[-1, 0, 0], [[0, 0, 1], [0, 1, 1], [0, 1, 0], [0, 0, 0]]],
  [[0, 1, 0], [[0, 1, 0], [0, 1, 1], [1, 1, 1], [1, 1, 0]]],
  [[0, -1, 0], [[0, 0, 0], [1, 0, 0], [1, 0, 1], [0, 0, 1]]],
  [[0, 0, 1], [[0, 0, 1], [1, 0, 1], [1, 1, 1], [0, 1, 1]]],
  [[0, 0, -1], [[1, 0, 0], [0, 0, 0], [0, 1, 0], [1, 1, 0]]],
];

function pushBox(out, x, y, z, sx, sy, sz, colour, visible) {
  for (let f = 0; f < 6; f++) {
    if (visible && !visible(f)) continue;
    const [n, corners] = FACES[f];
    const v = corners.map(([a, b, c]) => [x + a * sx, y + b * sy, z + c * sz]);
    for (const i of [0, 1, 2, 0, 2, 3]) out.push(...v[i], ...n, ...colour);
  }
}

function index(x, y, z) {
  const [, h, d] = scene.size;
  return (x * h + y) * d + z;
}

function solid(x, y, z) {
  const [w, h, d] = scene.size;
  if (x < 0 || y < 0 || z < 0 || x >= w || y >= h || z >= d) return false;
  const b = blocks[index(x, y, z)];
  return b !== 0 && b !== 4; // glass lets the faces behind it show
}

function worldVertices() {
  const out = [];
  const [w, h, d] = scene.size;
  for (let x = 0; x < w; x++)
    for (let y = 0; y < h; y++)
      for (let z = 0; z < d; z++) {
        const b = blocks[index(x, y, z)];
        if (b === 0) continue;
        const n = [[1, 0, 0], [-1, 0, 0], [0, 1, 0], [0, -1, 0], [0, 0, 1], [0, 0, -1]];
        pushBox(out, x, y, z, 1, 1, 1, COLOURS[b] || [1, 0, 1],
          (f) => !solid(x + n[f][0], y + n[f][1], z + n[f][2]));
      }
  const pos = shown === 0 ? scene.initial_pos : scene.frames[shown - 1].pos;
  pos.forEach(([px, py, pz], i) => {
    pushBox(out, px - 0.3, py, pz - 0.3, 0.6, 1.8, 0.6, PLAYER_COLOURS[i % 3]);
  });
  return out;
}

function goalVertices() {
  const out = [];
  const [w, h, d] = scene.size;
  for (let x = 0; x < w; x++)
    for (let y = 0; y < h; y++)
      for (let z = 0; z < d; z++) {
        const g = scene.goal[index(x, y, z)];
        if (g === 0 || g === blocks[index(x, y, z)]) continue;
        pushBox(out, x + 0.1, y + 0.1, z + 0.1, 0.8, 0.8, 0.8, COLOURS[g] || [1, 0, 1]);
      }
  return out;
}

// ---- Overlays from the recorded explanations: every player that gave one
// (an assistant's plans and a human model's predicted moves side by side).
function explanations() {
  if (shown === 0) return [];
  const list = scene.frames[shown - 1].explain || [];
  const out = [];
  for (let p = 0; p < list.length; p++) if (list[p]) out.push([p, list[p]]);
  return out;
}

function bytes(b64) {
  const text = atob(b64);
  const out = new Uint8Array(text.length);
  for (let i = 0; i < text.length; i++) out[i] = text.charCodeAt(i);
  return out;
}

// Blue (unsure) to red (sure).
function heat(c) { return [c, 0.25, 1 - c]; }

// The goal belief of the first player that has one: two beliefs drawn in the
// same cells could not be told apart.
function beliefVertices() {
  const e = explanations().find(([, x]) => x.goal && x.goal_confidence);
  if (!e) return [];
  const goal = bytes(e[1].goal), conf = bytes(e[1].goal_confidence);
  const out = [];
  const [w, h, d] = scene.size;
  for (let x = 0; x < w; x++)
    for (let y = 0; y < h; y++)
      for (let z = 0; z < d; z++) {
        const i = index(x, y, z);
        const c = conf[i] / 255;
        if (goal[i] === 0 || goal[i] === blocks[i] || c < 0.3) continue;
        pushBox(out, x + 0.2, y + 0.2, z + 0.2, 0.6, 0.6, 0.6, heat(c));
      }
  return out;
}

function planVertices() {
  const out = [];
  for (const [, x] of explanations()) {
    for (const [type, bx, by, bz] of x.top || []) {
      if (type !== 1 && type !== 2) continue;
      pushBox(out, bx + 0.3, by + 0.3, bz + 0.3, 0.4, 0.4, 0.4, type === 1 ? [0.1, 0.9, 0.2] : [0.95, 0.1, 0.1]);
    }
    const next = x.other_next;
    if (next && (next[0] === 1 || next[0] === 2)) {
      pushBox(out, next[1] + 0.35, next[2] + 0.35, next[3] + 0.35, 0.3, 0.3, 0.3, [0.75, 0.2, 0.9]);
    }
  }
  return out;
}

function showExplanation() {
  const all = explanations();
  ui.explain.replaceChildren();
  if (all.length === 0) { ui.explain.textContent = "(none recorded at this step)"; return; }
  const name = (a) => {
    const block = scene.block_names[a[4]] || a[4];
    return a[0] === 1 ? `place ${block} at (${a[1]}, ${a[2]}, ${a[3]})`
      : a[0] === 2 ? `break (${a[1]}, ${a[2]}, ${a[3]})` : TYPE_NAMES[a[0]] || `type ${a[0]}`;
  };
  for (const [p, x] of all) {
    const head = document.createElement("div");
    // A sampling agent (no visits) reports its policy's likeliest moves.
    const searched = (x.top || []).some((a) => a[5] >= 0);
    head.textContent = searched || !(x.top || []).length ? `player ${p} weighed:` : `player ${p} likely moves:`;
    ui.explain.append(head);
    for (const a of x.top || []) {
      const row = document.createElement("div");
      const visits = a[5] >= 0 ? `${a[5]} visits, ` : "";
      row.textContent = `${name(a)}: ${visits}p ${(a[6] / 1000).toFixed(2)}`;
      ui.explain.append(row);
    }
    if (x.other_next) {
      const row = document.createElement("div");
      row.textContent = `expects the other player to ${name(x.other_next)}`;
      ui.explain.append(row);
    }
  }
}

// ---- Cameras (column-major 4x4 matrices).
function multiply(a, b) {
  const o = new Float32Array(16);
  for (let i = 0; i < 4; i++)
    for (let j = 0; j < 4; j++) {
      let s = 0;
      for (let k = 0; k < 4; k++) s += a[k * 4 + j] * b[i * 4 + k];
      o[i * 4 + j] = s;
    }
  return o;
}

function topDown() {
  // x to the right, z downwards, y towards the viewer; each column a square.
  const [w, h, d] = scene.size;
  const side = Math.max(w, d);
  return new Float32Array([
    2 / side, 0, 0, 0,
    0, 0, -1 / (h + 1), 0,
    0, -2 / side, 0, 0,
    -1, 1, 0.5, 1,
  ]);
}

function orbit() {
  const [w, h, d] = scene.size;
  const cx = w / 2, cy = h / 3, cz = d / 2;
  const r = Math.max(w, h, d) * 1.9 / zoom;
  const eye = [cx + r * Math.cos(pitch) * Math.sin(yaw), cy + r * Math.sin(pitch), cz + r * Math.cos(pitch) * Math.cos(yaw)];
  const f = norm([cx - eye[0], cy - eye[1], cz - eye[2]]);
  const s = norm(cross(f, [0, 1, 0]));
  const u = cross(s, f);
  const view = new Float32Array([
    s[0], u[0], -f[0], 0, s[1], u[1], -f[1], 0, s[2], u[2], -f[2], 0,
    -dot(s, eye), -dot(u, eye), dot(f, eye), 1,
  ]);
  const near = 0.5, far = r * 4, t = 1 / Math.tan(0.45);
  const aspect = canvas.width / canvas.height;
  const proj = new Float32Array([
    t / aspect, 0, 0, 0, 0, t, 0, 0, 0, 0, (far + near) / (near - far), -1,
    0, 0, (2 * far * near) / (near - far), 0,
  ]);
  return multiply(proj, view);
}
const dot = (a, b) => a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
const cross = (a, b) => [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]];
const norm = (a) => { const l = Math.hypot(...a); return a.map((v) => v / l); };

// The canvas pixel at the centre of column (x, z) under the top-down camera.
function cellPixel(x, z) {
  const [w, , d] = scene.size;
  const side = Math.max(w, d);
  return [((x + 0.5) / side) * canvas.width, ((z + 0.5) / side) * canvas.height];
}
window.mbagCellPixel = cellPixel;

function draw() {
  gl.viewport(0, 0, canvas.width, canvas.height);
  gl.clearColor(0.53, 0.71, 0.88, 1);
  gl.clear(gl.COLOR_BUFFER_BIT | gl.DEPTH_BUFFER_BIT);
  gl.enable(gl.DEPTH_TEST);
  const matrix = ui.camera.value === "top" ? topDown() : orbit();
  gl.uniformMatrix4fv(loc.m, false, matrix);
  const layers = [[worldVertices(), 1.0]];
  if (ui.plans.checked) layers.push([planVertices(), 1.0]);
  if (ui.goal.checked) layers.push([goalVertices(), 0.35]);
  if (ui.belief.checked) layers.push([beliefVertices(), 0.4]);
  for (const [verts, alpha] of layers) {
    if (alpha < 1) { gl.enable(gl.BLEND); gl.blendFunc(gl.SRC_ALPHA, gl.ONE_MINUS_SRC_ALPHA); gl.depthMask(false); }
    gl.uniform1f(loc.a, alpha);
    gl.bindBuffer(gl.ARRAY_BUFFER, buffer);
    gl.bufferData(gl.ARRAY_BUFFER, new Float32Array(verts), gl.DYNAMIC_DRAW);
    const stride = 9 * 4;
    gl.enableVertexAttribArray(loc.p); gl.vertexAttribPointer(loc.p, 3, gl.FLOAT, false, stride, 0);
    gl.enableVertexAttribArray(loc.n); gl.vertexAttribPointer(loc.n, 3, gl.FLOAT, false, stride, 12);
    gl.enableVertexAttribArray(loc.c); gl.vertexAttribPointer(loc.c, 3, gl.FLOAT, false, stride, 24);
    gl.drawArrays(gl.TRIANGLES, 0, verts.length / 9);
    gl.disable(gl.BLEND); gl.depthMask(true);
  }
  document.body.dataset.drawnStep = String(shown);
}

// ---- Stepping: apply frames forwards, undo them backwards.
function seek(step) {
  step = Math.max(0, Math.min(step, scene.frames.length));
  while (shown < step) {
    for (const [x, y, z, , after] of scene.frames[shown].changes) blocks[index(x, y, z)] = after;
    shown++;
  }
  while (shown > step) {
    shown--;
    for (const [x, y, z, before] of scene.frames[shown].changes) blocks[index(x, y, z)] = before;
  }
  ui.step.max = String(scene.frames.length);
  ui.step.value = String(shown);
  ui.stepLabel.textContent = `step ${shown} / ${scene.frames.length}`;
  const pct = shown === 0 ? null : scene.frames[shown - 1].goal_percentage;
  ui.pct.textContent = pct === null ? "" : `goal ${(100 * pct).toFixed(1)}% built`;
  showChat();
  showExplanation();
  draw();
}

function showChat() {
  ui.chat.replaceChildren();
  scene.frames.slice(0, shown).forEach((f, t) => {
    for (const m of f.chat) {
      const div = document.createElement("div");
      div.className = m.intent;
      const who = (scene.players[m.speaker] || {}).role || `player ${m.speaker}`;
      div.textContent = `${t + 1} ${who}: ${m.text} [${m.intent}]`;
      ui.chat.prepend(div);
    }
  });
}

function setup() {
  blocks = Uint8Array.from(scene.initial);
  shown = 0;
  ui.title.textContent = scene.episode_id;
  ui.legend.replaceChildren();
  scene.block_names.forEach((name, id) => {
    if (!COLOURS[id]) return;
    const row = document.createElement("div");
    const swatch = document.createElement("span");
    swatch.style.background = `rgb(${COLOURS[id].map((c) => Math.round(c * 255)).join(",")})`;
    row.append(swatch, name);
    ui.legend.append(row);
  });
  scene.players.forEach((p, i) => {
    const row = document.createElement("div");
    const swatch = document.createElement("span");
    swatch.style.background = `rgb(${PLAYER_COLOURS[i % 3].map((c) => Math.round(c * 255)).join(",")})`;
    row.append(swatch, `player ${i}: ${p.role} (${p.controller})`);
    ui.legend.append(row);
  });
}

// ---- Controls.
ui.step.addEventListener("input", () => seek(Number(ui.step.value)));
ui.goal.addEventListener("change", draw);
ui.belief.addEventListener("change", draw);
ui.plans.addEventListener("change", draw);
ui.camera.addEventListener("change", draw);
ui.play.addEventListener("click", () => {
  playing = !playing;
  ui.play.textContent = playing ? "Pause" : "Play";
  if (playing && shown >= scene.frames.length) seek(0);
});
document.addEventListener("keydown", (e) => {
  if (e.key === " ") { ui.play.click(); e.preventDefault(); }
  if (e.key === "ArrowRight") seek(shown + 1);
  if (e.key === "ArrowLeft") seek(shown - 1);
});
let dragging = null;
canvas.addEventListener("mousedown", (e) => { dragging = [e.clientX, e.clientY]; });
window.addEventListener("mouseup", () => { dragging = null; });
window.addEventListener("mousemove", (e) => {
  if (!dragging) return;
  yaw -= (e.clientX - dragging[0]) * 0.01;
  pitch = Math.max(-1.4, Math.min(1.4, pitch + (e.clientY - dragging[1]) * 0.01));
  dragging = [e.clientX, e.clientY];
  draw();
});
canvas.addEventListener("wheel", (e) => { zoom *= e.deltaY < 0 ? 1.1 : 0.9; draw(); e.preventDefault(); });

let last = performance.now();
function tick(now) {
  if (playing && scene) {
    const stepsPerSecond = 1.25 * Number(ui.speed.value); // 0.8 s per step, as the study
    const due = Math.floor(((now - last) / 1000) * stepsPerSecond);
    if (due > 0) {
      last = now;
      if (shown >= scene.frames.length && !live) { playing = false; ui.play.textContent = "Play"; }
      else seek(shown + due);
    }
  } else last = now;
  requestAnimationFrame(tick);
}

// ---- Live: frames pushed over a WebSocket as the episode runs.
let live = false;
function follow() {
  const ws = new WebSocket(`ws://${location.host}/live`);
  ws.onmessage = (e) => {
    const message = JSON.parse(e.data);
    if (message.scene) { scene = message.scene; setup(); seek(scene.frames.length); return; }
    if (message.frame) {
      const atEnd = shown === scene.frames.length;
      scene.frames.push(message.frame);
      if (atEnd) seek(scene.frames.length); else ui.step.max = String(scene.frames.length);
    }
  };
  ws.onclose = () => { ui.status.textContent = "live: disconnected"; };
  ws.onopen = () => { ui.status.textContent = "live"; };
}

if (params.get("bare") === "1") {
  document.getElementById("bar").style.display = "none";
  document.getElementById("side").style.display = "none";
}

fetch("scene.json").then((r) => r.json()).then((s) => {
  scene = s;
  live = Boolean(s.live);
  ui.goal.checked = params.get("goal") === "1";
  ui.belief.checked = params.get("belief") === "1";
  if (params.get("camera")) ui.camera.value = params.get("camera");
  setup();
  seek(Number(params.get("step") || 0));
  if (params.get("play") === "1") ui.play.click();
  if (live) follow();
  requestAnimationFrame(tick);
}).catch((e) => { ui.status.textContent = `could not load the scene: ${e}`; });
