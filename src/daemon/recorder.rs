//! The recording writer on its own thread, so that file writes (and, when asked
//! for, `fsync`) never block the lockstep loop's tasks.
//!
//! Steps reach the file in order; each is in the operating system's hands as soon
//! as the thread has written it (see [`RecordingWriter`]), so a crash of the
//! daemon loses at most the steps still queued here (one, in practice: the loop
//! hands over a step as soon as it is complete).

use std::path::PathBuf;
use std::thread::{self, JoinHandle};

use tokio::sync::{mpsc, oneshot};

use crate::recording::{Footer, RecordingError, RecordingWriter, StepRecord};

/// Steps that may wait for the writer.
const CAPACITY: usize = 64;

enum Message {
    Step(Box<StepRecord>),
    Finish(
        Box<Footer>,
        oneshot::Sender<Result<PathBuf, RecordingError>>,
    ),
}

/// The writer thread's handle.
#[derive(Debug)]
pub struct RecorderThread {
    path: PathBuf,
    messages: Option<mpsc::Sender<Message>>,
    /// The first write error, reported by the thread once.
    errors: mpsc::Receiver<RecordingError>,
    thread: Option<JoinHandle<()>>,
}

/// The writer thread has stopped after a write error or cannot keep up.
#[derive(Debug, thiserror::Error)]
pub enum RecorderError {
    /// Writing failed.
    #[error(transparent)]
    Write(#[from] RecordingError),
    /// The thread is gone.
    #[error("the recording writer for {0} has stopped")]
    Stopped(PathBuf),
}

impl RecorderThread {
    /// Starts the thread with a writer whose header is already written.
    pub fn spawn(writer: RecordingWriter) -> std::io::Result<Self> {
        let path = writer.path().to_owned();
        let (messages, inbox) = mpsc::channel(CAPACITY);
        let (error_tx, errors) = mpsc::channel(1);
        let thread = thread::Builder::new()
            .name("recorder".into())
            .spawn(move || write_all(writer, inbox, error_tx))?;
        Ok(Self {
            path,
            messages: Some(messages),
            errors,
            thread: Some(thread),
        })
    }

    /// The file being written.
    pub fn path(&self) -> &std::path::Path {
        &self.path
    }

    /// Hands a step to the writer; fails if an earlier write failed.
    pub async fn append(&mut self, step: StepRecord) -> Result<(), RecorderError> {
        if let Ok(e) = self.errors.try_recv() {
            return Err(e.into());
        }
        let messages = self.messages.as_ref().ok_or(self.stopped())?;
        messages
            .send(Message::Step(Box::new(step)))
            .await
            .map_err(|_| self.stopped())
    }

    /// Writes the footer after every queued step and closes the file.
    pub async fn finish(mut self, footer: Footer) -> Result<PathBuf, RecorderError> {
        if let Ok(e) = self.errors.try_recv() {
            return Err(e.into());
        }
        let (reply, answer) = oneshot::channel();
        let messages = self.messages.take().ok_or(self.stopped())?;
        messages
            .send(Message::Finish(Box::new(footer), reply))
            .await
            .map_err(|_| self.stopped())?;
        drop(messages);
        let result = answer.await.map_err(|_| self.stopped())?;
        Ok(result?)
    }

    fn stopped(&self) -> RecorderError {
        RecorderError::Stopped(self.path.clone())
    }
}

impl Drop for RecorderThread {
    fn drop(&mut self) {
        // Closing the channel lets the thread write what is queued and stop; it
        // is not joined here, because drop may run inside an async task.
        self.messages = None;
        drop(self.thread.take());
    }
}

fn write_all(
    mut writer: RecordingWriter,
    mut inbox: mpsc::Receiver<Message>,
    errors: mpsc::Sender<RecordingError>,
) {
    while let Some(message) = inbox.blocking_recv() {
        match message {
            Message::Step(step) => {
                if let Err(e) = writer.append(&step) {
                    log::error!("recording {}: {e}", writer.path().display());
                    let _ = errors.try_send(e);
                    return;
                }
            }
            Message::Finish(footer, reply) => {
                let _ = reply.send(writer.finish(&footer));
                return;
            }
        }
    }
}
