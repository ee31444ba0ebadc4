//! Sans-IO framing: 4-byte big-endian length-prefixed frames (everything the mod
//! sends, and control replies) and `\n`-terminated lines (everything the agent
//! sends). Feed bytes as they arrive, in any split; take complete messages out.
//!
//! A hostile or corrupt length prefix cannot make the decoder allocate: a declared
//! length above the decoder's limit is an error at once, and the buffer only ever
//! holds bytes that actually arrived.

use std::fmt;

/// A frame or line that breaks the framing rules.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    /// A length prefix declares more bytes than this channel accepts.
    #[error(
        "frame of {len} bytes exceeds the limit of {max} bytes (corrupt or hostile length prefix?)"
    )]
    FrameTooLong {
        /// The declared length.
        len: u64,
        /// The decoder's limit.
        max: usize,
    },
    /// More than the limit arrived without a line terminator.
    #[error("line longer than {max} bytes without a newline")]
    LineTooLong {
        /// The decoder's limit.
        max: usize,
    },
    /// A payload too large for a 32-bit length prefix.
    #[error("payload of {len} bytes does not fit a 32-bit length prefix")]
    PayloadTooLarge {
        /// The payload's length.
        len: usize,
    },
    /// A line to send contains a newline, which would split it in two.
    #[error("a line to send contains a newline at byte {at}")]
    EmbeddedNewline {
        /// Where.
        at: usize,
    },
}

/// Bytes received but not yet consumed, with a read offset so that taking a message
/// does not shift the rest.
#[derive(Default)]
struct Buffer {
    bytes: Vec<u8>,
    start: usize,
}

impl Buffer {
    fn push(&mut self, data: &[u8]) {
        // Reclaim consumed space before growing.
        if self.start > 0 && self.start >= self.bytes.len() / 2 {
            self.bytes.drain(..self.start);
            self.start = 0;
        }
        self.bytes.extend_from_slice(data);
    }

    fn pending(&self) -> &[u8] {
        &self.bytes[self.start..]
    }

    fn take(&mut self, skip: usize, len: usize) -> Vec<u8> {
        let from = self.start + skip;
        let out = self.bytes[from..from + len].to_vec();
        self.start = from + len;
        if self.start == self.bytes.len() {
            self.bytes.clear();
            self.start = 0;
        }
        out
    }
}

/// Decodes length-prefixed frames from a byte stream.
pub struct FrameDecoder {
    buffer: Buffer,
    max_len: usize,
}

impl fmt::Debug for FrameDecoder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FrameDecoder")
            .field("buffered", &self.buffered())
            .field("max_len", &self.max_len)
            .finish()
    }
}

impl FrameDecoder {
    /// A decoder that refuses frames longer than `max_len` bytes.
    pub fn new(max_len: usize) -> Self {
        Self {
            buffer: Buffer::default(),
            max_len,
        }
    }

    /// Queues received bytes.
    pub fn push(&mut self, data: &[u8]) {
        self.buffer.push(data);
    }

    /// How many received bytes are not yet part of a returned frame.
    pub fn buffered(&self) -> usize {
        self.buffer.pending().len()
    }

    /// The next complete frame's payload, `None` if more bytes are needed. After an
    /// error the stream is out of step and the connection should be dropped.
    pub fn next_frame(&mut self) -> Result<Option<Vec<u8>>, FrameError> {
        let pending = self.buffer.pending();
        let Some(header) = pending.first_chunk::<4>() else {
            return Ok(None);
        };
        let len = u32::from_be_bytes(*header) as usize;
        if len > self.max_len {
            return Err(FrameError::FrameTooLong {
                len: len as u64,
                max: self.max_len,
            });
        }
        if pending.len() < 4 + len {
            return Ok(None);
        }
        Ok(Some(self.buffer.take(4, len)))
    }
}

/// Appends a length-prefixed frame to `out`.
pub fn encode_frame(payload: &[u8], out: &mut Vec<u8>) -> Result<(), FrameError> {
    let len = u32::try_from(payload.len())
        .map_err(|_| FrameError::PayloadTooLarge { len: payload.len() })?;
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(payload);
    Ok(())
}

/// Decodes `\n`-terminated lines from a byte stream.
pub struct LineDecoder {
    buffer: Buffer,
    /// Bytes of the pending data already known to hold no newline.
    scanned: usize,
    max_len: usize,
}

impl fmt::Debug for LineDecoder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LineDecoder")
            .field("buffered", &self.buffered())
            .field("max_len", &self.max_len)
            .finish()
    }
}

impl LineDecoder {
    /// A decoder that refuses lines longer than `max_len` bytes (the mod allows
    /// 10,000,000 characters).
    pub fn new(max_len: usize) -> Self {
        Self {
            buffer: Buffer::default(),
            scanned: 0,
            max_len,
        }
    }

    /// Queues received bytes.
    pub fn push(&mut self, data: &[u8]) {
        self.buffer.push(data);
    }

    /// How many received bytes are not yet part of a returned line.
    pub fn buffered(&self) -> usize {
        self.buffer.pending().len()
    }

    /// The next complete line without its `\n` (a `\r` is kept, as the mod keeps
    /// it), `None` if more bytes are needed.
    pub fn next_line(&mut self) -> Result<Option<Vec<u8>>, FrameError> {
        let pending = self.buffer.pending();
        match pending[self.scanned..].iter().position(|&b| b == b'\n') {
            Some(at) => {
                let len = self.scanned + at;
                if len > self.max_len {
                    return Err(FrameError::LineTooLong { max: self.max_len });
                }
                self.scanned = 0;
                let line = self.buffer.take(0, len);
                // Skip the terminator.
                self.buffer.take(0, 1);
                Ok(Some(line))
            }
            None => {
                self.scanned = pending.len();
                if self.scanned > self.max_len {
                    return Err(FrameError::LineTooLong { max: self.max_len });
                }
                Ok(None)
            }
        }
    }
}

/// Appends `line` and its `\n` terminator to `out`.
pub fn encode_line(line: &[u8], out: &mut Vec<u8>) -> Result<(), FrameError> {
    if let Some(at) = line.iter().position(|&b| b == b'\n') {
        return Err(FrameError::EmbeddedNewline { at });
    }
    out.extend_from_slice(line);
    out.push(b'\n');
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_survive_one_byte_segments_and_split_headers() {
        let mut wire = Vec::new();
        encode_frame(b"MALMOOK", &mut wire).unwrap();
        encode_frame(b"", &mut wire).unwrap();
        encode_frame(b"{\"a\":1}", &mut wire).unwrap();
        let mut decoder = FrameDecoder::new(1024);
        let mut got = Vec::new();
        for byte in &wire {
            decoder.push(std::slice::from_ref(byte));
            while let Some(frame) = decoder.next_frame().unwrap() {
                got.push(frame);
            }
        }
        assert_eq!(
            got,
            vec![b"MALMOOK".to_vec(), Vec::new(), b"{\"a\":1}".to_vec()]
        );
        assert_eq!(decoder.buffered(), 0);
    }

    #[test]
    fn a_hostile_length_prefix_is_refused_before_any_body_arrives() {
        let mut decoder = FrameDecoder::new(1 << 20);
        decoder.push(&[0xff, 0xff, 0xff, 0xff]);
        assert_eq!(
            decoder.next_frame(),
            Err(FrameError::FrameTooLong {
                len: u32::MAX as u64,
                max: 1 << 20
            })
        );
        assert_eq!(decoder.buffered(), 4);
    }

    #[test]
    fn lines_keep_carriage_returns_and_refuse_overlong_input() {
        let mut decoder = LineDecoder::new(8);
        decoder.push(b"move 1\r\nturn");
        assert_eq!(decoder.next_line().unwrap(), Some(b"move 1\r".to_vec()));
        assert_eq!(decoder.next_line().unwrap(), None);
        decoder.push(b" 0.5\n");
        assert_eq!(decoder.next_line().unwrap(), Some(b"turn 0.5".to_vec()));
        decoder.push(b"123456789");
        assert_eq!(decoder.next_line(), Err(FrameError::LineTooLong { max: 8 }));
        assert!(encode_line(b"a\nb", &mut Vec::new()).is_err());
    }
}
