//! Whether a setup sandbox reaches a package index through this host's network, and whether
//! it needs the host's CA bundle to (a network that re-signs TLS): one download, as setup
//! makes them — pip from its default index, with the proxies and CA bundle setup is given.
//! `vibeloop doctor` asks it.

use std::path::Path;
use std::time::Duration;

use super::hints::certificate_line;
use super::setup::Network;
use crate::sandbox::{Backend, SandboxError, SandboxSpec};

/// What one download from a setup sandbox came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reach {
    Fetched,
    /// A TLS certificate nobody in the sandbox trusts: the line that says so.
    Certificate(String),
    /// Anything else: the output's last line.
    Failed(String),
}

/// Downloads one small package (pip itself, without dependencies) in a sandbox of `image`
/// with the network and `network`'s proxies and CA bundle, as setup would.
pub async fn try_fetch(
    backend: &Backend,
    image: &str,
    network: &Network,
) -> Result<Reach, SandboxError> {
    let dir = tempfile::tempdir()?;
    let mut spec = SandboxSpec::probe(image, dir.path(), "reach", true);
    network.give(&mut spec);
    let sandbox = backend.start(&spec).await?;
    let out = sandbox
        .exec(
            "python3 -m pip download --quiet --no-deps --disable-pip-version-check \
             --retries 1 --timeout 20 --dest /tmp/vibeloop-reach pip 2>&1",
            Duration::from_secs(120),
        )
        .await;
    sandbox.stop().await;
    let out = out?;
    Ok(if out.success() {
        Reach::Fetched
    } else if let Some(line) = certificate_line(&out.output) {
        Reach::Certificate(line)
    } else {
        let last = out.output.lines().rev().find(|l| !l.trim().is_empty());
        Reach::Failed(
            last.unwrap_or("no output")
                .trim()
                .chars()
                .take(200)
                .collect(),
        )
    })
}

/// The host's CA bundle, where Debian keeps it, when there is one.
pub fn host_bundle() -> Option<&'static Path> {
    let p = Path::new("/etc/ssl/certs/ca-certificates.crt");
    p.is_file().then_some(p)
}
