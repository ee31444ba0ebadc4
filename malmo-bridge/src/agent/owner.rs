//! Which process holds the other end of a connection, so that on this
//! machine only the Minecraft client's own process reaches a mission's
//! listeners. The address filter ([`super::peers::PeerFilter`]) cannot tell
//! a stranger on the same machine from the client: both connect from
//! 127.0.0.1, and either could end an episode with a forged MissionEnded.
//!
//! The client is the process listening on the control port the daemon hands
//! the MissionInit to; a connection is the client's when its socket (found in
//! `/proc/net/tcp` by its two addresses) is among that process's open files.
//! Linux only: elsewhere, or where `/proc` cannot tell, nothing is known and
//! the address filter alone applies.

use std::net::SocketAddr;

/// The processes of this machine that may connect to a mission's listeners.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Owners {
    pids: Vec<u32>,
}

impl Owners {
    /// The processes listening on `ports` (TCP, any local address); `None`
    /// when that cannot be told: not Linux, `/proc` unreadable, or a port
    /// that no process visible here listens on.
    pub fn listening_on(ports: &[u16]) -> Option<Self> {
        imp::listening_on(ports).map(|pids| Self { pids })
    }

    /// The owners are exactly `pids` (for tests and callers that started
    /// the client themselves).
    pub fn of(pids: impl IntoIterator<Item = u32>) -> Self {
        Self {
            pids: pids.into_iter().collect(),
        }
    }

    /// The process ids.
    pub fn pids(&self) -> &[u32] {
        &self.pids
    }

    /// Whether the connection from `peer` to `local` (both on this machine)
    /// belongs to one of the owners: `Some(false)` when another process holds
    /// its other end, `None` when that cannot be told (`/proc` unreadable, or
    /// the peer already closed its end: a client that writes one message and
    /// closes does so).
    pub fn own(&self, peer: SocketAddr, local: SocketAddr) -> Option<bool> {
        imp::own(&self.pids, peer, local)
    }
}

#[cfg(target_os = "linux")]
mod imp {
    use std::collections::HashSet;
    use std::net::SocketAddr;

    use procfs::net::{TcpNetEntry, TcpState};
    use procfs::process::{FDTarget, Process};

    /// Every TCP socket of this network namespace, IPv4 and IPv6.
    fn sockets() -> Option<Vec<TcpNetEntry>> {
        let mut all = procfs::net::tcp().ok()?;
        // A machine without IPv6 has no tcp6 table: not an error.
        all.extend(procfs::net::tcp6().unwrap_or_default());
        Some(all)
    }

    /// The same address, an IPv4-mapped IPv6 one counted as its IPv4.
    fn same(a: SocketAddr, b: SocketAddr) -> bool {
        a.port() == b.port() && a.ip().to_canonical() == b.ip().to_canonical()
    }

    /// The socket inodes among `process`'s open files.
    fn socket_inodes(process: &Process) -> HashSet<u64> {
        process
            .fd()
            .map(|fds| {
                fds.filter_map(Result::ok)
                    .filter_map(|fd| match fd.target {
                        FDTarget::Socket(inode) => Some(inode),
                        _ => None,
                    })
                    .collect()
            })
            .unwrap_or_default()
    }

    pub fn listening_on(ports: &[u16]) -> Option<Vec<u32>> {
        let sockets = sockets()?;
        let mut wanted: HashSet<u64> = HashSet::new();
        for &port in ports {
            let before = wanted.len();
            wanted.extend(
                sockets
                    .iter()
                    .filter(|s| s.state == TcpState::Listen && s.local_address.port() == port)
                    .map(|s| s.inode),
            );
            if wanted.len() == before {
                return None;
            }
        }
        let mut pids = Vec::new();
        let mut found = HashSet::new();
        for process in procfs::process::all_processes()
            .ok()?
            .filter_map(Result::ok)
        {
            let held: Vec<u64> = socket_inodes(&process)
                .intersection(&wanted)
                .copied()
                .collect();
            if !held.is_empty() {
                pids.push(process.pid as u32);
                found.extend(held);
            }
        }
        // Every port's listener must be seen in some process (one of another
        // user, whose files cannot be read, leaves it unknown).
        (found.len() == wanted.len()).then_some(pids)
    }

    pub fn own(pids: &[u32], peer: SocketAddr, local: SocketAddr) -> Option<bool> {
        let sockets = sockets()?;
        // The peer's end: its local address is the peer, its remote ours. A
        // connection already closed on its side has no entry, or one with no
        // inode (TIME_WAIT): nobody holds it any more, so nobody can be named.
        let inode = sockets
            .iter()
            .find(|s| same(s.local_address, peer) && same(s.remote_address, local))
            .map(|s| s.inode)
            .filter(|&inode| inode != 0)?;
        for &pid in pids {
            let Ok(process) = Process::new(pid as i32) else {
                continue;
            };
            if socket_inodes(&process).contains(&inode) {
                return Some(true);
            }
        }
        // Not an owner's: refused only when another process is seen holding
        // it (an owner that wrote and closed at once holds it no longer).
        let held_elsewhere = procfs::process::all_processes()
            .ok()?
            .filter_map(Result::ok)
            .any(|process| socket_inodes(&process).contains(&inode));
        held_elsewhere.then_some(false)
    }
}

#[cfg(not(target_os = "linux"))]
mod imp {
    use std::net::SocketAddr;

    pub fn listening_on(_ports: &[u16]) -> Option<Vec<u32>> {
        None
    }

    pub fn own(_pids: &[u32], _peer: SocketAddr, _local: SocketAddr) -> Option<bool> {
        None
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use std::net::{TcpListener, TcpStream};

    use super::*;

    #[test]
    fn this_process_owns_its_own_connections_and_not_anothers() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let owners = Owners::listening_on(&[port]).expect("this process listens there");
        assert_eq!(owners.pids(), [std::process::id()]);
        let client = TcpStream::connect(("127.0.0.1", port)).unwrap();
        let (_accepted, peer) = listener.accept().unwrap();
        let local = listener.local_addr().unwrap();
        assert_eq!(client.local_addr().unwrap(), peer);
        assert_eq!(owners.own(peer, local), Some(true));
        // The same connection, said to be another process's: held by this
        // one, it is refused.
        assert_eq!(Owners::of([u32::MAX]).own(peer, local), Some(false));
        // A connection that is not (or no longer) in the table.
        drop(client);
        let gone: SocketAddr = "127.0.0.1:1".parse().unwrap();
        assert_eq!(owners.own(gone, local), None);
    }

    #[test]
    fn a_port_nobody_listens_on_is_unknown() {
        let port = {
            let l = TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap().port()
        };
        assert_eq!(Owners::listening_on(&[port]), None);
    }
}
