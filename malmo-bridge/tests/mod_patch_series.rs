//! The patch series in `mod-patch/` against the pinned mod source: it is
//! extracted from the `mbag-malmo==0.38.0.0` wheel (`mod-patch/extract`), every
//! patch must apply in order without fuzz, and where a JDK is installed the
//! patched classes that compile without Minecraft and Forge are compiled:
//!
//! * the mbag helpers `Utils/MbagModVersion.java` and `Utils/BlockChangeLog.java`
//!   (JDK only), then run by `tests/peers/ModPatchCheck.java`, whose output
//!   malmo-bridge must parse into the version and the block changes;
//! * the networking classes of TESTING.md recipe B, `Utils/TCPInputPoller`,
//!   `TCPSocketChannel`, `TCPUtils` and `SchemaHelper`, against two small stubs
//!   (`MalmoMod.DIAGNOSTIC_CONFIGS`, Forge's `Configuration.getString`), which
//!   also need Debian's `libcommons-lang3-java` and `libjaxb-api-java`.
//!
//! The patched Forge classes (ClientStateMachine, MalmoMod,
//! ObservationFromFullStats, BlockChangeListener) need Minecraft and Forge and
//! are not compiled here (mod-patch/README.md says how to build the mod).
//! Without network access and a cached wheel, without git/patch, or without a
//! JDK or those jars, the parts that need them print `SKIPPED: ...`.

use std::path::{Path, PathBuf};
use std::process::Command;

use malmo_bridge::control::ControlReply;
use malmo_bridge::decoded::DecodedObservation;
use malmo_bridge::mod_patch::{BlockAction, PATCHED_MOD_VERSION};
use malmo_bridge::observation::Observation;

const MALMO_JAVA: &str = "Minecraft/src/main/java/com/microsoft/Malmo";

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn has(program: &str) -> bool {
    Command::new(program)
        .arg("-version")
        .output()
        .or_else(|_| Command::new(program).arg("--version").output())
        .is_ok()
}

/// A fresh directory under the system's temporary directory, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new() -> Self {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos();
        let dir =
            std::env::temp_dir().join(format!("mbag-mod-patch-{}-{nanos}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        Self(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn run(command: &mut Command) -> (bool, String) {
    let output = command
        .output()
        .unwrap_or_else(|e| panic!("running {command:?}: {e}"));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    (output.status.success(), text)
}

fn patches() -> Vec<PathBuf> {
    let mut patches: Vec<PathBuf> = std::fs::read_dir(repo().join("mod-patch"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "patch"))
        .collect();
    patches.sort();
    patches
}

#[test]
fn the_series_applies_to_the_pinned_source_and_its_plain_java_compiles() {
    let test = "mod_patch_series";
    let patches = patches();
    assert!(
        patches.len() >= 3,
        "expected the numbered series in mod-patch/, found {patches:?}"
    );
    for (i, patch) in patches.iter().enumerate() {
        let name = patch.file_name().unwrap().to_string_lossy();
        assert!(
            name.starts_with(&format!("{:04}-", i + 1)),
            "{name}: patches are numbered 0001, 0002, ... without gaps"
        );
    }

    // 1. The pristine source, extracted once into the ignored .deps/ and reused.
    let output = Command::new(repo().join("mod-patch/extract"))
        .output()
        .expect("running mod-patch/extract");
    if output.status.code() == Some(3) {
        eprintln!(
            "SKIPPED: {test}: the mbag-malmo 0.38.0.0 wheel could not be obtained (no network \
             and no copy in .deps/mod-source/wheel or $MBAG_MALMO_WHEEL): {}",
            String::from_utf8_lossy(&output.stderr).trim()
        );
        return;
    }
    assert!(
        output.status.success(),
        "mod-patch/extract failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    let pristine = PathBuf::from(stdout.lines().last().expect("the extracted path").trim());
    assert!(pristine.join(MALMO_JAVA).join("MalmoMod.java").is_file());

    // 2. Every patch applies, in order, to a copy, with no fuzz.
    let tmp = TempDir::new();
    let tree = tmp.0.join("malmo");
    let (ok, text) = run(Command::new("cp").arg("-a").arg(&pristine).arg(&tree));
    assert!(ok, "copying the source: {text}");
    let use_git = has("git");
    if !use_git && !has("patch") {
        eprintln!("SKIPPED: {test}: neither git nor patch is installed to apply the series");
        return;
    }
    for patch in &patches {
        let (ok, text) = if use_git {
            // `git apply` refuses any context mismatch (no fuzz) and applies
            // nothing if a hunk fails.
            let check = run(Command::new("git")
                .current_dir(&tree)
                .args(["apply", "--check"])
                .arg(patch));
            assert!(
                check.0,
                "{} does not apply cleanly: {}",
                patch.display(),
                check.1
            );
            run(Command::new("git")
                .current_dir(&tree)
                .arg("apply")
                .arg(patch))
        } else {
            let check = run(Command::new("patch")
                .current_dir(&tree)
                .args(["-p1", "--dry-run", "--forward", "--fuzz=0", "-i"])
                .arg(patch));
            assert!(
                check.0,
                "{} does not apply cleanly: {}",
                patch.display(),
                check.1
            );
            run(Command::new("patch")
                .current_dir(&tree)
                .args(["-p1", "--forward", "--fuzz=0", "-s", "-i"])
                .arg(patch))
        };
        assert!(ok, "applying {}: {text}", patch.display());
    }
    let java = tree.join(MALMO_JAVA);
    let read = |p: &str| std::fs::read_to_string(java.join(p)).unwrap();
    assert!(read("Client/ClientStateMachine.java").contains("MbagModVersion.REQUEST"));
    assert!(read("MalmoMod.java").contains("new BlockChangeListener()"));
    assert!(
        read("MissionHandlers/ObservationFromFullStatsImplementation.java")
            .contains("BlockChangeLog.OBSERVATION_KEY")
    );
    let version_source = read("Utils/MbagModVersion.java");
    eprintln!(
        "{test}: {} patches apply cleanly to {}",
        patches.len(),
        pristine.display()
    );

    // 3. The plain-Java classes compile; the helpers run and malmo-bridge reads them.
    if !has("javac") || !has("java") {
        eprintln!("SKIPPED: {test}: compiling the patched classes needs a JDK (javac, java)");
        // Without a JDK, at least the version constants must match ours.
        assert!(version_source.contains(&format!(
            "MALMO_VERSION = \"{}\"",
            PATCHED_MOD_VERSION.split('+').next().unwrap()
        )));
        return;
    }
    let out = tmp.0.join("classes");
    let stubs = tmp.0.join("stubs");
    std::fs::create_dir_all(&out).unwrap();
    let stub = |path: &str, text: &str| {
        let path = stubs.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
        path
    };
    let mut sources = vec![
        java.join("Utils/MbagModVersion.java"),
        java.join("Utils/BlockChangeLog.java"),
        repo().join("tests/peers/ModPatchCheck.java"),
    ];
    let jars = [
        "/usr/share/java/commons-lang3.jar",
        "/usr/share/java/jaxb-api.jar",
    ];
    let networking = jars.iter().all(|j| Path::new(j).is_file());
    if networking {
        // Stand-ins for the two Minecraft/Forge symbols these classes touch.
        sources.push(stub(
            "com/microsoft/Malmo/MalmoMod.java",
            "package com.microsoft.Malmo;\npublic class MalmoMod { public static final String DIAGNOSTIC_CONFIGS = \"malmodiags\"; }\n",
        ));
        sources.push(stub(
            "net/minecraftforge/common/config/Configuration.java",
            "package net.minecraftforge.common.config;\npublic class Configuration {\n    public String getString(String name, String category, String defaultValue, String comment, String[] validValues) { return defaultValue; }\n}\n",
        ));
        for class in [
            "TCPInputPoller",
            "TCPSocketChannel",
            "TCPUtils",
            "SchemaHelper",
        ] {
            sources.push(java.join(format!("Utils/{class}.java")));
        }
    } else {
        eprintln!(
            "SKIPPED: {test}: the networking classes of TESTING.md recipe B need {} \
             (apt-get install libcommons-lang3-java libjaxb-api-java); compiling the mbag helpers only",
            jars.join(" and ")
        );
    }
    let (ok, text) = run(Command::new("javac")
        .args(["-nowarn", "-encoding", "UTF-8", "-d"])
        .arg(&out)
        .arg("-cp")
        .arg(jars.join(":"))
        .args(&sources));
    assert!(ok, "javac failed:\n{text}");
    let compiled: Vec<String> = sources
        .iter()
        .map(|s| s.file_stem().unwrap().to_string_lossy().into_owned())
        .collect();
    eprintln!("{test}: compiled {}", compiled.join(", "));

    let (ok, text) = run(Command::new("java")
        .arg("-cp")
        .arg(&out)
        .arg("ModPatchCheck"));
    assert!(ok, "ModPatchCheck failed:\n{text}");
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 3, "{text}");
    assert_eq!(
        ControlReply::parse(lines[0].as_bytes()),
        ControlReply::MbagVersion(PATCHED_MOD_VERSION.into())
    );
    let obs = Observation::parse(lines[1].as_bytes()).unwrap();
    assert_eq!(obs.mod_version.as_deref(), Some(PATCHED_MOD_VERSION));
    let changes = obs.block_changes.clone().unwrap();
    let summary: Vec<_> = changes
        .iter()
        .map(|c| {
            (
                c.seq,
                c.tick,
                c.player.as_str(),
                c.action.clone(),
                c.cell,
                c.block.as_str(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            (2, 11, "human", BlockAction::Place, [3, 2, 1], "planks"),
            (3, 12, "assistant", BlockAction::Break, [3, 2, 1], "planks"),
        ],
        "each change once, in order, none from before the observer synchronised"
    );
    let decoded = DecodedObservation::decode(lines[1].as_bytes()).unwrap();
    assert_eq!(Some(decoded.block_changes), obs.block_changes);
    assert_eq!(lines[2], "drained");
}
