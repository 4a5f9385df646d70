//! Who is at the other end of a loopback TCP connection, from the kernel's
//! socket tables.
//!
//! # Why
//!
//! A Unix socket says who connected (`SO_PEERCRED`); a TCP socket does not,
//! and a loopback port is open to every user on the machine. Two attacks
//! used that: another user who squatted the port a stopped server had
//! recorded received the user's bearer token from `toolgate doctor` and
//! `install --http` (and answered 200, so they reported ok); and another
//! user who held every connection slot of the user's HTTP listener left the
//! user's own agent without an answer (blocked, not let through, but the
//! guard was down). The kernel knows who owns each socket: `/proc/net/tcp`
//! and `/proc/net/tcp6` list every TCP socket of this network namespace
//! with its local and remote address and its owner's uid. A connection's
//! two ends are two rows; the row of the *other* end (local and remote
//! swapped) names the peer's uid. Looked up once per connection, not per
//! request; an end that cannot be found (gone, another namespace) is not
//! this user's (closed world).
//!
//! The alternative, a challenge bound to the token file, needs a round trip
//! and a protocol of toolgate's own before the agent's first request, which
//! Claude Code's http hook cannot take part in.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

/// The uid owning the socket whose local address is `local` and remote
/// address `remote`, or `None` when no such socket is listed.
pub(crate) fn owner(local: SocketAddr, remote: SocketAddr) -> Option<u32> {
    ["/proc/net/tcp", "/proc/net/tcp6"]
        .iter()
        .find_map(|table| {
            let text = std::fs::read_to_string(table).ok()?;
            text.lines().skip(1).find_map(|row| {
                let fields: Vec<&str> = row.split_whitespace().collect();
                let (here, there, uid) = (fields.get(1)?, fields.get(2)?, fields.get(7)?);
                (address(here)? == local && address(there)? == remote)
                    .then(|| uid.parse().ok())
                    .flatten()
            })
        })
}

/// The uid of the process at the other end of a connection whose own end
/// is `ours` and other end `theirs`.
pub(crate) fn peer_uid(ours: SocketAddr, theirs: SocketAddr) -> Option<u32> {
    owner(theirs, ours)
}

/// `0100007F:1F90` (IPv4) or 32 hex digits and a port (IPv6): each 32-bit
/// word as the kernel holds it in memory, printed as a native integer.
fn address(field: &str) -> Option<SocketAddr> {
    let (ip, port) = field.split_once(':')?;
    let port = u16::from_str_radix(port, 16).ok()?;
    let word = |hex: &str| u32::from_str_radix(hex, 16).ok().map(u32::to_ne_bytes);
    let ip = match ip.len() {
        8 => IpAddr::V4(Ipv4Addr::from(word(ip)?)),
        32 => {
            let mut bytes = [0u8; 16];
            for (i, chunk) in bytes.chunks_mut(4).enumerate() {
                chunk.copy_from_slice(&word(ip.get(i * 8..i * 8 + 8)?)?);
            }
            let v6 = Ipv6Addr::from(bytes);
            // A v4 peer of a dual-stack socket is listed in its mapped form.
            v6.to_ipv4_mapped().map_or(IpAddr::V6(v6), IpAddr::V4)
        }
        _ => return None,
    };
    Some(SocketAddr::new(ip, port))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_kernel_names_this_process_as_both_ends_of_its_own_connection() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let client = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (server, _) = listener.accept().unwrap();
        let me = nix::unistd::geteuid().as_raw();
        let (ours, theirs) = (server.local_addr().unwrap(), server.peer_addr().unwrap());
        assert_eq!(peer_uid(ours, theirs), Some(me));
        assert_eq!(
            peer_uid(client.local_addr().unwrap(), client.peer_addr().unwrap()),
            Some(me)
        );
        // A connection that does not exist has no owner.
        let nowhere = SocketAddr::from(([127, 0, 0, 1], 1));
        assert_eq!(peer_uid(ours, nowhere), None);
    }
}
