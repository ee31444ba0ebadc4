//! Faults from the emulator during a daemon episode: for every kind of
//! `mbag malmo emulator --fault`, the episode ends with a clear error (or the
//! fault is survived) within bounded time, and the recording holds every
//! completed step and verifies.

use std::time::{Duration, Instant};

use malmo_bridge::emulator::{FaultKind, FaultSpec};
use mbag::daemon::episode::{
    EmulatedPerson, EpisodeError, EpisodeHooks, EpisodeReport, Minecraft, Mode, Seat,
};
use mbag::recording::{EndReason, Recording, verify};

use super::daemon_modes::{config, settings, try_run_with};

/// The longest any faulted episode may take, start to end.
const BOUND: Duration = Duration::from_secs(30);

/// Steps of an episode that survives its fault.
const STEPS: u64 = 40;

/// The silence on mission control after which the daemon gives a client up.
const SILENCE: Duration = Duration::from_secs(3);

/// What a faulted episode left behind.
struct Faulted {
    /// The episode's report, or why it never started.
    result: Result<EpisodeReport, EpisodeError>,
    /// The recording it wrote, read back and verified.
    recording: Recording,
    /// From the start of the episode to its end.
    took: Duration,
}

/// Runs a recorded person-alone episode of up to [`STEPS`] steps (a heuristic
/// person, steps of at most 200 ms) in an emulator injecting `fault` (the
/// `--fault` syntax), and reads back and verifies its recording.
fn with_fault(fault: &str) -> Faulted {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("fault.jsonl");
    let seats = vec![Seat::Person {
        emulated_by: Some(EmulatedPerson::Agent(
            "heuristic:layer_builder".parse().unwrap(),
        )),
    }];
    let mut s = settings(Mode::Record, config(&[("human", true)]), seats, &out, STEPS);
    s.lockstep.step_period = Duration::from_millis(200);
    s.timeouts.silence = SILENCE;
    s.minecraft = Minecraft::Emulated {
        mod_flavour: malmo_bridge::mod_patch::ModFlavour::Stock,
        faults: vec![fault.parse().unwrap()],
    };
    let start = Instant::now();
    let result = try_run_with(s, EpisodeHooks::default());
    let took = start.elapsed();
    let recording =
        Recording::read(&out).unwrap_or_else(|e| panic!("{fault}: the recording is readable: {e}"));
    let verified = verify(&recording, &mut |_, _| {}).unwrap();
    assert!(
        verified.mismatches.is_empty(),
        "{fault}: {:?}",
        verified.mismatches
    );
    // Keep the directory until the recording has been read.
    drop(dir);
    Faulted {
        result,
        recording,
        took,
    }
}

/// How an episode must end under a fault.
#[derive(Clone, Copy, Debug)]
enum Expect {
    /// It runs to its last step, its recording finished.
    Survived,
    /// The loop ends early with an error holding all these words, the
    /// recording keeping the steps so far under an aborted footer.
    Aborted(&'static [&'static str]),
    /// The mission never starts: the episode fails with an error holding all
    /// these words, and the recording has its header only.
    Refused(&'static [&'static str]),
}

/// Every fault kind, with how the daemon must take it. Faults in a mission
/// come 6 s into it (the set-up takes a few), after some steps are recorded.
const MATRIX: &[(&str, Expect)] = &[
    // The mod gives up writing observations; mission control still pings.
    ("drop:observations@6s", Expect::Survived),
    (
        "drop:mission-control@6s",
        Expect::Aborted(&["lost", "mission-control connection closed"]),
    ),
    ("delay:observations=150ms@6s", Expect::Survived),
    ("delay:commands=100ms@6s", Expect::Survived),
    // Pings 5 s apart: silence past the limit.
    (
        "delay:mission-control=5s@6s",
        Expect::Aborted(&["lost", "no ping for 3s"]),
    ),
    (
        "truncate:observations@6s",
        Expect::Aborted(&["lost", "on obs", "closed inside a frame"]),
    ),
    (
        "corrupt:observations@6s",
        Expect::Aborted(&["lost", "on obs", "exceeds the limit"]),
    ),
    (
        "corrupt:mission-control=hostile-length@6s",
        Expect::Aborted(&["lost", "on mcp", "4294967280 bytes exceeds"]),
    ),
    // Skipped and counted (checked below).
    ("malformed-json@6s", Expect::Survived),
    (
        "stop-pings@6s",
        Expect::Aborted(&["lost", "no ping for 3s"]),
    ),
    (
        "exit@6s",
        Expect::Aborted(&["lost", "closed before MissionEnded"]),
    ),
    (
        "fail-world-creation=disk full",
        Expect::Refused(&["MOD_FAILED_TO_CREATE_WORLD", "disk full"]),
    ),
    (
        "mod-version=0.37.0",
        Expect::Refused(&["another Malmo version"]),
    ),
];

/// Checks one case; `Err` says what went wrong.
fn check(fault: &str, expect: Expect, run: &Faulted) -> Result<(), String> {
    let steps = run.recording.steps.len();
    let footer = run.recording.footer.as_ref();
    if run.took > BOUND {
        return Err(format!("took {:?}, over {BOUND:?}", run.took));
    }
    let names = |words: &[&str], text: &str| {
        if words.iter().all(|w| text.contains(w)) {
            Ok(())
        } else {
            Err(format!(
                "the error does not name the problem ({words:?}): {text}"
            ))
        }
    };
    match (expect, &run.result) {
        (Expect::Survived, Ok(report)) => {
            if let Some(e) = &report.end.error {
                return Err(format!("ended with an error: {e}"));
            }
            if steps as u64 != STEPS || footer.map(|f| f.end.reason) != Some(EndReason::Truncated) {
                return Err(format!("{steps} steps, footer {footer:?}"));
            }
            if fault.starts_with("malformed-json") && report.stats.undecodable == 0 {
                return Err("the malformed observation was not counted".into());
            }
            Ok(())
        }
        (Expect::Aborted(words), Ok(report)) => {
            let Some(error) = &report.end.error else {
                return Err(format!("no error after {} steps", report.steps));
            };
            names(words, &error.to_string())?;
            let Some(footer) = footer else {
                return Err("no footer".into());
            };
            if footer.end.reason != EndReason::Aborted || footer.steps as usize != steps {
                return Err(format!("footer {footer:?} for {steps} steps"));
            }
            if steps < 2 {
                return Err(format!("only {steps} steps kept from before the fault"));
            }
            Ok(())
        }
        (Expect::Refused(words), Err(error)) => {
            names(words, &format!("{error}"))?;
            if steps != 0 || footer.is_some() {
                return Err(format!("{steps} steps, footer {footer:?}"));
            }
            Ok(())
        }
        (_, Ok(report)) => Err(format!(
            "ran {} steps, error {:?}",
            report.steps,
            report.end.error.as_ref().map(ToString::to_string)
        )),
        (_, Err(error)) => Err(format!("did not start: {error}")),
    }
}

/// The fault matrix: every kind of fault, each in its own episode (run side by
/// side), ends the episode with a clear error or is survived, within
/// [`BOUND`], with a recording that verifies.
#[test]
fn every_fault_kind_ends_the_episode_clearly_or_is_survived() {
    let kinds: Vec<&str> = MATRIX
        .iter()
        .map(|(spec, _)| spec.parse::<FaultSpec>().unwrap().kind.name())
        .collect();
    for name in FaultKind::NAMES {
        assert!(kinds.contains(&name), "the matrix has no {name} fault");
    }
    let start = Instant::now();
    let cases: Vec<_> = MATRIX
        .iter()
        .map(|&(fault, expect)| {
            let run = std::thread::spawn(move || with_fault(fault));
            (fault, expect, run)
        })
        .collect();
    let mut failures = Vec::new();
    for (fault, expect, run) in cases {
        match run.join() {
            Ok(run) => {
                let error = match &run.result {
                    Ok(report) => report.end.error.as_ref().map(ToString::to_string),
                    Err(e) => Some(e.to_string()),
                };
                eprintln!(
                    "{fault}: {} steps, {:.1} s, {}",
                    run.recording.steps.len(),
                    run.took.as_secs_f64(),
                    error.as_deref().unwrap_or("no error")
                );
                if let Err(why) = check(fault, expect, &run) {
                    failures.push(format!("{fault}: {why}"));
                }
            }
            Err(_) => failures.push(format!("{fault}: panicked")),
        }
    }
    eprintln!(
        "the fault matrix took {:.1} s",
        start.elapsed().as_secs_f64()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// `kill -9` of the daemon mid-episode: the recording keeps every step written
/// before the kill (at most a cut last line) and verifies.
#[test]
fn killing_the_daemon_keeps_a_readable_recording() {
    use std::process::{Command, Stdio};

    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("killed.jsonl");
    let mut child = Command::new(env!("CARGO_BIN_EXE_mbag"))
        .args(["record", "--emulated", "--quiet", "--step-period", "0.1"])
        .args(["--goals", "random", "--max-steps", "100000", "--out"])
        .arg(&out)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(120);
    let lines = || {
        std::fs::read_to_string(&out)
            .map(|t| t.lines().count())
            .unwrap_or(0)
    };
    while lines() < 12 {
        assert!(
            Instant::now() < deadline,
            "the daemon wrote no steps in 2 minutes"
        );
        assert!(
            child.try_wait().unwrap().is_none(),
            "the daemon exited early"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    // SIGKILL: no destructor, no footer.
    child.kill().unwrap();
    child.wait().unwrap();

    let recording = Recording::read(&out).expect("a killed recording is readable");
    assert!(recording.footer.is_none(), "nobody wrote a footer");
    assert!(
        recording.steps.len() >= 10,
        "{} steps",
        recording.steps.len()
    );
    let verified = verify(&recording, &mut |_, _| {}).unwrap();
    assert!(verified.mismatches.is_empty(), "{:?}", verified.mismatches);
    assert!(!verified.finished);
}
