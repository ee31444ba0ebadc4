//! Recipe A of `../shared/malmo/TESTING.md`: the real MalmoPython AgentHost
//! (`.deps/malmopython`, made by `scripts/setup`; `MBAG_MALMOPYTHON` names another
//! interpreter) runs 1- and 2-player missions through `tests/peers/malmopython_mission.py`
//! against `mbag malmo emulator` in another process (MalmoPython holds the GIL
//! while it blocks). Then our agent side runs the same scenario against the same
//! emulator, and the two agents' control-plane transcripts, recorded by the
//! emulator (`--transcript`), must agree after normalisation (§2A step 6).
//!
//! Without the interpreter the tests print `SKIPPED: ...` and return.

use std::fmt::Write as _;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use malmo_bridge::agent::{
    AgentMission, ClientAddr, MissionEvent, Timeouts, reserve_clients, start_role,
};
use malmo_bridge::emulator::{TranscriptChannel, TranscriptEntry};
use malmo_bridge::mission::{MissionDocument, Role};
use malmo_bridge::mission_ended::MissionEndedStatus;
use malmo_bridge::mission_init::{
    AgentPorts, ClientAgentConnection, ExperimentId, MissionInit, MissionInitForm, ServerConnection,
};
use serde_json::Value;

const EXAMPLES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/malmo/examples");
const DRIVER: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/peers/malmopython_mission.py"
);
const PYTHON_EXPERIMENT: &str = "exp-malmopython";
const RUST_EXPERIMENT: &str = "exp-mbag";
/// No step of a scenario may take longer (a hung peer fails the test instead).
const LIMIT: Duration = Duration::from_secs(90);

/// The interpreter with MalmoPython, or `None` after saying why the test skips.
fn malmopython(test: &str) -> Option<PathBuf> {
    let python = std::env::var_os("MBAG_MALMOPYTHON").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join(".deps/malmopython/bin/python"),
        PathBuf::from,
    );
    let skip = |why: String| {
        eprintln!(
            "SKIPPED: {test}: {why} (scripts/setup makes .deps/malmopython with \
             CPython 3.8-3.10 and mbag-malmo 0.38.0.0; MBAG_MALMOPYTHON names another)"
        );
        None
    };
    if !python.exists() {
        return skip(format!(
            "no MalmoPython interpreter at {}",
            python.display()
        ));
    }
    match Command::new(&python)
        .args(["-c", "import malmo, MalmoPython"])
        .output()
    {
        Ok(out) if out.status.success() => Some(python),
        Ok(out) => skip(format!(
            "{} cannot import MalmoPython: {}",
            python.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        )),
        Err(e) => skip(format!("cannot run {}: {e}", python.display())),
    }
}

/// `mbag malmo emulator` on free ports, recording a transcript; killed on drop.
struct EmulatorProcess {
    child: Child,
    dir: tempfile::TempDir,
    /// Each client's (control, commands) ports.
    ports: Vec<(u16, u16)>,
}

impl EmulatorProcess {
    fn start(clients: usize) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let log = std::fs::File::create(dir.path().join("emulator.log")).unwrap();
        let mut child = Command::new(env!("CARGO_BIN_EXE_mbag"))
            .args([
                "-v",
                "malmo",
                "emulator",
                "--port",
                "0",
                "--until-stdin-closes",
            ])
            .args(["--clients", &clients.to_string(), "--world-delay-ms", "200"])
            .arg("--transcript")
            .arg(dir.path().join("transcript.jsonl"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(log)
            .spawn()
            .expect("running mbag malmo emulator");
        // The ready line, read on a thread so that a silent emulator cannot hang us.
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let _ = BufReader::new(stdout).read_line(&mut line);
            let _ = tx.send(line);
        });
        let mut emulator = Self {
            child,
            dir,
            ports: Vec::new(),
        };
        let ready = rx.recv_timeout(Duration::from_secs(30)).unwrap_or_default();
        let (_, list) = ready.trim().split_once("ports ").unwrap_or_else(|| {
            panic!(
                "no ready line from the emulator: {ready:?}\n{}",
                emulator.log()
            )
        });
        emulator.ports = list
            .split(' ')
            .map(|pair| {
                let (control, commands) = pair.split_once('/').unwrap();
                (control.parse().unwrap(), commands.parse().unwrap())
            })
            .collect();
        assert_eq!(emulator.ports.len(), clients, "{ready}");
        emulator
    }

    fn pool(&self) -> Vec<ClientAddr> {
        self.ports
            .iter()
            .map(|&(control, _)| ClientAddr::new("127.0.0.1", control))
            .collect()
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("emulator.log")).unwrap_or_default()
    }

    /// Everything recorded so far (the emulator flushes every entry).
    fn transcript(&self) -> Vec<TranscriptEntry> {
        let text = std::fs::read_to_string(self.dir.path().join("transcript.jsonl")).unwrap();
        text.lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect()
    }
}

impl Drop for EmulatorProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs a command with its output in files (no pipe can fill up), killed after
/// `limit`; returns its stdout, panicking with its stderr if it failed.
fn run_bounded(mut command: Command, dir: &Path, limit: Duration) -> String {
    let (out, err) = (dir.join("peer.out"), dir.join("peer.err"));
    let mut child = command
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(std::fs::File::create(&err).unwrap())
        .spawn()
        .expect("starting the peer");
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let stderr = std::fs::read_to_string(&err).unwrap_or_default();
    match status {
        Some(s) if s.success() => std::fs::read_to_string(&out).unwrap(),
        Some(s) => panic!("the peer failed ({s}):\n{stderr}"),
        None => panic!("the peer ran past {limit:?} and was killed:\n{stderr}"),
    }
}

/// What the driver script sends each role once the mission has begun (MBAG's
/// set-up commands, a move and a look); keep in step with the script.
fn commands(role: usize) -> Vec<String> {
    vec![
        "jump 1".into(),
        "jump 0".into(),
        format!("tp {} 2 0.5", role as f64 + 0.5),
        "setYaw 90".into(),
        "setPitch 30".into(),
        format!("chat hello from role {role}"),
    ]
}

/// How the mod echoes a command in `CommandsSinceLastObservation`: the verb in
/// lower case.
fn echo_of(command: &str) -> String {
    match command.split_once(' ') {
        Some((verb, rest)) => format!("{} {rest}", verb.to_lowercase()),
        None => command.to_lowercase(),
    }
}

/// What one role saw, in the driver script's JSON shape.
#[derive(Debug, Default)]
struct RoleReport {
    observations: usize,
    keys: Vec<String>,
    echoed: Vec<String>,
    position: [Option<f64>; 3],
    yaw: Option<f64>,
}

impl RoleReport {
    fn from_observations(texts: &[String]) -> Self {
        let observations: Vec<Value> = texts
            .iter()
            .map(|t| serde_json::from_str(t).unwrap())
            .collect();
        let last = observations.last().cloned().unwrap_or(Value::Null);
        let mut keys: Vec<String> = last
            .as_object()
            .map(|o| o.keys().cloned().collect())
            .unwrap_or_default();
        keys.sort();
        Self {
            observations: observations.len(),
            keys,
            echoed: observations
                .iter()
                .filter_map(|o| o.get("CommandsSinceLastObservation")?.as_array().cloned())
                .flatten()
                .map(|c| c.as_str().unwrap().to_owned())
                .collect(),
            position: ["XPos", "YPos", "ZPos"].map(|k| last.get(k).and_then(Value::as_f64)),
            yaw: last.get("Yaw").and_then(Value::as_f64),
        }
    }

    fn from_driver(role: &Value) -> Self {
        let strings = |key: &str| -> Vec<String> {
            role[key]
                .as_array()
                .unwrap_or_else(|| panic!("no {key} in {role}"))
                .iter()
                .map(|v| v.as_str().unwrap().to_owned())
                .collect()
        };
        let position = &role["last_position"];
        Self {
            observations: role["observations"].as_u64().unwrap() as usize,
            keys: strings("keys"),
            echoed: strings("echoed_commands"),
            position: [0, 1, 2].map(|i| position[i].as_f64()),
            yaw: role["last_yaw"].as_f64(),
        }
    }

    /// What every agent must have seen after the scenario's commands.
    fn check(&self, who: &str, role: usize) {
        assert!(self.observations >= 5, "{who} role {role}: {self:?}");
        for key in [
            "world",
            "goal",
            "XPos",
            "YPos",
            "ZPos",
            "Yaw",
            "Pitch",
            "Name",
            "inventoriesAvailable",
            "InventorySlot_0_item",
        ] {
            assert!(
                self.keys.iter().any(|k| k == key),
                "{who} role {role}: no {key} in the last observation: {:?}",
                self.keys
            );
        }
        let expected: Vec<String> = commands(role).iter().map(|c| echo_of(c)).collect();
        assert_eq!(self.echoed, expected, "{who} role {role}: echoed commands");
        assert_eq!(
            self.position,
            [Some(role as f64 + 0.5), Some(2.0), Some(0.5)],
            "{who} role {role}: position after tp"
        );
        assert_eq!(self.yaw, Some(90.0), "{who} role {role}: yaw after setYaw");
    }
}

/// The real AgentHost's run, checked on its own report.
fn run_malmopython(
    python: &Path,
    emulator: &EmulatorProcess,
    documents: &[PathBuf],
) -> Vec<RoleReport> {
    let ports: Vec<String> = emulator.ports.iter().map(|p| p.0.to_string()).collect();
    let mut command = Command::new(python);
    command
        .arg(DRIVER)
        .args(["127.0.0.1", &ports.join(","), PYTHON_EXPERIMENT])
        .args(documents);
    let stdout = run_bounded(command, emulator.dir.path(), LIMIT);
    let report: Value = serde_json::from_str(&stdout)
        .unwrap_or_else(|e| panic!("the driver's report is no JSON ({e}): {stdout}"));
    let roles = report["roles"].as_array().unwrap();
    assert_eq!(roles.len(), documents.len(), "{report}");
    roles
        .iter()
        .enumerate()
        .map(|(role, r)| {
            for retry in r["start_retries"].as_array().unwrap() {
                // Role 0's world may still be in creation when a later role starts.
                assert_eq!(retry, "MISSION_SERVER_WARMING_UP", "role {role}: {r}");
            }
            assert_eq!(r["errors"], Value::Array(vec![]), "role {role}: {r}");
            assert_eq!(r["end_errors"], Value::Array(vec![]), "role {role}: {r}");
            let control = r["mission_control"].as_array().unwrap();
            assert!(
                control.iter().any(|m| {
                    let m = m.as_str().unwrap();
                    m.contains("<MissionEnded") && m.contains("<Status>ENDED</Status>")
                }),
                "role {role}: no MissionEnded ENDED in {control:?}"
            );
            let role_report = RoleReport::from_driver(r);
            role_report.check("MalmoPython", role);
            role_report
        })
        .collect()
}

/// Our agent side through the driver script's scenario: reserve, start the roles
/// in order (later roles poll for role 0's server every 0.5 s, as the script
/// retries), wait for every echo, send each role the same commands 10 ms apart,
/// collect observations for a second, quit every role.
async fn run_mbag(pool: Vec<ClientAddr>, xmls: Vec<String>) -> Vec<RoleReport> {
    let timeouts = Timeouts {
        find_server_poll: Duration::from_millis(500),
        begin: Duration::from_secs(30),
        ..Timeouts::default()
    };
    let n = xmls.len();
    let reserved = reserve_clients(&pool, n, RUST_EXPERIMENT, &timeouts)
        .await
        .unwrap();
    let mut missions = Vec::new();
    for (role, xml) in xmls.iter().enumerate() {
        let document = MissionDocument::parse(xml).unwrap();
        let clients = if role == 0 { &reserved } else { &pool };
        // hand_over_mission_init starts at clients[role % n], as the AgentHost does.
        let client = clients[role % clients.len()].clone();
        let init = move |ports: &AgentPorts, server: Option<&ServerConnection>| {
            let connection = ClientAgentConnection {
                client_address: client.host.clone(),
                client_mission_control_port: client.control_port,
                client_commands_port: 0,
                agent_address: "127.0.0.1".into(),
                agent_ports: *ports,
            };
            let experiment = ExperimentId::new(RUST_EXPERIMENT).unwrap();
            MissionInit::new(document, experiment, Role(role as u32), connection)
                .with_server(server.cloned())
                .render(MissionInitForm::Compact)
        };
        let mission = start_role(clients, role, RUST_EXPERIMENT, false, init, timeouts)
            .await
            .unwrap();
        missions.push(mission);
    }
    let begun = missions.into_iter().map(|mut m| {
        tokio::spawn(async move {
            m.wait_until_begun().await.unwrap();
            m
        })
    });
    let mut missions: Vec<AgentMission> = Vec::new();
    for handle in begun.collect::<Vec<_>>() {
        missions.push(handle.await.unwrap());
    }
    for (role, mission) in missions.iter_mut().enumerate() {
        for command in commands(role) {
            mission.send_line(&command).await.unwrap();
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
    let collect_until = tokio::time::Instant::now() + Duration::from_secs(1);
    let collected = missions.into_iter().map(|mut m| {
        tokio::spawn(async move {
            let mut observations = Vec::new();
            while let Ok(event) = tokio::time::timeout_at(collect_until, m.next_event()).await {
                if let MissionEvent::Observation { json, .. } = event.unwrap() {
                    observations.push(json);
                }
            }
            (m, observations)
        })
    });
    let mut reports = Vec::new();
    let mut quitting = Vec::new();
    for handle in collected.collect::<Vec<_>>() {
        let (mut mission, observations) = handle.await.unwrap();
        reports.push(RoleReport::from_observations(&observations));
        // Every role quits at once: the mission ends only when all have.
        quitting.push(tokio::spawn(async move { mission.quit().await }));
    }
    for (role, handle) in quitting.into_iter().enumerate() {
        let status = handle.await.unwrap();
        assert_eq!(status.unwrap(), MissionEndedStatus::Ended, "role {role}");
    }
    reports
}

/// What the emulator must have received from the real AgentHost: a reservation
/// per role on its client, each role's MissionInit on its client, and each
/// role's commands followed by `quit`.
fn check_emulator_side(entries: &[TranscriptEntry], roles: usize) {
    let control: Vec<&TranscriptEntry> = entries
        .iter()
        .filter(|e| e.channel == TranscriptChannel::Control)
        .collect();
    for client in 0..roles {
        let reservation = format!("MALMO_REQUEST_CLIENT:0.38.0:20000:{PYTHON_EXPERIMENT}");
        assert!(
            control.iter().any(|e| e.client == client
                && e.received == reservation
                && e.reply.as_deref() == Some("MALMOOK")),
            "client {client} was not reserved: {control:#?}"
        );
        let inits: Vec<MissionInit> = control
            .iter()
            .filter(|e| e.client == client && e.received.contains("<MissionInit"))
            .map(|e| {
                assert_eq!(e.reply.as_deref(), Some("MALMOOK"), "{e:?}");
                MissionInit::parse(&e.received).unwrap()
            })
            .collect();
        assert_eq!(inits.len(), 1, "client {client}: MissionInits {inits:?}");
        assert_eq!(inits[0].role, Role(client as u32));
        assert_eq!(inits[0].experiment_id.as_str(), PYTHON_EXPERIMENT);
        let received: Vec<&str> = entries
            .iter()
            .filter(|e| e.client == client && e.channel == TranscriptChannel::Commands)
            .map(|e| e.received.as_str())
            .collect();
        let mut expected = commands(client);
        expected.push("quit".into());
        assert_eq!(received, expected, "client {client}: commands received");
    }
    // Role 0 starts first and so never asks for a server; later roles find it.
    for e in &control {
        if e.received.starts_with("MALMO_FIND_SERVER") {
            assert!(roles > 1, "{e:?}");
            let reply = e.reply.as_deref().unwrap_or("");
            assert!(
                reply.starts_with("MALMOS127.0.0.1:")
                    || reply == "MALMONOSERVERYET"
                    || reply == "MALMONOSERVER",
                "{e:?}"
            );
        }
    }
}

/// A transcript as comparable lines: the experiment id and ephemeral ports
/// replaced by names, MissionInits split into one XML token per line without
/// the XML declaration, whitespace-only text or spaces around attribute values
/// (boost's quirks), `MALMO_FIND_SERVER` polls that did not find the server
/// dropped (how many there are depends on how long role 0's world takes), and
/// commands grouped per client after the control exchanges (their interleaving
/// with control exchanges is timing too).
fn normalise(entries: &[TranscriptEntry], experiment: &str, ports: &[(u16, u16)]) -> Vec<String> {
    let port = |text: &str| -> String {
        let Ok(n) = text.trim().parse::<u16>() else {
            return text.to_owned();
        };
        if n == 0 {
            return "0".into();
        }
        for (client, &(control, commands)) in ports.iter().enumerate() {
            if n == control {
                return format!("<client {client} control port>");
            }
            if n == commands {
                return format!("<client {client} commands port>");
            }
        }
        "<port>".into()
    };
    let mut lines = Vec::new();
    for e in entries {
        if e.channel != TranscriptChannel::Control {
            continue;
        }
        let reply = e.reply.as_deref().unwrap_or("(no reply)");
        if e.received.starts_with("MALMO_FIND_SERVER") && !reply.starts_with("MALMOS") {
            continue;
        }
        let received = e.received.replace(experiment, "<experiment>");
        if received.contains("<MissionInit") {
            lines.push(format!("client {} control > MissionInit", e.client));
            lines.extend(
                xml_lines(&received, &port)
                    .into_iter()
                    .map(|l| format!("    {l}")),
            );
        } else {
            lines.push(format!("client {} control > {received}", e.client));
        }
        let reply = match reply
            .strip_prefix("MALMOS")
            .and_then(|s| s.rsplit_once(':'))
        {
            Some((address, p)) => format!("MALMOS{address}:{}", port(p)),
            None => reply.to_owned(),
        };
        lines.push(format!("client {} control < {reply}", e.client));
    }
    let clients = entries.iter().map(|e| e.client + 1).max().unwrap_or(0);
    for client in 0..clients {
        for e in entries {
            if e.client == client && e.channel == TranscriptChannel::Commands {
                lines.push(format!("client {client} commands > {}", e.received));
            }
        }
    }
    lines
}

/// One tag or text per line; see [`normalise`].
fn xml_lines(xml: &str, port: &dyn Fn(&str) -> String) -> Vec<String> {
    let mut rest = xml.trim_start();
    if rest.starts_with("<?xml")
        && let Some(end) = rest.find("?>")
    {
        rest = &rest[end + 2..];
    }
    let mut lines: Vec<String> = Vec::new();
    while !rest.is_empty() {
        if rest.starts_with('<') {
            let end = rest.find('>').map_or(rest.len(), |i| i + 1);
            lines.push(tag_line(&rest[..end], port));
            rest = &rest[end..];
        } else {
            let end = rest.find('<').unwrap_or(rest.len());
            let text = &rest[..end];
            rest = &rest[end..];
            if text.trim().is_empty() {
                continue;
            }
            let is_port = lines
                .last()
                .is_some_and(|tag| tag.starts_with('<') && tag.ends_with("Port>"));
            lines.push(if is_port { port(text) } else { text.to_owned() });
        }
    }
    lines
}

/// A tag with its attribute values trimmed and `port` attributes named.
fn tag_line(tag: &str, port: &dyn Fn(&str) -> String) -> String {
    let mut out = String::new();
    let mut rest = tag;
    while let Some(start) = rest.find("=\"") {
        let name_part = &rest[..start];
        let after = &rest[start + 2..];
        let Some(end) = after.find('"') else { break };
        let value = after[..end].trim();
        let name = name_part.rsplit([' ', '<']).next().unwrap_or("");
        out.push_str(name_part);
        out.push_str("=\"");
        out.push_str(&if name == "port" {
            port(value)
        } else {
            value.to_owned()
        });
        out.push('"');
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    out
}

/// A line diff (longest common subsequence), `-` for MalmoPython's lines and `+`
/// for ours, with two lines of context; empty if equal.
fn diff(ours_name: &str, theirs: &[String], ours: &[String]) -> String {
    let (n, m) = (theirs.len(), ours.len());
    let mut lcs = vec![0u32; (n + 1) * (m + 1)];
    let at = |i: usize, j: usize| i * (m + 1) + j;
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            lcs[at(i, j)] = if theirs[i] == ours[j] {
                lcs[at(i + 1, j + 1)] + 1
            } else {
                lcs[at(i + 1, j)].max(lcs[at(i, j + 1)])
            };
        }
    }
    let mut ops: Vec<(char, &str)> = Vec::new();
    let (mut i, mut j) = (0, 0);
    while i < n || j < m {
        if i < n && j < m && theirs[i] == ours[j] {
            ops.push((' ', &theirs[i]));
            (i, j) = (i + 1, j + 1);
        } else if i < n && (j == m || lcs[at(i + 1, j)] >= lcs[at(i, j + 1)]) {
            ops.push(('-', &theirs[i]));
            i += 1;
        } else {
            ops.push(('+', &ours[j]));
            j += 1;
        }
    }
    if ops.iter().all(|(op, _)| *op == ' ') {
        return String::new();
    }
    let mut out = format!("--- MalmoPython\n+++ {ours_name}\n");
    let near = |k: usize| {
        ops[k.saturating_sub(2)..(k + 3).min(ops.len())]
            .iter()
            .any(|(op, _)| *op != ' ')
    };
    let mut shown = 0;
    let mut gap = false;
    for (k, (op, line)) in ops.iter().enumerate() {
        if !near(k) {
            gap = true;
            continue;
        }
        if gap {
            out.push_str("@@\n");
            gap = false;
        }
        let _ = writeln!(out, "{op} {line}");
        shown += 1;
        if shown == 120 {
            out.push_str("... (diff cut at 120 lines)\n");
            break;
        }
    }
    out
}

/// Both agents through one scenario on one emulator; both must see what the
/// scenario makes them see, and their control-plane transcripts must agree.
fn scenario(test: &str, documents: Vec<PathBuf>) {
    let Some(python) = malmopython(test) else {
        return;
    };
    let roles = documents.len();
    let emulator = EmulatorProcess::start(roles);

    let python_reports = run_malmopython(&python, &emulator, &documents);
    let python_entries = emulator.transcript();
    check_emulator_side(&python_entries, roles);

    // The emulator returns a client to DORMANT just after sending MissionEnded,
    // which the driver may see first; a reservation in between would be refused.
    std::thread::sleep(Duration::from_millis(300));
    let xmls: Vec<String> = documents
        .iter()
        .map(|p| std::fs::read_to_string(p).unwrap())
        .collect();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let ours = runtime
        .block_on(async { tokio::time::timeout(LIMIT, run_mbag(emulator.pool(), xmls)).await })
        .unwrap_or_else(|_| panic!("our agent side ran past {LIMIT:?}\n{}", emulator.log()));
    let all = emulator.transcript();
    let our_entries = &all[python_entries.len()..];

    for (role, (theirs, ours)) in python_reports.iter().zip(&ours).enumerate() {
        ours.check("mbag", role);
        // The same emulator answered the same commands the same way.
        assert_eq!(ours.echoed, theirs.echoed, "role {role}");
        assert_eq!(ours.position, theirs.position, "role {role}");
        assert_eq!(ours.yaw, theirs.yaw, "role {role}");
    }

    let theirs = normalise(&python_entries, PYTHON_EXPERIMENT, &emulator.ports);
    let ours = normalise(our_entries, RUST_EXPERIMENT, &emulator.ports);
    assert!(
        theirs.iter().any(|l| l.contains("MissionInit")),
        "{theirs:#?}"
    );
    let differences = diff("mbag (malmo_bridge::agent)", &theirs, &ours);
    assert!(
        differences.is_empty(),
        "the control-plane transcripts differ beyond normalisation:\n{differences}"
    );
}

#[test]
fn malmopython_and_mbag_run_one_player_alike() {
    let dir = tempfile::tempdir().unwrap();
    let xml = dir.path().join("mission_1p.xml");
    let output = Command::new(env!("CARGO_BIN_EXE_mbag"))
        .args(["malmo", "mission-xml", "--players", "1"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    std::fs::write(&xml, &output.stdout).unwrap();
    scenario("malmopython_and_mbag_run_one_player_alike", vec![xml]);
}

#[test]
fn malmopython_and_mbag_run_assistant_and_human_alike() {
    let stem = "mission_2p_assistant_human_11x10x10";
    scenario(
        "malmopython_and_mbag_run_assistant_and_human_alike",
        (0..2)
            .map(|r| PathBuf::from(format!("{EXAMPLES}/{stem}.role{r}.xml")))
            .collect(),
    );
}

#[test]
fn normalisation_hides_only_the_listed_differences() {
    let entry = |client, received: &str, reply: Option<&str>| TranscriptEntry {
        client,
        channel: TranscriptChannel::Control,
        received: received.into(),
        reply: reply.map(Into::into),
    };
    let ports = [(40000, 40001)];
    let boost = entry(
        0,
        "<?xml version=\"1.0\" encoding=\"utf-8\"?><MissionInit a=\"1\"><Mission>  \
         <About>x y</About></Mission><ExperimentUID>e-1</ExperimentUID>\
         <MinecraftServerConnection address=\" 127.0.0.1\" port=\" 5555\"/>\
         <ClientMissionControlPort>40000</ClientMissionControlPort>\
         <AgentVideoPort>0</AgentVideoPort><AgentObservationsPort>12345</AgentObservationsPort>\
         </MissionInit>",
        Some("MALMOOK"),
    );
    let compact = entry(
        0,
        "<MissionInit a=\"1\"><Mission><About>x y</About></Mission>\
         <ExperimentUID>e-2</ExperimentUID>\
         <MinecraftServerConnection address=\"127.0.0.1\" port=\"6666\"/>\
         <ClientMissionControlPort>40000</ClientMissionControlPort>\
         <AgentVideoPort>0</AgentVideoPort><AgentObservationsPort>23456</AgentObservationsPort>\
         </MissionInit>",
        Some("MALMOOK"),
    );
    let polls = |id: &str| {
        vec![
            entry(
                0,
                &format!("MALMO_FIND_SERVER{id}"),
                Some("MALMONOSERVERYET"),
            ),
            entry(
                0,
                &format!("MALMO_FIND_SERVER{id}"),
                Some("MALMOS127.0.0.1:777"),
            ),
        ]
    };
    let mut theirs = polls("e-1");
    theirs.push(boost);
    let mut ours = polls("e-2")[1..].to_vec();
    ours.push(compact.clone());
    let (a, b) = (
        normalise(&theirs, "e-1", &ports),
        normalise(&ours, "e-2", &ports),
    );
    assert_eq!(diff("mbag", &a, &b), "");
    assert!(
        a.contains(&"    <client 0 control port>".to_owned()),
        "{a:#?}"
    );
    assert!(a.contains(&"client 0 control < MALMOS127.0.0.1:<port>".to_owned()));

    // Text content and the video port are not normalised away.
    let mut changed = compact;
    changed.received = changed.received.replace("x y", "x  y").replace(
        "<AgentVideoPort>0</AgentVideoPort>",
        "<AgentVideoPort>9</AgentVideoPort>",
    );
    ours[1] = changed;
    let differences = diff("mbag", &a, &normalise(&ours, "e-2", &ports));
    assert!(
        differences.contains("-     x y\n+     x  y"),
        "{differences}"
    );
    assert!(differences.contains("+     <port>"), "{differences}");
}
