//! Exact lockstep in emulated play: the emulator is mbag's own Minecraft, so the
//! simulator and the game must agree without repairs. Short episodes with
//! heuristic agents in both seats (an emulated person acting through
//! Minecraft's inputs, an assistant through Malmo commands), several seeds,
//! under the stock and the patched mod: no divergence, no expected AI effect
//! left unseen, and every place and break the person made in Minecraft
//! recorded as that person's action (none only as a `sync` edit).

use std::path::Path;
use std::time::Duration;

use malmo_bridge::mod_patch::ModFlavour;
use mbag::agents::spec::AgentSpec;
use mbag::daemon::episode::{EmulatedPerson, EpisodeReport, Minecraft, Mode, Seat};
use mbag::recording::{Recording, verify};
use mbag::sim::action::ActionType;

use super::daemon_modes::{config, run, settings};

const STEPS: u64 = 25;

fn random() -> AgentSpec {
    "heuristic:random".parse().unwrap()
}

/// One emulated play episode with random agents in both seats.
fn play(seed: u64, flavour: ModFlavour, out: &Path) -> EpisodeReport {
    let seats = vec![
        Seat::Person {
            emulated_by: Some(EmulatedPerson::Agent(random())),
        },
        Seat::Agent(random()),
    ];
    let mut s = settings(
        Mode::Play,
        config(&[("human", true), ("assistant", false)]),
        seats,
        out,
        STEPS,
    );
    s.seed = seed;
    s.minecraft = Minecraft::Emulated {
        mod_flavour: flavour,
        faults: Vec::new(),
    };
    s.lockstep.step_period = Duration::from_millis(250);
    run(s)
}

/// Checks one episode; returns a description of what went wrong, if anything.
fn problems(seed: u64, flavour: ModFlavour, report: &EpisodeReport) -> Vec<String> {
    let tag = format!("seed {seed}, {flavour:?} mod");
    let mut out = Vec::new();
    if let Some(e) = &report.end.error {
        out.push(format!("{tag}: the episode failed: {e}"));
        return out;
    }
    let stats = &report.stats;
    if stats.divergences > 0 {
        out.push(format!("{tag}: {} divergences", stats.divergences));
    }
    if stats.unseen_expected > 0 {
        out.push(format!(
            "{tag}: {} expected AI effects not seen",
            stats.unseen_expected
        ));
    }
    let path = report.recording.as_ref().expect("a recording");
    let recording = Recording::read(path).unwrap();
    let verified = verify(&recording, &mut |_, _| {}).unwrap();
    if !verified.mismatches.is_empty() {
        out.push(format!("{tag}: {:?}", verified.mismatches));
    }
    let (mut placed, mut broke, mut synced) = (0, 0, 0);
    for step in &recording.steps {
        // What the simulator did with the person's action.
        match ActionType::from_id(step.e[0].type_id()) {
            Some(ActionType::PlaceBlock) => placed += 1,
            Some(ActionType::BreakBlock) => broke += 1,
            _ => {}
        }
        if let Some(sync) = &step.sync {
            synced += sync.blocks.len();
        }
    }
    let driver = &report.drivers[0];
    if (placed, broke) != (driver.placed, driver.broke) {
        out.push(format!(
            "{tag}: the person placed {} and broke {} blocks in Minecraft; the recording has {placed} places and {broke} breaks",
            driver.placed, driver.broke
        ));
    }
    if synced > 0 {
        out.push(format!("{tag}: {synced} block edits recorded as sync"));
    }
    out
}

#[test]
fn emulated_play_stays_in_exact_lockstep() {
    let dir = tempfile::tempdir().unwrap();
    // The episodes mostly wait (step periods, 20 Hz ticks), so they run side
    // by side; sharing the cores also makes their timing less regular.
    let reports: Vec<_> = std::thread::scope(|scope| {
        let runs: Vec<_> = (0..3)
            .flat_map(|seed| [(seed, ModFlavour::Stock), (seed, ModFlavour::Patched)])
            .map(|(seed, flavour)| {
                let out = dir.path().join(format!("play-{seed}-{flavour:?}.jsonl"));
                scope.spawn(move || (seed, flavour, play(seed, flavour, &out)))
            })
            .collect();
        runs.into_iter().map(|r| r.join().unwrap()).collect()
    });
    let mut all = Vec::new();
    let mut acted = 0;
    for (seed, flavour, report) in &reports {
        acted += report.drivers[0].placed + report.drivers[0].broke;
        all.extend(problems(*seed, *flavour, report));
    }
    assert!(all.is_empty(), "{}", all.join("\n"));
    assert!(acted > 0, "the emulated person placed or broke something");
}
