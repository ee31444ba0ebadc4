//! Finding headless Chromium for the browser tests (view, rate, study); they
//! print SKIPPED without it (scripts/setup installs Debian's package).

use std::path::PathBuf;
use std::process::Command;

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
