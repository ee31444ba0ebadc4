//! Who may connect to the agent's listeners: the Minecraft clients a mission is
//! served by, and nobody else. Without this filter any host that can reach the
//! listeners could feed the daemon observations, and so steer what is recorded
//! as a person's actions.

use std::net::{IpAddr, UdpSocket};

use super::client::ClientAddr;

/// The peer addresses admitted to a mission's listeners.
///
/// A peer is admitted when its IP is one of the clients' (as their host names
/// resolve), or when it connected from this machine to itself (source address
/// equal to the listener's own address) and one of the clients runs on this
/// machine: a local Minecraft reaching a non-loopback agent address, or a
/// client named by a LAN address reaching loopback, shows up that way. Another
/// loopback address (127.0.0.2 for a client at 127.0.0.1) is a different peer.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PeerFilter {
    clients: Vec<IpAddr>,
    local_client: bool,
}

impl PeerFilter {
    /// A filter admitting the clients at `ips`.
    pub fn new(ips: impl IntoIterator<Item = IpAddr>) -> Self {
        let mut clients: Vec<IpAddr> = ips.into_iter().map(|ip| ip.to_canonical()).collect();
        clients.sort();
        clients.dedup();
        let local_client = clients.iter().any(|&ip| is_this_machine(ip));
        Self {
            clients,
            local_client,
        }
    }

    /// A filter for `clients`, resolving their host names. A host that does not
    /// resolve is left out with a warning: no connection can come from it, and
    /// handing it the MissionInit fails with its own error.
    pub async fn resolve(clients: &[ClientAddr]) -> Self {
        let mut ips = Vec::new();
        for client in clients {
            match tokio::net::lookup_host((client.host.as_str(), client.control_port)).await {
                Ok(found) => ips.extend(found.map(|a| a.ip())),
                Err(e) => log::warn!("cannot resolve the Minecraft client {client}: {e}"),
            }
        }
        Self::new(ips)
    }

    /// The admitted client IPs, sorted.
    pub fn clients(&self) -> &[IpAddr] {
        &self.clients
    }

    /// Whether a connection from `peer` accepted on the local address `local`
    /// is admitted.
    pub fn admits(&self, peer: IpAddr, local: IpAddr) -> bool {
        let peer = peer.to_canonical();
        self.clients.contains(&peer) || (self.local_client && peer == local.to_canonical())
    }
}

/// Whether `ip` is an address of this machine: loopback, or one a socket can be
/// bound to (binding a UDP socket sends nothing).
fn is_this_machine(ip: IpAddr) -> bool {
    ip.is_loopback() || UdpSocket::bind((ip, 0)).is_ok()
}

#[cfg(test)]
mod tests {
    use std::net::{Ipv4Addr, Ipv6Addr};

    use super::*;

    const HOME: IpAddr = IpAddr::V4(Ipv4Addr::LOCALHOST);
    const OTHER_LOOPBACK: IpAddr = IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2));
    // TEST-NET-3: documentation addresses, never local.
    const REMOTE: IpAddr = IpAddr::V4(Ipv4Addr::new(203, 0, 113, 7));
    const STRANGER: IpAddr = IpAddr::V4(Ipv4Addr::new(203, 0, 113, 9));

    #[test]
    fn a_local_client_admits_itself_and_no_other_loopback_address() {
        let filter = PeerFilter::new([HOME]);
        assert!(filter.admits(HOME, HOME));
        assert!(!filter.admits(OTHER_LOOPBACK, HOME));
        assert!(!filter.admits(STRANGER, HOME));
    }

    #[test]
    fn ipv4_mapped_peers_count_as_their_ipv4_address() {
        let filter = PeerFilter::new([HOME]);
        let mapped = IpAddr::V6(Ipv4Addr::LOCALHOST.to_ipv6_mapped());
        assert!(filter.admits(mapped, IpAddr::V6(Ipv6Addr::UNSPECIFIED)));
    }

    #[test]
    fn a_remote_client_admits_only_its_address() {
        let filter = PeerFilter::new([REMOTE]);
        assert!(filter.admits(REMOTE, HOME));
        assert!(!filter.admits(STRANGER, HOME));
        // Nothing runs here, so a connection from this machine is a stranger's.
        assert!(!filter.admits(HOME, HOME));
    }

    #[test]
    fn a_local_client_reaching_a_lan_address_is_admitted() {
        // The client is named 127.0.0.1 but the agent listens on a LAN address
        // of this machine: the mod's connection comes from that same address.
        let filter = PeerFilter::new([HOME]);
        assert!(filter.admits(STRANGER, STRANGER));
        assert!(!filter.admits(REMOTE, STRANGER));
    }

    #[test]
    fn nobody_is_admitted_without_clients() {
        let filter = PeerFilter::default();
        assert!(!filter.admits(HOME, HOME));
    }

    #[tokio::test]
    async fn host_names_resolve_to_their_addresses() {
        let filter = PeerFilter::resolve(&[ClientAddr::new("127.0.0.1", 10000)]).await;
        assert_eq!(filter.clients(), [HOME]);
    }
}
