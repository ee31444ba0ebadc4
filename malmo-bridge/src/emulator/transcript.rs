//! A record of what agents sent the emulated clients: every control exchange
//! (the request line and the reply, if any) and every command line, in the order
//! the clients handled them. Differential tests run two agents through one
//! scenario and compare their transcripts (`tests/integration/malmopython_peer.rs`
//! of the `mbag` crate); `mbag malmo emulator --transcript FILE` writes one.

use std::fmt;
use std::io::Write;
use std::sync::{Arc, Mutex, MutexGuard};

use serde::{Deserialize, Serialize};

/// Where an agent's line arrived.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TranscriptChannel {
    /// The client's mission-control port: one request, at most one reply.
    Control,
    /// The client's commands port: command lines, never answered.
    Commands,
}

/// One line an agent sent to an emulated client, and the client's reply.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TranscriptEntry {
    /// The client's index in the pool.
    pub client: usize,
    /// The port it arrived on.
    pub channel: TranscriptChannel,
    /// The line as received, without its `\n` (lossy UTF-8).
    pub received: String,
    /// The control reply's body; `None` for commands and for control lines the
    /// mod closes without answering.
    pub reply: Option<String>,
}

/// Where a [`Transcript`] keeps its entries.
enum Sink {
    Memory(Vec<TranscriptEntry>),
    /// JSON lines, flushed per entry so that another process can follow them.
    Writer(Box<dyn Write + Send>),
}

/// A shared recorder of [`TranscriptEntry`]s, handed to the emulator in
/// [`EmulatorConfig::transcript`](super::EmulatorConfig::transcript). Clones
/// record into the same transcript.
#[derive(Clone)]
pub struct Transcript(Arc<Mutex<Sink>>);

impl fmt::Debug for Transcript {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &*self.lock() {
            Sink::Memory(entries) => write!(f, "Transcript({} entries)", entries.len()),
            Sink::Writer(_) => f.write_str("Transcript(writer)"),
        }
    }
}

impl Default for Transcript {
    fn default() -> Self {
        Self::in_memory()
    }
}

impl Transcript {
    /// A transcript kept in memory; read it with [`Transcript::entries`].
    pub fn in_memory() -> Self {
        Self(Arc::new(Mutex::new(Sink::Memory(Vec::new()))))
    }

    /// A transcript written to `writer` as JSON lines (one [`TranscriptEntry`]
    /// each), flushed after every entry; nothing is kept in memory, so a
    /// long-running emulator does not grow.
    pub fn to_writer(writer: impl Write + Send + 'static) -> Self {
        Self(Arc::new(Mutex::new(Sink::Writer(Box::new(writer)))))
    }

    fn lock(&self) -> MutexGuard<'_, Sink> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The entries so far (always empty for a transcript written to a writer).
    pub fn entries(&self) -> Vec<TranscriptEntry> {
        match &*self.lock() {
            Sink::Memory(entries) => entries.clone(),
            Sink::Writer(_) => Vec::new(),
        }
    }

    /// Adds an entry. A writer that fails is logged and otherwise ignored: the
    /// transcript must never stop a mission.
    pub(crate) fn record(&self, entry: TranscriptEntry) {
        match &mut *self.lock() {
            Sink::Memory(entries) => entries.push(entry),
            Sink::Writer(writer) => {
                let written = serde_json::to_writer(&mut *writer, &entry)
                    .map_err(std::io::Error::other)
                    .and_then(|()| writer.write_all(b"\n"))
                    .and_then(|()| writer.flush());
                if let Err(e) = written {
                    log::warn!("writing the transcript: {e}");
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_are_json_lines_with_lower_case_channels() {
        let entry = TranscriptEntry {
            client: 1,
            channel: TranscriptChannel::Control,
            received: "MALMO_FIND_SERVERx".into(),
            reply: Some("MALMONOSERVER".into()),
        };
        let text = serde_json::to_string(&entry).unwrap();
        assert_eq!(
            text,
            r#"{"client":1,"channel":"control","received":"MALMO_FIND_SERVERx","reply":"MALMONOSERVER"}"#
        );
        assert_eq!(
            serde_json::from_str::<TranscriptEntry>(&text).unwrap(),
            entry
        );
        let memory = Transcript::in_memory();
        memory.clone().record(entry.clone());
        assert_eq!(memory.entries(), vec![entry]);
    }
}
