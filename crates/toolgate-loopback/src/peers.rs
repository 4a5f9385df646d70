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
//! # Asked of the kernel by address, not read from its whole table
//!
//! Reading `/proc/net/tcp` walks every bucket of the kernel's connection
//! hash, whatever few sockets are in it: 4 ms per read on this project's
//! VM (262,144 buckets), on the async worker that accepted the
//! connection, and both tables (8 ms) when the first has no such row. A
//! profile of `toolgate serve` under `toolgate bench --load` put 19 % of
//! the server's CPU there. So the kernel is asked for the one socket by
//! its addresses (`sock_diag` over netlink, as `ss` asks): a lookup in the
//! hash, tens of microseconds. The answer is taken only when the socket
//! it names has exactly the addresses asked for (a listener on the same
//! port is not the connection). The tables are read as before only where
//! netlink cannot answer (a sandbox without `sock_diag`): slower, the
//! same verdict.
//!
//! The alternative, a challenge bound to the token file, needs a round trip
//! and a protocol of toolgate's own before the agent's first request, which
//! Claude Code's http hook cannot take part in.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

/// The uid owning the socket whose local address is `local` and remote
/// address `remote`, or `None` when there is no such socket.
pub fn owner(local: SocketAddr, remote: SocketAddr) -> Option<u32> {
    match diag::owner(local, remote) {
        Ok(found) => found,
        Err(_) => listed_owner(local, remote),
    }
}

/// [`owner`] as the kernel's tables list it.
fn listed_owner(local: SocketAddr, remote: SocketAddr) -> Option<u32> {
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
pub fn peer_uid(ours: SocketAddr, theirs: SocketAddr) -> Option<u32> {
    owner(theirs, ours)
}

/// The uids of every listening socket that could take a connection to
/// `addr`: one bound to `addr` itself, or to the wildcard address of
/// either family on its port (a dual-stack `[::]` takes v4 too). Two
/// listeners of different users can both be candidates (a v4 wildcard and
/// a v6-only one), so all are returned; empty: nothing listens there.
pub fn listener_uids(addr: SocketAddr) -> Vec<u32> {
    let port = addr.port();
    let v4_any = SocketAddr::from(([0, 0, 0, 0], 0));
    let v6_any = SocketAddr::from((Ipv6Addr::UNSPECIFIED, 0));
    let any_of = |at: SocketAddr| if at.is_ipv4() { v4_any } else { v6_any };
    let mut candidates = vec![addr, SocketAddr::from((Ipv6Addr::UNSPECIFIED, port))];
    if addr.is_ipv4() {
        candidates.push(SocketAddr::from((Ipv4Addr::UNSPECIFIED, port)));
    }
    let mut uids: Vec<u32> = candidates
        .into_iter()
        .filter_map(|at| owner(at, any_of(at)))
        .collect();
    uids.dedup();
    uids
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

/// `sock_diag`: one TCP socket looked up by its addresses.
mod diag {
    use nix::sys::socket::{
        AddressFamily, MsgFlags, NetlinkAddr, SockFlag, SockProtocol, SockType, recv, sendto,
        socket,
    };
    use std::net::{IpAddr, SocketAddr};

    const SOCK_DIAG_BY_FAMILY: u16 = 20;
    const NLM_F_REQUEST: u16 = 1;
    const NLMSG_ERROR: u16 = 2;
    const HEADER: usize = 16;
    /// `inet_diag_req_v2`: family, protocol, extensions, pad, states, id.
    const REQUEST: usize = 56;
    /// `inet_diag_msg` up to and with `idiag_uid`.
    const UID_END: usize = 68;

    /// `Ok(None)`: the kernel has no such socket. `Err`: netlink could
    /// not be asked (the caller reads the tables instead).
    pub(super) fn owner(local: SocketAddr, remote: SocketAddr) -> std::io::Result<Option<u32>> {
        let (local, remote) = (unmapped(local), unmapped(remote));
        let family = match (local.ip(), remote.ip()) {
            (IpAddr::V4(_), IpAddr::V4(_)) => nix::libc::AF_INET,
            (IpAddr::V6(_), IpAddr::V6(_)) => nix::libc::AF_INET6,
            // One v4 end and one v6 end is no connection.
            (IpAddr::V4(_), IpAddr::V6(_)) | (IpAddr::V6(_), IpAddr::V4(_)) => return Ok(None),
        };
        let fd = socket(
            AddressFamily::Netlink,
            SockType::Datagram,
            SockFlag::SOCK_CLOEXEC,
            SockProtocol::NetlinkSockDiag,
        )?;
        let request = request(family, local, remote);
        sendto(
            std::os::fd::AsRawFd::as_raw_fd(&fd),
            &request,
            &NetlinkAddr::new(0, 0),
            MsgFlags::empty(),
        )?;
        let mut reply = [0u8; 512];
        let n = recv(
            std::os::fd::AsRawFd::as_raw_fd(&fd),
            &mut reply,
            MsgFlags::empty(),
        )?;
        read_reply(reply.get(..n).unwrap_or_default(), local, remote)
    }

    /// A v4 address in its v6-mapped form, as a dual-stack socket holds it,
    /// is the v4 address.
    fn unmapped(address: SocketAddr) -> SocketAddr {
        match address.ip() {
            IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
                Some(v4) => SocketAddr::new(IpAddr::V4(v4), address.port()),
                None => address,
            },
            IpAddr::V4(_) => address,
        }
    }

    /// The 16 bytes of an address as `inet_diag_sockid` holds it (a v4
    /// address in the first four).
    fn bytes(ip: IpAddr) -> [u8; 16] {
        match ip {
            IpAddr::V4(v4) => {
                let mut out = [0u8; 16];
                out[..4].copy_from_slice(&v4.octets());
                out
            }
            IpAddr::V6(v6) => v6.octets(),
        }
    }

    fn request(family: i32, local: SocketAddr, remote: SocketAddr) -> Vec<u8> {
        let mut out = Vec::with_capacity(HEADER + REQUEST);
        out.extend_from_slice(&((HEADER + REQUEST) as u32).to_ne_bytes());
        out.extend_from_slice(&SOCK_DIAG_BY_FAMILY.to_ne_bytes());
        out.extend_from_slice(&NLM_F_REQUEST.to_ne_bytes());
        out.extend_from_slice(&1u32.to_ne_bytes()); // sequence
        out.extend_from_slice(&0u32.to_ne_bytes()); // port id: the kernel fills it
        out.push(family as u8);
        out.push(nix::libc::IPPROTO_TCP as u8);
        out.extend_from_slice(&[0, 0]); // no extensions, pad
        out.extend_from_slice(&u32::MAX.to_ne_bytes()); // every state
        out.extend_from_slice(&local.port().to_be_bytes());
        out.extend_from_slice(&remote.port().to_be_bytes());
        out.extend_from_slice(&bytes(local.ip()));
        out.extend_from_slice(&bytes(remote.ip()));
        out.extend_from_slice(&0u32.to_ne_bytes()); // any interface
        out.extend_from_slice(&[0xff; 8]); // INET_DIAG_NOCOOKIE
        out
    }

    /// The uid in the kernel's answer, if it names a socket with exactly
    /// these addresses.
    fn read_reply(
        reply: &[u8],
        local: SocketAddr,
        remote: SocketAddr,
    ) -> std::io::Result<Option<u32>> {
        let short = || std::io::Error::other("a short sock_diag answer");
        let header = reply.get(..HEADER).ok_or_else(short)?;
        let kind = u16::from_ne_bytes([header[4], header[5]]);
        if kind == NLMSG_ERROR {
            let errno = reply
                .get(HEADER..HEADER + 4)
                .map(|b| i32::from_ne_bytes([b[0], b[1], b[2], b[3]]))
                .ok_or_else(short)?;
            return match -errno {
                nix::libc::ENOENT => Ok(None),
                errno => Err(std::io::Error::from_raw_os_error(errno)),
            };
        }
        if kind != SOCK_DIAG_BY_FAMILY {
            return Err(std::io::Error::other("an unexpected sock_diag answer"));
        }
        let message = reply.get(HEADER..HEADER + UID_END).ok_or_else(short)?;
        let family = i32::from(message[0]);
        let port = |at: usize| u16::from_be_bytes([message[at], message[at + 1]]);
        // A family other than the two asked for is not an answer this
        // reads: the caller falls back to the tables.
        let v4 = match family {
            nix::libc::AF_INET => true,
            nix::libc::AF_INET6 => false,
            other => {
                return Err(std::io::Error::other(format!(
                    "a sock_diag answer of family {other}"
                )));
            }
        };
        let ip = |at: usize| -> Option<IpAddr> {
            let raw: [u8; 16] = message.get(at..at + 16)?.try_into().ok()?;
            Some(if v4 {
                IpAddr::from([raw[0], raw[1], raw[2], raw[3]])
            } else {
                IpAddr::from(raw)
            })
        };
        let (Some(here), Some(there)) = (ip(8), ip(24)) else {
            return Err(short());
        };
        let named = (
            unmapped(SocketAddr::new(here, port(4))),
            unmapped(SocketAddr::new(there, port(6))),
        );
        if named != (local, remote) {
            return Ok(None);
        }
        let uid = &message[64..68];
        Ok(Some(u32::from_ne_bytes([uid[0], uid[1], uid[2], uid[3]])))
    }
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

    #[test]
    fn the_kernel_asked_by_address_and_its_tables_name_the_same_owner() {
        let me = nix::unistd::geteuid().as_raw();
        for any in ["127.0.0.1:0", "[::1]:0"] {
            let listener = std::net::TcpListener::bind(any).unwrap();
            let client = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
            let (server, _) = listener.accept().unwrap();
            let (ours, theirs) = (server.local_addr().unwrap(), server.peer_addr().unwrap());
            assert_eq!(diag::owner(theirs, ours).unwrap(), Some(me), "{any}");
            assert_eq!(listed_owner(theirs, ours), Some(me), "{any}");
            drop(client);
        }
    }

    #[test]
    fn a_listener_on_the_asked_port_is_not_the_connection_asked_for() {
        // Asked for a connection from the listener's own address to a
        // peer that never connected: the kernel's lookup may fall back to
        // the listener, whose addresses are not those asked for.
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let at = listener.local_addr().unwrap();
        let nobody = SocketAddr::from(([127, 0, 0, 1], 9));
        assert_eq!(diag::owner(at, nobody).unwrap(), None);
        assert_eq!(owner(at, nobody), None);
    }

    #[test]
    fn a_listener_is_found_by_the_address_a_client_would_connect_to() {
        let me = nix::unistd::geteuid().as_raw();
        for bind in ["127.0.0.1:0", "0.0.0.0:0", "[::1]:0"] {
            let listener = std::net::TcpListener::bind(bind).unwrap();
            let port = listener.local_addr().unwrap().port();
            let asked = if bind.starts_with('[') {
                SocketAddr::from((Ipv6Addr::LOCALHOST, port))
            } else {
                SocketAddr::from(([127, 0, 0, 1], port))
            };
            assert_eq!(listener_uids(asked), [me], "{bind}");
            drop(listener);
            assert_eq!(listener_uids(asked), Vec::<u32>::new(), "{bind}, closed");
        }
    }

    #[test]
    fn a_dual_stack_listener_names_its_v4_peer() {
        let Ok(listener) = std::net::TcpListener::bind("[::]:0") else {
            return; // no IPv6 on this machine: nothing dual-stack to check
        };
        let port = listener.local_addr().unwrap().port();
        let client = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        let (server, _) = listener.accept().unwrap();
        let (ours, theirs) = (server.local_addr().unwrap(), server.peer_addr().unwrap());
        assert!(theirs.is_ipv6(), "a dual-stack socket sees a mapped peer");
        assert_eq!(
            peer_uid(ours, theirs),
            Some(nix::unistd::geteuid().as_raw())
        );
        drop(client);
    }
}
