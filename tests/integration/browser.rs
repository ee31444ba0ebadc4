//! Headless Chromium for the browser tests (view, rate, study): finding it
//! (they print SKIPPED without it; scripts/setup installs Debian's package)
//! and a small driver over the DevTools protocol, so that a test fills and
//! sends a page's forms through its DOM as a person would.

use std::io::{BufRead, BufReader};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tungstenite::{Message, WebSocket};

/// The first Chromium on the PATH.
pub fn chromium() -> Option<PathBuf> {
    ["chromium", "chromium-browser", "google-chrome"]
        .iter()
        .find_map(|name| {
            let out = Command::new("which").arg(name).output().ok()?;
            out.status
                .success()
                .then(|| PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()))
        })
}

/// Headless Chromium with its DevTools endpoint; killed on drop.
pub struct Browser {
    child: Child,
    /// The browser-wide DevTools WebSocket, as Chromium printed it.
    ws: String,
    _profile: tempfile::TempDir,
}

impl Browser {
    /// Starts the Chromium at `path` with a fresh profile and a blank tab.
    pub fn launch(path: &Path) -> Self {
        Self::launch_with(path, &[])
    }

    /// [`Browser::launch`] with `extra` switches (say, host resolver rules
    /// that play a DNS rebinding).
    pub fn launch_with(path: &Path, extra: &[&str]) -> Self {
        let profile = tempfile::tempdir().unwrap();
        let mut child = Command::new(path)
            .args([
                "--headless=new",
                "--no-sandbox",
                "--remote-debugging-port=0",
                "--disable-gpu",
                "--use-angle=swiftshader",
                "--enable-unsafe-swiftshader",
                "--no-first-run",
                "--window-size=1400,1200",
            ])
            .args(extra)
            .arg(format!("--user-data-dir={}", profile.path().display()))
            .arg("about:blank")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("starting chromium");
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let ws = lines
            .by_ref()
            .map_while(Result::ok)
            .find_map(|l| {
                l.strip_prefix("DevTools listening on ")
                    .map(|u| u.trim().to_owned())
            })
            .expect("chromium prints its DevTools address");
        // Keep reading, so that a chatty browser never blocks on a full pipe.
        std::thread::spawn(move || lines.map_while(Result::ok).for_each(drop));
        Self {
            child,
            ws,
            _profile: profile,
        }
    }

    /// A new tab: made through the browser-wide endpoint, then driven
    /// through its own (`/devtools/page/ID` on the same host).
    pub fn new_page(&self) -> Cdp {
        let mut browser = Cdp::connect(&self.ws);
        let target = browser.call("Target.createTarget", json!({ "url": "about:blank" }));
        let id = target["targetId"].as_str().unwrap();
        let host = self
            .ws
            .trim_start_matches("ws://")
            .split('/')
            .next()
            .unwrap();
        Cdp::connect(&format!("ws://{host}/devtools/page/{id}"))
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One DevTools protocol connection (a browser's or a page's).
pub struct Cdp {
    ws: WebSocket<TcpStream>,
    next: u64,
}

impl Cdp {
    fn connect(url: &str) -> Self {
        let host = url.trim_start_matches("ws://").split('/').next().unwrap();
        let stream = TcpStream::connect(host).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(60)))
            .unwrap();
        let (ws, _) = tungstenite::client(url, stream).expect("DevTools handshake");
        Self { ws, next: 1 }
    }

    /// Sends a command and returns its result (events in between are skipped).
    pub fn call(&mut self, method: &str, params: Value) -> Value {
        match self.try_call(method, params) {
            Ok(result) => result,
            Err(error) => panic!("{method}: {error}"),
        }
    }

    /// [`Cdp::call`], with DevTools' error reply as an `Err`.
    fn try_call(&mut self, method: &str, params: Value) -> Result<Value, Value> {
        let id = self.next;
        self.next += 1;
        let message = json!({ "id": id, "method": method, "params": params });
        self.ws.send(Message::text(message.to_string())).unwrap();
        loop {
            let reply = self.ws.read().expect("a DevTools reply");
            let Ok(text) = reply.to_text() else { continue };
            let value: Value = serde_json::from_str(text).unwrap();
            if value["id"] == json!(id) {
                return match value.get("error") {
                    Some(error) => Err(error.clone()),
                    None => Ok(value["result"].clone()),
                };
            }
        }
    }

    /// Loads `url` in the page (wait for what it shows with [`Cdp::wait_for`]).
    pub fn navigate(&mut self, url: &str) {
        self.call("Page.navigate", json!({ "url": url }));
    }

    /// The value of a JavaScript expression in the page.
    pub fn eval(&mut self, expression: &str) -> Value {
        let result = self.call(
            "Runtime.evaluate",
            json!({ "expression": expression, "returnByValue": true, "awaitPromise": true }),
        );
        assert!(
            result.get("exceptionDetails").is_none(),
            "{expression}: {result}"
        );
        result["result"]["value"].clone()
    }

    /// Clicks the element `selector` finds; fails if there is none.
    pub fn click(&mut self, selector: &str) {
        let clicked = self.eval(&format!(
            "(() => {{ const e = document.querySelector({}); if (!e) return false; \
             e.click(); return true; }})()",
            json!(selector)
        ));
        assert_eq!(clicked, json!(true), "nothing to click at {selector}");
    }

    /// Types `text` into the element `selector` finds, as keyboard input
    /// into the focused element (so the page sees the events a person's
    /// typing makes).
    pub fn type_into(&mut self, selector: &str, text: &str) {
        let focused = self.eval(&format!(
            "(() => {{ const e = document.querySelector({}); if (!e) return false; \
             e.focus(); return document.activeElement === e; }})()",
            json!(selector)
        ));
        assert_eq!(focused, json!(true), "nothing to type into at {selector}");
        self.call("Input.insertText", json!({ "text": text }));
    }

    /// Waits until `expression` is true in the page.
    pub fn wait_for(&mut self, expression: &str) {
        let deadline = Instant::now() + Duration::from_secs(45);
        loop {
            // While a page loads there is no body yet: not ready, not an error.
            let guarded = format!(
                "(() => {{ try {{ return !!({expression}); }} catch (e) {{ return false; }} }})()"
            );
            // A page navigating (after a form is sent) answers with an error
            // ("Inspected target navigated or closed"): not ready yet either.
            let ready = self.try_call(
                "Runtime.evaluate",
                json!({ "expression": guarded, "returnByValue": true, "awaitPromise": true }),
            );
            if matches!(ready, Ok(ref r) if r["result"]["value"] == json!(true)) {
                return;
            }
            if Instant::now() > deadline {
                let state = self.eval(
                    "document.body ? JSON.stringify(document.body.dataset) + ' ' + \
                     document.body.innerText.slice(0, 600) : 'no body'",
                );
                panic!("waited 45 s for {expression}; page: {state}");
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}
