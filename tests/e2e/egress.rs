//! The networked phases reach only the configured registries (issue 42, part 1c): with
//! `VIBELOOP_EGRESS_ALLOW` naming the package index's hosts, the base's setup downloads its
//! packages through the bot's proxy on an internal Docker network, while a direct connection
//! finds no route and a tunnel to any other host is refused with the reason.

use crate::support;

use support::hive::*;
use vibeloop::ticket::TaskState;

/// Run by the base's setup after its download: what the network lets it do, then a failure
/// so that the ticket's report shows these lines.
const PROBE: &str = r#"import os, socket, sys, urllib.parse

host = sys.argv[1]
try:
    socket.create_connection((host, 443), timeout=5).close()
    print("DIRECT: connected")
except OSError:
    print("DIRECT: blocked")
proxy = urllib.parse.urlparse(os.environ["HTTPS_PROXY"])


def via(h):
    s = socket.create_connection((proxy.hostname, proxy.port), timeout=10)
    s.sendall(f"CONNECT {h}:443 HTTP/1.1\r\nHost: {h}:443\r\n\r\n".encode())
    return s.recv(300).decode(errors="replace").split("\r\n")[0]


print("ALLOWED:", via(host))
print("OTHER:", via("elsewhere.invalid"))
sys.exit(1)
"#;

/// The package index's hosts as pip names them (its pages and its files).
fn index_hosts() -> Vec<String> {
    let out = std::process::Command::new("python3")
        .args([
            "-c",
            "from pip._internal.models.index import PyPI; print(PyPI.netloc); print(PyPI.file_storage_domain)",
        ])
        .output()
        .expect("python3 runs");
    let hosts: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_owned)
        .collect();
    assert_eq!(hosts.len(), 2, "pip names its index: {out:?}");
    hosts
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn networked_setup_reaches_the_allowed_registries_and_nothing_else() {
    let hosts = index_hosts();
    let setup = format!(
        "python3 -m venv /cache/venv && /cache/venv/bin/pip install --quiet pytest && echo 'Installed pytest' && python3 probe.py {}",
        hosts[0]
    );
    let yml = format!("setup: \"{setup}\"\ngates: {{ test: \"python3 -m unittest -v\" }}\n");
    let mut files = calc(&yml);
    files.push(("probe.py", PROBE.to_owned()));
    let extra = vec![
        ("VIBELOOP_SANDBOX".to_owned(), "docker".to_owned()),
        (
            "VIBELOOP_SANDBOX_CA_BUNDLE".to_owned(),
            "/etc/ssl/certs/ca-certificates.crt".to_owned(),
        ),
        ("VIBELOOP_EGRESS_ALLOW".to_owned(), hosts.join(",")),
    ];
    let w = World::start_with(happy_script(), &files, extra).await;
    w.label().await;
    let t = w
        .bot
        .wait_until(
            "the base's setup to fail with the probe's report",
            WAIT,
            || async {
                w.ticket().await.filter(|t| {
                    matches!(t.state, TaskState::HumanNeeded | TaskState::Failed)
                        && t.detail.as_deref().unwrap_or("").contains("OTHER:")
                })
            },
        )
        .await;
    let detail = t.detail.unwrap_or_default();
    for said in [
        "Installed pytest",
        "DIRECT: blocked",
        "ALLOWED: HTTP/1.1 200",
        "OTHER: HTTP/1.1 403",
    ] {
        assert!(detail.contains(said), "no {said:?} in:\n{detail}");
    }
}
