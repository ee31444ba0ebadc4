//! Reading a recording, whole or cut short.

use std::io::Read;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde::de::DeserializeOwned;

use super::error::RecordingError;
use super::footer::Footer;
use super::header::{FORMAT, Header};
use super::step::StepRecord;

/// The unreadable end of a file whose writer stopped mid-line (a crash or
/// `kill -9`): every line before it is intact.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TruncatedTail {
    /// 1-based line number of the partial line.
    pub line: usize,
    /// How many bytes of it there are.
    pub bytes: usize,
    /// Why it is unreadable.
    pub reason: String,
}

/// A recording as read: header, the steps, and how it ended.
#[derive(Clone, Debug)]
pub struct Recording {
    /// Where it was read from.
    pub path: PathBuf,
    /// The header.
    pub header: Header,
    /// The complete steps, in order.
    pub steps: Vec<StepRecord>,
    /// 1-based line number of each step.
    pub step_lines: Vec<usize>,
    /// The footer; `None` when the writer never finished.
    pub footer: Option<Footer>,
    /// The partial last line, if the file was cut.
    pub tail: Option<TruncatedTail>,
}

#[derive(Deserialize)]
struct KindOnly {
    kind: Option<String>,
}

fn parse<T: DeserializeOwned>(path: &Path, line: usize, text: &[u8]) -> Result<T, RecordingError> {
    let mut de = serde_json::Deserializer::from_slice(text);
    serde_path_to_error::deserialize(&mut de).map_err(|e| {
        let field = e.path().to_string();
        RecordingError::field(
            path,
            line,
            if field == "." { String::new() } else { field },
            e.into_inner(),
        )
    })
}

impl Recording {
    /// Reads a `.jsonl` or `.jsonl.gz` recording. A last line cut mid-write is
    /// reported in [`Recording::tail`], not as an error; anything else that is
    /// wrong is an error naming the line and field.
    pub fn read(path: &Path) -> Result<Self, RecordingError> {
        let mut file = std::fs::File::open(path).map_err(RecordingError::io(path))?;
        let mut bytes = Vec::new();
        let mut gzip_cut = None;
        if path.extension().is_some_and(|e| e == "gz") {
            // A cut gzip stream still yields everything before the cut;
            // `read_to_end` keeps it in `bytes` when it fails.
            let mut gz = flate2::read::GzDecoder::new(file);
            if let Err(e) = gz.read_to_end(&mut bytes) {
                if e.kind() == std::io::ErrorKind::UnexpectedEof {
                    gzip_cut = Some(e.to_string());
                } else {
                    return Err(RecordingError::io(path)(e));
                }
            }
        } else {
            file.read_to_end(&mut bytes)
                .map_err(RecordingError::io(path))?;
        }
        Self::parse(path, &bytes, gzip_cut)
    }

    /// Parses the bytes of a recording (see [`Recording::read`]).
    pub fn parse(
        path: &Path,
        bytes: &[u8],
        gzip_cut: Option<String>,
    ) -> Result<Self, RecordingError> {
        let structure = |line: usize, message: String| RecordingError::Structure {
            path: path.to_owned(),
            line,
            message,
        };
        let mut header: Option<Header> = None;
        let mut steps = Vec::new();
        let mut step_lines = Vec::new();
        let mut footer = None;
        let mut tail = None;
        let mut pieces = bytes.split(|&b| b == b'\n').enumerate().peekable();
        while let Some((i, text)) = pieces.next() {
            let line = i + 1;
            let last = pieces.peek().is_none();
            if text.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            let kind = match parse::<KindOnly>(path, line, text) {
                Ok(k) => k.kind,
                // Only the final piece (no newline after it) can be a cut line.
                Err(e) if last => {
                    tail = Some(TruncatedTail {
                        line,
                        bytes: text.len(),
                        reason: e.to_string(),
                    });
                    break;
                }
                Err(e) => return Err(e),
            };
            if footer.is_some() {
                return Err(structure(line, "a line after the footer".into()));
            }
            match kind.as_deref() {
                Some("header") if header.is_none() => {
                    let h: Header = parse(path, line, text)?;
                    if h.format != FORMAT {
                        return Err(RecordingError::field(
                            path,
                            line,
                            "format",
                            format!(
                                "{:?} is not supported (this mbag reads {FORMAT:?})",
                                h.format
                            ),
                        ));
                    }
                    header = Some(h);
                }
                Some("header") => return Err(structure(line, "a second header".into())),
                Some(_) if header.is_none() => {
                    return Err(structure(line, "the first line is not the header".into()));
                }
                Some("step") => {
                    let s: StepRecord = parse(path, line, text)?;
                    let n = header.as_ref().map_or(0, |h| h.players.len());
                    if s.t != steps.len() as u64 {
                        return Err(RecordingError::field(
                            path,
                            line,
                            "t",
                            format!(
                                "{} where {} was expected (steps must be consecutive from 0)",
                                s.t,
                                steps.len()
                            ),
                        ));
                    }
                    for (name, len) in [("a", s.a.len()), ("e", s.e.len()), ("r", s.r.len())] {
                        if len != n {
                            return Err(RecordingError::field(
                                path,
                                line,
                                name,
                                format!("{len} entries, expected one per player ({n})"),
                            ));
                        }
                    }
                    if let Some(m) = s.chat.iter().flatten().find(|m| m.speaker >= n) {
                        return Err(RecordingError::field(
                            path,
                            line,
                            "chat",
                            format!("a message from player {} of {n} ({:?})", m.speaker, m.text),
                        ));
                    }
                    steps.push(s);
                    step_lines.push(line);
                }
                Some("footer") => footer = Some(parse::<Footer>(path, line, text)?),
                Some(other) => {
                    return Err(RecordingError::field(
                        path,
                        line,
                        "kind",
                        format!("unknown line kind {other:?}"),
                    ));
                }
                None => return Err(RecordingError::field(path, line, "kind", "missing")),
            }
        }
        if let Some(reason) = gzip_cut
            && tail.is_none()
        {
            tail = Some(TruncatedTail {
                line: step_lines.last().map_or(2, |l| l + 1),
                bytes: 0,
                reason,
            });
        }
        let header = header.ok_or_else(|| {
            structure(
                1,
                "no complete header line (an empty file, or cut in its first line)".into(),
            )
        })?;
        if let Some(f) = &footer
            && f.steps != steps.len() as u64
        {
            return Err(RecordingError::field(
                path,
                step_lines.last().map_or(2, |l| l + 1),
                "steps",
                format!(
                    "the footer says {} steps, the file holds {}",
                    f.steps,
                    steps.len()
                ),
            ));
        }
        Ok(Self {
            path: path.to_owned(),
            header,
            steps,
            step_lines,
            footer,
            tail,
        })
    }
}

/// Lists recordings: files as given, folders expanded (recursively) to their
/// `*.jsonl` / `*.jsonl.gz` files, sorted.
pub fn collect_files(paths: &[PathBuf]) -> Result<Vec<PathBuf>, RecordingError> {
    crate::jsonl::collect_files(paths).map_err(|(path, e)| RecordingError::io(&path)(e))
}
