//! `mbag malmo emulator`: it serves the mod's control protocol on the ports it
//! prints, records what it received with --transcript, and stops cleanly when
//! its standard input closes.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[test]
fn the_emulator_answers_reservations_and_stops_when_stdin_closes() {
    let dir = tempfile::tempdir().unwrap();
    let transcript = dir.path().join("transcript.jsonl");
    let mut child = Command::new(env!("CARGO_BIN_EXE_mbag"))
        .args(["malmo", "emulator", "--clients", "2", "--port", "0"])
        .arg("--until-stdin-closes")
        .arg("--transcript")
        .arg(&transcript)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("running mbag");
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut ready = String::new();
    stdout.read_line(&mut ready).unwrap();
    let ports: Vec<u16> = ready
        .trim()
        .split_once("ports ")
        .unwrap_or_else(|| panic!("not the ready line: {ready:?}"))
        .1
        .split(' ')
        .map(|pair| pair.split('/').next().unwrap().parse().unwrap())
        .collect();
    assert_eq!(ports.len(), 2, "{ready}");

    let mut control = TcpStream::connect(("127.0.0.1", ports[0])).unwrap();
    control
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    control
        .write_all(b"MALMO_REQUEST_CLIENT:0.38.0:20000:cli-test\n")
        .unwrap();
    let mut reply = Vec::new();
    control.read_to_end(&mut reply).unwrap();
    assert_eq!(reply, b"\0\0\0\x07MALMOOK");

    drop(child.stdin.take());
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(started.elapsed() < Duration::from_secs(10), "still running");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(status.success());
    // The exchange is in the transcript, as the differential test reads it.
    assert_eq!(
        std::fs::read_to_string(&transcript).unwrap(),
        "{\"client\":0,\"channel\":\"control\",\
         \"received\":\"MALMO_REQUEST_CLIENT:0.38.0:20000:cli-test\",\"reply\":\"MALMOOK\"}\n"
    );
}

#[test]
fn the_emulators_help_teaches_with_examples() {
    let output = Command::new(env!("CARGO_BIN_EXE_mbag"))
        .args(["malmo", "emulator", "--help"])
        .output()
        .unwrap();
    let help = String::from_utf8(output.stdout).unwrap();
    assert!(
        help.contains("Examples:") && help.contains("--until-stdin-closes"),
        "{help}"
    );
    // --fault teaches its syntax, every kind and examples.
    assert!(
        help.contains("KIND[:CHANNEL][=VALUE][@WHEN][#CLIENT]")
            && help.contains("--fault delay:observations=200ms@10"),
        "{help}"
    );
    for kind in malmo_bridge::emulator::FaultKind::NAMES {
        assert!(
            help.contains(&format!("  {kind}")),
            "{kind} missing: {help}"
        );
    }
}

/// A malformed --fault is a usage error (exit 2) that says what is wrong; a
/// fault for a client that does not exist is refused at start.
#[test]
fn bad_faults_are_refused_with_the_reason() {
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_mbag"))
            .args(["malmo", "emulator", "--port", "0"])
            .args(args)
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };
    for (fault, reason) in [
        ("delay:observations", "delay needs its duration"),
        ("exit@soon", "bad @WHEN \"soon\""),
        ("truncate:rewards", "truncate cannot act on rewards"),
        ("explode", "unknown fault kind \"explode\""),
    ] {
        let output = run(&["--fault", "exit@2s", "--fault", fault]);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{fault}: {stderr}");
        assert!(
            stderr.contains(fault) && stderr.contains(reason),
            "{fault}: {stderr}"
        );
    }
    let output = run(&["--fault", "exit@2s#1", "--until-stdin-closes"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("fault exit@2s#1: there is no client #1 (1 emulated)"),
        "{stderr}"
    );
}
