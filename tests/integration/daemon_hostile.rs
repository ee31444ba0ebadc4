//! Strangers on the daemon's listeners during an episode: a port scan's
//! connect-and-close on mission control, hostile length prefixes, more
//! connections than a listener holds, and observation frames forged from a
//! foreign address. The episode runs to its end, and its recording verifies
//! with no forged action in it.

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use malmo_bridge::agent::MAX_CONNECTIONS;
use malmo_bridge::mission_init::AgentPorts;
use mbag::daemon::episode::{EpisodeHooks, Mode, Seat};
use mbag::recording::{EndReason, Recording, verify};
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpSocket, TcpStream};

use super::daemon_modes::{config, run_with, settings};

const STEPS: u64 = 30;

/// What the stranger managed, for the assertions.
#[derive(Debug, Default)]
struct Attack {
    /// Forged frames written from 127.0.0.2 (`None`: that address is unusable
    /// here, and the peer filter is covered by `malmo_bridge`'s unit tests).
    forged_from_foreign: Option<usize>,
    done: bool,
}

/// An observation that, if believed, moves the person three cells.
const FORGED: &[u8] = br#"{"Name":"human","XPos":3.5,"YPos":2.0,"ZPos":3.5,"Pitch":0.0,"Yaw":0.0}"#;

fn frame(payload: &[u8]) -> Vec<u8> {
    let mut bytes = (payload.len() as u32).to_be_bytes().to_vec();
    bytes.extend_from_slice(payload);
    bytes
}

async fn attack(ports: AgentPorts, report: Arc<Mutex<Attack>>) {
    let home = Ipv4Addr::LOCALHOST;
    let at = |port| SocketAddr::from((home, port));
    // A port scan: connect and close at once.
    for port in [ports.mission_control, ports.observations, ports.rewards] {
        drop(TcpStream::connect(at(port)).await);
    }
    // Hostile length prefixes (4 GiB) on every channel.
    for port in [ports.mission_control, ports.observations, ports.rewards] {
        if let Ok(mut s) = TcpStream::connect(at(port)).await {
            let _ = s.write_all(&[0xff, 0xff, 0xff, 0xff, b'{']).await;
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    // Junk on mission control that is framed well but is not the mod's.
    if let Ok(mut s) = TcpStream::connect(at(ports.mission_control)).await {
        let _ = s.write_all(&frame(b"<hello/>")).await;
    }
    // More connections than a listener holds, kept open for a while.
    let mut held = Vec::new();
    for _ in 0..MAX_CONNECTIONS + 4 {
        if let Ok(s) = TcpStream::connect(at(ports.observations)).await {
            held.push(s);
        }
    }
    // Forged observations from another loopback address.
    let foreign = SocketAddr::from((Ipv4Addr::new(127, 0, 0, 2), 0));
    let mut forged = None;
    if let Ok(socket) = TcpSocket::new_v4()
        && socket.bind(foreign).is_ok()
        && let Ok(mut s) = socket.connect(at(ports.observations)).await
    {
        let mut n = 0;
        for _ in 0..200 {
            if s.write_all(&frame(FORGED)).await.is_err() {
                break;
            }
            n += 1;
        }
        forged = Some(n);
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    drop(held);
    let mut r = report.lock().unwrap();
    r.forged_from_foreign = forged;
    r.done = true;
}

#[test]
fn strangers_on_the_listeners_neither_end_nor_steer_the_episode() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("hostile.jsonl");
    // Nobody plays: every person's action in the recording would be forged.
    let seats = vec![Seat::Person { emulated_by: None }];
    let mut s = settings(Mode::Record, config(&[("human", true)]), seats, &out, STEPS);
    s.lockstep.step_period = Duration::from_millis(150);
    let report = Arc::new(Mutex::new(Attack::default()));
    let attack_report = report.clone();
    let hooks = EpisodeHooks {
        on_emulator: Some(Box::new(move |emulator, _| {
            let ports = emulator.clients()[0]
                .agent_ports()
                .expect("the client runs the mission");
            tokio::spawn(attack(ports, attack_report));
        })),
        on_start: None,
    };
    let episode = run_with(s, hooks);

    let attack = report.lock().unwrap();
    assert!(attack.done, "the attack ran to its end during the episode");
    assert!(episode.end.error.is_none(), "{:?}", episode.end.error);
    assert_eq!(episode.stats.human_actions, 0, "no forged action detected");
    match attack.forged_from_foreign {
        Some(n) => eprintln!("forged {n} frames from 127.0.0.2"),
        None => eprintln!("SKIPPED the foreign peer: 127.0.0.2 cannot be bound here"),
    }

    let recording = Recording::read(&out).expect("the recording is readable");
    assert_eq!(recording.steps.len() as u64, STEPS);
    let footer = recording.footer.as_ref().expect("a footer");
    assert_eq!(
        footer.end.reason,
        EndReason::Truncated,
        "ended at max_steps"
    );
    let noop = 0;
    for step in &recording.steps {
        assert_eq!(step.a[0].0, noop, "step {}: the person did nothing", step.t);
    }
    let verified = verify(&recording, &mut |_, _| {}).unwrap();
    assert!(verified.mismatches.is_empty(), "{:?}", verified.mismatches);
}

/// Issue 40, finding 9: any program on this machine could end a `play`
/// episode at step 3 with a forged MissionEnded on the daemon's loopback
/// mission-control listener. Now a mission ends only by a MissionEnded on the
/// connection that delivered the MissionInit echo (the mod keeps that one
/// connection for the mission): the stranger's (a shell, another process)
/// is ignored, logged once, and the episode runs to its last step.
#[test]
fn a_forged_mission_ended_from_another_process_is_ignored() {
    if !std::path::Path::new("/proc/net/tcp").exists() || which("bash").is_none() {
        eprintln!("SKIPPED: needs Linux's /proc and bash (to play another process)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("forged_end.jsonl");
    let seats = vec![Seat::Person { emulated_by: None }];
    let mut s = settings(Mode::Record, config(&[("human", true)]), seats, &out, STEPS);
    s.lockstep.step_period = Duration::from_millis(150);
    let sent = Arc::new(Mutex::new(None::<bool>));
    let sent_report = sent.clone();
    let hooks = EpisodeHooks {
        on_emulator: Some(Box::new(move |emulator, _| {
            let ports = emulator.clients()[0]
                .agent_ports()
                .expect("the client runs the mission");
            tokio::task::spawn_blocking(move || {
                std::thread::sleep(Duration::from_millis(600));
                let ended = malmo_bridge::mission_ended::MissionEnded::ended().render();
                let escaped: String = frame(ended.as_bytes())
                    .iter()
                    .map(|b| format!("\\x{b:02x}"))
                    .collect();
                let status = std::process::Command::new("bash")
                    .arg("-c")
                    .arg(format!(
                        "exec 3<>/dev/tcp/127.0.0.1/{} && printf '{escaped}' >&3 && sleep 1",
                        ports.mission_control
                    ))
                    .status();
                *sent_report.lock().unwrap() = Some(status.is_ok());
            });
        })),
        on_start: None,
    };
    let episode = run_with(s, hooks);
    assert_eq!(*sent.lock().unwrap(), Some(true), "the stranger ran");
    assert!(episode.end.error.is_none(), "{:?}", episode.end.error);
    let recording = Recording::read(&out).expect("the recording is readable");
    assert_eq!(
        recording.steps.len() as u64,
        STEPS,
        "the forged end stopped it"
    );
    assert_eq!(
        recording.footer.as_ref().expect("a footer").end.reason,
        EndReason::Truncated,
        "ended at max_steps, not by the forged MissionEnded"
    );
}

fn which(program: &str) -> Option<std::path::PathBuf> {
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|p| p.join(program))
            .find(|p| p.is_file())
    })
}
