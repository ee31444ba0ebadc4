//! Faults from the emulator's hooks during a daemon episode: each ends in a clear
//! error (or is survived), within bounded time, with a readable recording that
//! holds every completed step and verifies.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use malmo_bridge::emulator::{Corruption, FaultChannel, Faults};
use mbag::daemon::episode::{EmulatedPerson, EpisodeHooks, EpisodeReport, Mode, Seat};
use mbag::recording::{EndReason, Recording, verify};

use super::daemon_modes::{bc, config, run_with, settings};

/// Runs a recorded person-alone episode of up to 40 steps and applies `fault`
/// to the person's client once 5 steps are recorded.
fn with_fault(
    fault: impl FnOnce(&Faults) + Send + 'static,
    silence: Option<Duration>,
) -> (EpisodeReport, Recording, Duration) {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("fault.jsonl");
    let seats = vec![Seat::Person {
        emulated_by: Some(EmulatedPerson::Agent(bc())),
    }];
    let mut s = settings(Mode::Record, config(&[("human", true)]), seats, &out, 40);
    if let Some(silence) = silence {
        s.timeouts.silence = silence;
    }
    let faults: Arc<Mutex<Option<Faults>>> = Arc::default();
    let store = faults.clone();
    let hooks = EpisodeHooks {
        on_emulator: Some(Box::new(move |emulator, _| {
            *store.lock().unwrap() = Some(emulator.clients()[0].faults().clone());
        })),
        on_start: Some(Box::new(move |mut view| {
            tokio::spawn(async move {
                while view.changed().await.is_ok() {
                    if view.borrow().steps >= 5 {
                        let f = faults.lock().unwrap().take();
                        if let Some(f) = f {
                            fault(&f);
                        }
                        return;
                    }
                }
            });
        })),
    };
    let start = Instant::now();
    let report = run_with(s, hooks);
    let took = start.elapsed();
    let recording = Recording::read(&out).expect("the recording is readable");
    let verified = verify(&recording, &mut |_, _| {}).unwrap();
    assert!(verified.mismatches.is_empty(), "{:?}", verified.mismatches);
    // Keep the directory until the recording has been read.
    drop(dir);
    (report, recording, took)
}

fn assert_aborted_clearly(report: &EpisodeReport, recording: &Recording, words: &[&str]) {
    let error = report
        .end
        .error
        .as_ref()
        .expect("the episode ended with an error");
    let text = error.to_string();
    assert!(
        words.iter().any(|w| text.contains(w)),
        "the error names the problem: {text}"
    );
    assert!(
        recording.steps.len() >= 5,
        "completed steps kept: {}",
        recording.steps.len()
    );
    let footer = recording
        .footer
        .as_ref()
        .expect("a footer saying how it ended");
    assert_eq!(footer.end.reason, EndReason::Aborted);
    assert_eq!(footer.steps as usize, recording.steps.len());
}

#[test]
fn minecraft_exiting_mid_episode_ends_it_with_the_steps_so_far() {
    let (report, recording, took) = with_fault(Faults::exit_mid_mission, None);
    assert_aborted_clearly(&report, &recording, &["lost", "closed"]);
    assert!(took < Duration::from_secs(120), "took {took:?}");
}

#[test]
fn pings_stopping_ends_the_episode_within_the_silence_limit() {
    let (report, recording, took) =
        with_fault(|f| f.stop_pings(true), Some(Duration::from_secs(2)));
    assert_aborted_clearly(&report, &recording, &["ping", "hung"]);
    assert!(took < Duration::from_secs(120), "took {took:?}");
}

#[test]
fn a_garbage_frame_ends_the_episode_with_a_clear_error() {
    let (report, recording, _) = with_fault(
        |f| f.corrupt_next_frame(FaultChannel::Observations, Corruption::Garbage),
        None,
    );
    assert_aborted_clearly(&report, &recording, &["lost", "frame", "length"]);
}

#[test]
fn malformed_observation_json_is_skipped_and_the_episode_goes_on() {
    let (report, recording, _) = with_fault(Faults::malformed_json, None);
    assert!(report.end.error.is_none(), "{:?}", report.end.error);
    assert!(
        report.stats.undecodable >= 1,
        "the bad observation was counted"
    );
    assert_eq!(recording.steps.len(), 40);
    assert_eq!(
        recording.footer.as_ref().unwrap().end.reason,
        EndReason::Truncated
    );
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

/// The person's client drops its observation connection and reconnects (the
/// mod opens a new connection for its next frame): the episode goes on.
#[test]
fn a_dropped_observation_connection_is_survived() {
    let (report, recording, _) =
        with_fault(|f| f.drop_connection(FaultChannel::Observations), None);
    assert!(report.end.error.is_none(), "{:?}", report.end.error);
    assert_eq!(recording.steps.len(), 40);
}

/// A truncated observation frame: the rest of the stream cannot be framed, so
/// the connection is given up with a clear error naming it, within bounded time
/// and with a verified recording of the steps so far.
#[test]
fn a_truncated_frame_is_a_clear_error() {
    let (report, recording, took) =
        with_fault(|f| f.truncate_next_frame(FaultChannel::Observations), None);
    assert_aborted_clearly(&report, &recording, &["inside a frame"]);
    assert!(took < Duration::from_secs(120), "took {took:?}");
}
