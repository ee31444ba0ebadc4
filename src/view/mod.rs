//! `mbag view`: episodes in the browser (issue 23, item 1).
//!
//! - [`scene`]: a recording replayed into what the page draws ([`scene::Scene`]:
//!   size, goal, start, and per step the changed cells, positions, chat, goal %).
//! - [`server`]: the local web server (loopback by default): the page and its
//!   hand-written WebGL script embedded in the binary, `scene.json`, and a
//!   WebSocket (`/live`) pushing frames as a live episode grows.
//! - [`tail`]: following a recording while the daemon writes it (`mbag view
//!   --live`): each completed step line is replayed and pushed, so any `play`,
//!   `record` or `watch` can be watched from another terminal.

pub mod scene;
pub mod server;
pub mod tail;
