//! The seam between Minecraft and the simulator: the only part of the daemon
//! that speaks both Malmo's vocabulary (block names, grids in the mod's order,
//! item stacks, commands, mission documents, the emulator's world) and MBAG's
//! (block ids, cells, positions, slots, configs).
//!
//! - [`observation`]: a decoded observation read into MBAG's terms, for the
//!   detector.
//! - [`commands`]: assistant actions, set-up, upkeep and repairs as Malmo
//!   commands (MBAG_INTEGRATION.md §5).
//! - [`aim`]: where an AI looks to click a cell, with Minecraft's eye height.
//! - [`mission`]: the mission document for a config.
//! - [`chat`]: chat lines read as the players' messages, and words said as
//!   Malmo's `chat` command.
//! - [`emulated`]: a scripted person in the emulator who decides on the
//!   simulator's view.
//!
//! The rest of the daemon uses only what these modules give it; the bridge's
//! transport (connections, the emulator process, their errors) is not
//! vocabulary and is used where the connections are made. A test keeps it so.

pub mod aim;
pub mod chat;
pub mod commands;
pub mod emulated;
pub mod mission;
pub mod observation;
pub mod upkeep;

#[cfg(test)]
mod tests {
    use std::path::Path;

    /// The bridge's modules that hold Malmo's vocabulary.
    const VOCABULARY: [&str; 7] = [
        "malmo_bridge::block",
        "malmo_bridge::command",
        "malmo_bridge::decoded",
        "malmo_bridge::grid",
        "malmo_bridge::mission::",
        "malmo_bridge::observation",
        "malmo_bridge::emulator::ray",
    ];

    fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
        for entry in std::fs::read_dir(dir).expect("a readable source folder") {
            let path = entry.expect("a readable entry").path();
            if path.is_dir() {
                rust_files(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }

    /// No daemon module outside the seam names both the simulator and Malmo's
    /// vocabulary (grouped imports such as `malmo_bridge::{block, ...}` are
    /// caught too, as a line naming the crate and a vocabulary module).
    #[test]
    fn only_the_seam_speaks_both_vocabularies() {
        let daemon = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/daemon");
        let seam = daemon.join("seam");
        let mut files = Vec::new();
        rust_files(&daemon, &mut files);
        assert!(files.len() > 10, "found the daemon's sources");
        let mut offenders = Vec::new();
        for file in files.iter().filter(|f| !f.starts_with(&seam)) {
            let text = std::fs::read_to_string(file).expect("readable source");
            let sim = text.contains("crate::sim::");
            let malmo = text.lines().any(|line| {
                VOCABULARY.iter().any(|v| line.contains(v))
                    || (line.contains("malmo_bridge::{")
                        && ["block", "command", "decoded", "grid", "observation"]
                            .iter()
                            .any(|m| line.contains(m)))
            });
            if sim && malmo {
                offenders.push(file.display().to_string());
            }
        }
        assert!(
            offenders.is_empty(),
            "outside daemon::seam, these speak both vocabularies: {offenders:?}"
        );
    }
}
