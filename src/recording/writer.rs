//! Writing a recording one step at a time, so that a crash loses at most the step
//! in flight.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::error::RecordingError;
use super::footer::Footer;
use super::header::Header;
use super::step::StepRecord;

/// When the writer asks the OS to put written lines on disk.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Fsync {
    /// Never: each line reaches the OS before `append` returns, which survives the
    /// process dying (even `kill -9`) but not the machine losing power.
    Never,
    /// After the header and the footer only.
    #[default]
    HeaderAndFooter,
    /// After every line: survives power loss, at one disk flush per step.
    EveryLine,
}

/// Writes a recording: [`create`](Self::create) writes the header,
/// [`append`](Self::append) one step, [`finish`](Self::finish) the footer.
///
/// Each line goes to the file in one `write` of the whole line, newline included,
/// through no user-space buffer, so when `append` returns the step is in the OS's
/// hands; a reader of a file cut anywhere sees every completed step and at most one
/// partial last line.
#[derive(Debug)]
pub struct RecordingWriter {
    path: PathBuf,
    file: File,
    fsync: Fsync,
    num_players: usize,
    next_t: u64,
    line: Vec<u8>,
}

impl RecordingWriter {
    /// Creates (or truncates) `path` and writes the header. `.gz` paths are refused:
    /// a compressed stream is not readable until it is closed, so live files are
    /// plain JSON Lines and compressed afterwards ([`super::gzip_file`]).
    pub fn create(path: &Path, header: &Header, fsync: Fsync) -> Result<Self, RecordingError> {
        if path.extension().is_some_and(|e| e == "gz") {
            return Err(RecordingError::Writer {
                path: path.to_owned(),
                message:
                    "live recordings are written uncompressed (.jsonl); gzip them once finished"
                        .into(),
            });
        }
        let file = File::create(path).map_err(RecordingError::io(path))?;
        let mut w = Self {
            path: path.to_owned(),
            file,
            fsync,
            num_players: header.players.len(),
            next_t: 0,
            line: Vec::with_capacity(4096),
        };
        w.write_line("header", header, fsync != Fsync::Never)?;
        Ok(w)
    }

    /// The file being written.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// How many steps have been appended.
    pub fn steps(&self) -> u64 {
        self.next_t
    }

    /// Appends one step; when it returns `Ok`, the step is durable (see [`Fsync`]).
    /// Steps must come in order (`t` = 0, 1, ...) with one entry per player.
    pub fn append(&mut self, step: &StepRecord) -> Result<(), RecordingError> {
        let refuse = |message: String| RecordingError::Writer {
            path: self.path.clone(),
            message,
        };
        if step.t != self.next_t {
            return Err(refuse(format!(
                "step t = {} appended where t = {} was expected",
                step.t, self.next_t
            )));
        }
        let n = self.num_players;
        if step.a.len() != n || step.e.len() != n || step.r.len() != n {
            return Err(refuse(format!(
                "step {} needs one action, effective action and reward per player ({n})",
                step.t
            )));
        }
        self.write_line("step", step, self.fsync == Fsync::EveryLine)?;
        self.next_t += 1;
        Ok(())
    }

    /// Writes the footer and closes the file. The footer's step count must match.
    pub fn finish(mut self, footer: &Footer) -> Result<PathBuf, RecordingError> {
        if footer.steps != self.next_t {
            return Err(RecordingError::Writer {
                path: self.path.clone(),
                message: format!(
                    "footer says {} steps but {} were appended",
                    footer.steps, self.next_t
                ),
            });
        }
        self.write_line("footer", footer, self.fsync != Fsync::Never)?;
        Ok(self.path)
    }

    fn write_line<T: Serialize>(
        &mut self,
        kind: &str,
        value: &T,
        sync: bool,
    ) -> Result<(), RecordingError> {
        self.line.clear();
        // `kind` goes first, so a person (or `head -c 100`) sees what each line is;
        // the struct's own fields follow in declaration order.
        let body = serde_json::to_vec(value).map_err(|e| RecordingError::Writer {
            path: self.path.clone(),
            message: format!("{kind} does not serialise: {e}"),
        })?;
        self.line.extend_from_slice(b"{\"kind\":\"");
        self.line.extend_from_slice(kind.as_bytes());
        self.line.extend_from_slice(b"\",");
        self.line.extend_from_slice(&body[1..]);
        self.line.push(b'\n');
        let io = RecordingError::io(&self.path);
        self.file.write_all(&self.line).map_err(io)?;
        if sync {
            self.file
                .sync_data()
                .map_err(RecordingError::io(&self.path))?;
        }
        Ok(())
    }
}

/// Compresses a finished recording to `dst` (`.jsonl.gz`), for archiving.
pub fn gzip_file(src: &Path, dst: &Path) -> Result<(), RecordingError> {
    let mut input = File::open(src).map_err(RecordingError::io(src))?;
    let out = File::create(dst).map_err(RecordingError::io(dst))?;
    let mut gz = flate2::write::GzEncoder::new(out, flate2::Compression::default());
    std::io::copy(&mut input, &mut gz).map_err(RecordingError::io(dst))?;
    gz.finish().map_err(RecordingError::io(dst))?;
    Ok(())
}
