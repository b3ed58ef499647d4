//! Addresses to listen on, as `--listen` takes them: `127.0.0.1:4318`, `[::1]:4318`, or a
//! host name such as `localhost:4318`, resolved.

use std::net::{SocketAddr, ToSocketAddrs};

/// The address `text` names; of a host name's addresses, the first IPv4 one (a client
/// told `localhost` reaches `127.0.0.1` first).
pub fn listen_addr(text: &str) -> Result<SocketAddr, String> {
    let text = text.trim();
    if let Ok(addr) = text.parse() {
        return Ok(addr);
    }
    if !text.contains(':') {
        return Err(format!("{text:?} has no port: write HOST:PORT, e.g. 127.0.0.1:4318"));
    }
    let addrs: Vec<SocketAddr> = text.to_socket_addrs().map_err(|e| format!("{text:?} does not resolve to an address: {e}"))?.collect();
    addrs.iter().find(|a| a.is_ipv4()).or(addrs.first()).copied().ok_or_else(|| format!("{text:?} resolves to no address"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_and_host_names() {
        assert_eq!(listen_addr("127.0.0.1:4318"), Ok("127.0.0.1:4318".parse().unwrap()));
        assert_eq!(listen_addr("[::1]:4318"), Ok("[::1]:4318".parse().unwrap()));
        assert_eq!(listen_addr("localhost:4318"), Ok("127.0.0.1:4318".parse().unwrap()));
        assert!(listen_addr("localhost").unwrap_err().contains("no port"));
        assert!(listen_addr("no-such-host.invalid:1").is_err());
    }
}
