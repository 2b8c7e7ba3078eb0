//! The networked phases' only way out (setup of the base's dependency files, the download phase
//! of a change's): an HTTP proxy in the bot's own process that lets through only the hosts the
//! operator allows (`VIBELOOP_EGRESS_ALLOW`, the package registries). Docker puts those sandboxes
//! on an internal network whose one other member is the host side of its bridge, where the
//! proxy listens: no route, no DNS, nothing else. `CONNECT host:443` (and plain `http://` for
//! port 80) to an allowed host is tunnelled; anything else is answered 403 with the reason, and
//! logged.

use std::net::SocketAddr;
use std::time::Duration;

use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpListener, TcpStream};

/// The largest request head read.
const HEAD_BYTES: usize = 16 * 1024;
/// How long a client may take to send its request head, and the proxy to reach a host.
const STEP: Duration = Duration::from_secs(20);

/// The hosts the networked phases may reach: exact names, or `*.suffix` for a domain's hosts.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AllowList(Vec<String>);

impl AllowList {
    /// From a comma- or space-separated list (`VIBELOOP_EGRESS_ALLOW`); `None` when it names
    /// no host.
    pub fn parse(list: &str) -> Option<Self> {
        let hosts: Vec<String> = list
            .split([',', ' ', '\n'])
            .map(|h| h.trim().trim_end_matches('.').to_ascii_lowercase())
            .filter(|h| !h.is_empty())
            .collect();
        (!hosts.is_empty()).then_some(Self(hosts))
    }

    /// `VIBELOOP_EGRESS_ALLOW`, when set.
    pub fn from_env() -> Option<Self> {
        Self::parse(&std::env::var("VIBELOOP_EGRESS_ALLOW").ok()?)
    }

    /// True when `host` is allowed (case and a trailing dot do not matter).
    pub fn allows(&self, host: &str) -> bool {
        let host = host.trim_end_matches('.').to_ascii_lowercase();
        self.0.iter().any(|a| match a.strip_prefix("*.") {
            Some(domain) => host.ends_with(&format!(".{domain}")),
            None => *a == host,
        })
    }

    /// The hosts, as given (for `vibeloop doctor`).
    pub fn hosts(&self) -> &[String] {
        &self.0
    }
}

/// The ports a registry is reached on.
const PORTS: [u16; 2] = [443, 80];

/// Serves the proxy on `listener` until the process ends.
pub fn serve(listener: TcpListener, allow: AllowList) -> tokio::task::JoinHandle<()> {
    serve_with_ports(listener, allow, &[])
}

/// [`serve`], with `more` ports allowed beside [`PORTS`] (tests reach a local host on one).
fn serve_with_ports(
    listener: TcpListener,
    allow: AllowList,
    more: &[u16],
) -> tokio::task::JoinHandle<()> {
    let ports: std::sync::Arc<Vec<u16>> =
        std::sync::Arc::new(PORTS.iter().chain(more).copied().collect());
    tokio::spawn(async move {
        loop {
            let Ok((client, peer)) = listener.accept().await else {
                continue;
            };
            let (allow, ports) = (allow.clone(), ports.clone());
            tokio::spawn(async move {
                if let Err(e) = handle(client, &allow, &ports).await {
                    tracing::debug!(%peer, error = %e, "egress proxy connection ended");
                }
            });
        }
    })
}

/// What a client asked for.
#[derive(Debug, PartialEq, Eq)]
struct Ask {
    host: String,
    port: u16,
    /// `CONNECT`: a tunnel; else the request to forward, in origin form, and the bytes read
    /// after its head.
    forward: Option<Vec<u8>>,
}

async fn handle(mut client: TcpStream, allow: &AllowList, ports: &[u16]) -> std::io::Result<()> {
    let head = tokio::time::timeout(STEP, read_head(&mut client))
        .await
        .map_err(|_| std::io::Error::other("no request head in time"))??;
    let ask = match parse(&head) {
        Ok(ask) => ask,
        Err(why) => return refuse(&mut client, 400, &why).await,
    };
    if !allow.allows(&ask.host) || !ports.contains(&ask.port) {
        tracing::warn!(host = %ask.host, port = ask.port, "egress refused: not an allowed registry");
        let why = format!(
            "vibeloop: {}:{} is not an allowed registry (VIBELOOP_EGRESS_ALLOW)",
            ask.host, ask.port
        );
        return refuse(&mut client, 403, &why).await;
    }
    let upstream = tokio::time::timeout(STEP, TcpStream::connect((ask.host.as_str(), ask.port)))
        .await
        .map_err(|_| std::io::Error::other("the host did not answer in time"));
    let mut upstream = match upstream.and_then(|r| r) {
        Ok(u) => u,
        Err(e) => return refuse(&mut client, 502, &format!("vibeloop: {}: {e}", ask.host)).await,
    };
    match &ask.forward {
        None => {
            client
                .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
                .await?
        }
        Some(request) => upstream.write_all(request).await?,
    }
    tokio::io::copy_bidirectional(&mut client, &mut upstream).await?;
    Ok(())
}

/// The request head and whatever came after it in the same reads.
async fn read_head(client: &mut TcpStream) -> std::io::Result<Vec<u8>> {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 2048];
    while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
        if buf.len() > HEAD_BYTES {
            return Err(std::io::Error::other("request head too large"));
        }
        let n = client.read(&mut chunk).await?;
        if n == 0 {
            return Err(std::io::Error::other("closed before a request head"));
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    Ok(buf)
}

/// `CONNECT host:port HTTP/1.1`, or `METHOD http://host[:port]/path HTTP/1.1` (rewritten to
/// `METHOD /path HTTP/1.1` for the host).
fn parse(head: &[u8]) -> Result<Ask, String> {
    let end = head
        .windows(2)
        .position(|w| w == b"\r\n")
        .ok_or("no request line")?;
    let line = std::str::from_utf8(&head[..end]).map_err(|_| "a request line not in UTF-8")?;
    let mut parts = line.split(' ');
    let (method, target, version) = match (parts.next(), parts.next(), parts.next()) {
        (Some(m), Some(t), Some(v)) if parts.next().is_none() => (m, t, v),
        _ => return Err(format!("not a request line: {line:?}")),
    };
    if method == "CONNECT" {
        let (host, port) = host_port(target, 443)?;
        return Ok(Ask {
            host,
            port,
            forward: None,
        });
    }
    let rest = target
        .strip_prefix("http://")
        .ok_or_else(|| format!("only CONNECT and http:// requests go through, not {target:?}"))?;
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    let (host, port) = host_port(authority, 80)?;
    let mut request = format!("{method} {path} {version}").into_bytes();
    request.extend_from_slice(&head[end..]);
    Ok(Ask {
        host,
        port,
        forward: Some(request),
    })
}

/// `host[:port]` (a bracketed IPv6 literal is refused: registries have names).
fn host_port(authority: &str, default: u16) -> Result<(String, u16), String> {
    let (host, port) = match authority.rsplit_once(':') {
        Some((h, p)) => (
            h,
            p.parse::<u16>()
                .map_err(|_| format!("a bad port in {authority:?}"))?,
        ),
        None => (authority, default),
    };
    let name = |c: char| c.is_ascii_alphanumeric() || c == '-' || c == '.';
    if host.is_empty() || !host.chars().all(name) {
        return Err(format!("not a host name: {host:?}"));
    }
    Ok((host.to_ascii_lowercase(), port))
}

async fn refuse(client: &mut TcpStream, status: u16, why: &str) -> std::io::Result<()> {
    let reason = match status {
        400 => "Bad Request",
        403 => "Forbidden",
        _ => "Bad Gateway",
    };
    let body = format!("{why}\n");
    let answer = format!(
        "HTTP/1.1 {status} {reason}\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    client.write_all(answer.as_bytes()).await?;
    client.shutdown().await
}

/// Where a sandbox on the egress network finds the proxy, as the variables package managers
/// read (both cases: curl reads only the lower-case `http_proxy`).
pub fn proxy_env(proxy: &SocketAddr) -> Vec<(String, String)> {
    let url = format!("http://{proxy}");
    ["HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"]
        .into_iter()
        .map(|k| (k.to_owned(), url.clone()))
        .chain([
            ("NO_PROXY".to_owned(), String::new()),
            ("no_proxy".to_owned(), String::new()),
        ])
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_are_allowed_by_name_or_domain() {
        let a = AllowList::parse("Index.Example, *.files.example ,").unwrap();
        assert!(a.allows("index.example") && a.allows("INDEX.example."));
        assert!(a.allows("cdn.files.example") && !a.allows("files.example"));
        assert!(!a.allows("index.example.evil") && !a.allows("evilindex.example"));
        assert_eq!(AllowList::parse(" , "), None);
    }

    #[test]
    fn requests_are_read_as_a_tunnel_or_a_forward() {
        let c = parse(b"CONNECT Index.Example:443 HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
        assert_eq!(
            (c.host.as_str(), c.port, c.forward),
            ("index.example", 443, None)
        );
        let g =
            parse(b"GET http://deb.example/dists/x HTTP/1.1\r\nHost: deb.example\r\n\r\n").unwrap();
        assert_eq!((g.host.as_str(), g.port), ("deb.example", 80));
        assert_eq!(
            g.forward.unwrap(),
            b"GET /dists/x HTTP/1.1\r\nHost: deb.example\r\n\r\n"
        );
        for bad in [
            &b"GET /relative HTTP/1.1\r\n\r\n"[..],
            b"CONNECT [::1]:443 HTTP/1.1\r\n\r\n",
            b"CONNECT a b:443 HTTP/1.1\r\n\r\n",
            b"CONNECT host:99999 HTTP/1.1\r\n\r\n",
        ] {
            assert!(parse(bad).is_err(), "{:?}", String::from_utf8_lossy(bad));
        }
    }

    async fn ask(proxy: SocketAddr, request: &str) -> String {
        let mut s = TcpStream::connect(proxy).await.unwrap();
        s.write_all(request.as_bytes()).await.unwrap();
        let mut answer = vec![0u8; 4096];
        let n = s.read(&mut answer).await.unwrap();
        if request.starts_with("CONNECT") && answer.starts_with(b"HTTP/1.1 200") {
            // Through the tunnel: the upstream's greeting.
            s.write_all(b"ping").await.unwrap();
            let m = s.read(&mut answer[n..]).await.unwrap();
            return String::from_utf8_lossy(&answer[..n + m]).into_owned();
        }
        String::from_utf8_lossy(&answer[..n]).into_owned()
    }

    /// A tunnel to an allowed host carries bytes both ways; any other host gets 403 with the
    /// reason, whatever the port.
    #[tokio::test]
    async fn only_allowed_hosts_get_a_tunnel() {
        // An "upstream" on this machine's port 443 is not available to tests: the allowed
        // host here is reached on the port the test picks, allowed for the test alone.
        let upstream = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = upstream.local_addr().unwrap().port();
        tokio::spawn(async move {
            let (mut s, _) = upstream.accept().await.unwrap();
            let mut b = [0u8; 4];
            s.read_exact(&mut b).await.unwrap();
            s.write_all(b"pong").await.unwrap();
        });
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let proxy = listener.local_addr().unwrap();
        let allow = AllowList::parse("localhost").unwrap();
        let _served = serve_with_ports(listener, allow, &[port]);
        let ok = ask(proxy, &format!("CONNECT localhost:{port} HTTP/1.1\r\n\r\n")).await;
        assert!(
            ok.starts_with("HTTP/1.1 200") && ok.ends_with("pong"),
            "{ok}"
        );
        let other = ask(proxy, "CONNECT elsewhere.example:443 HTTP/1.1\r\n\r\n").await;
        assert!(
            other.starts_with("HTTP/1.1 403")
                && other.contains("elsewhere.example:443 is not an allowed registry"),
            "{other}"
        );
        let port_not_allowed = ask(proxy, "CONNECT localhost:22 HTTP/1.1\r\n\r\n").await;
        assert!(
            port_not_allowed.starts_with("HTTP/1.1 403"),
            "{port_not_allowed}"
        );
    }
}
