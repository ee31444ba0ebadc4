//! Talking to one Minecraft client's mission-control port: one request line, one
//! length-prefixed reply, one connection per exchange.

use std::fmt;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::control::{ControlReply, ControlRequest};
use crate::frame::{FrameDecoder, encode_line};

use super::error::ContactError;

/// MalmoPython refuses control replies longer than this.
pub const MAX_REPLY_LEN: usize = 1024;

/// The MBAG fork puts a client's commands port this far above its control port.
pub const COMMANDS_PORT_OFFSET: u16 = 1000;

/// The first control port of a local MBAG pool (`10000 + i` for client i).
pub const DEFAULT_CONTROL_PORT: u16 = 10000;

/// Where one Minecraft client listens for mission control.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ClientAddr {
    /// Host name or address.
    pub host: String,
    /// Its mission-control port.
    pub control_port: u16,
}

impl ClientAddr {
    /// A client on `host` at `control_port`.
    pub fn new(host: impl Into<String>, control_port: u16) -> Self {
        Self {
            host: host.into(),
            control_port,
        }
    }

    /// The local pool of `n` clients MBAG launches: `127.0.0.1:10000+i`.
    pub fn local_pool(n: usize) -> Vec<Self> {
        (0..n)
            .map(|i| Self::new("127.0.0.1", DEFAULT_CONTROL_PORT + i as u16))
            .collect()
    }
}

impl fmt::Display for ClientAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.host, self.control_port)
    }
}

impl std::str::FromStr for ClientAddr {
    type Err = String;

    /// Parses `HOST:PORT` (or a bare port, meaning 127.0.0.1).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let (host, port) = match s.rsplit_once(':') {
            Some((h, p)) => (h, p),
            None => ("127.0.0.1", s),
        };
        let port = port
            .parse()
            .map_err(|_| format!("{s:?}: expected HOST:PORT with a port number"))?;
        if host.is_empty() {
            return Err(format!("{s:?}: empty host"));
        }
        Ok(Self::new(host, port))
    }
}

/// Sends one request and reads its reply, all within `deadline`.
pub async fn exchange(
    client: &ClientAddr,
    request: &ControlRequest,
    deadline: Duration,
) -> Result<ControlReply, ContactError> {
    let work = async {
        let mut stream = TcpStream::connect((client.host.as_str(), client.control_port))
            .await
            .map_err(ContactError::Connect)?;
        let mut line = Vec::new();
        encode_line(request.to_string().as_bytes(), &mut line)?;
        stream.write_all(&line).await.map_err(ContactError::Io)?;
        let mut decoder = FrameDecoder::new(MAX_REPLY_LEN);
        let mut buf = [0u8; 512];
        loop {
            if let Some(frame) = decoder.next_frame()? {
                return Ok(ControlReply::parse(&frame));
            }
            let n = stream.read(&mut buf).await.map_err(ContactError::Io)?;
            if n == 0 {
                return Err(ContactError::NoReply);
            }
            decoder.push(&buf[..n]);
        }
    };
    tokio::time::timeout(deadline, work)
        .await
        .unwrap_or(Err(ContactError::Timeout(deadline)))
}
