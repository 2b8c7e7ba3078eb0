//! The Docker checks: an engine answers, found the way `serve` finds it (`DOCKER_HOST`, else the
//! local socket), the default runner image is there, and a setup sandbox of it reaches a
//! package index (with the host's CA bundle, when this network re-signs TLS). Nothing is
//! pulled; one short-lived container downloads one package.

use std::path::Path;
use std::time::Duration;

use bollard::Docker;

use super::Check;
use crate::env::Network;
use crate::env::reach::{self, Reach, try_fetch};
use crate::sandbox::docker::DockerBackend;
use crate::sandbox::{Backend, Kind, SandboxError};

const ENGINE: &str = "docker";
const IMAGE: &str = "runner image";
const NETWORK: &str = "setup network";
const WITHIN: Duration = Duration::from_secs(10);

/// The engine check, then the image check (skipped without an engine).
pub(super) async fn check(data_dir: &Path, force: Option<Kind>) -> (Check, Check) {
    if force == Some(Kind::Local) {
        let engine = Check::pass(ENGINE, "not used (VIBELOOP_SANDBOX=local)").warn(
            "NO ISOLATION: the agents' and gates' commands — code a model wrote — run as plain processes on this host, with its network and files; install Docker and unset VIBELOOP_SANDBOX",
        );
        return (
            engine,
            Check::skipped(IMAGE, "VIBELOOP_SANDBOX=local uses no image"),
        );
    }
    let at = match std::env::var("DOCKER_HOST") {
        Ok(host) if !host.trim().is_empty() => host,
        _ => "the local socket".to_owned(),
    };
    let connected = match tokio::time::timeout(WITHIN, DockerBackend::connect(data_dir)).await {
        Ok(Ok(backend)) => Ok(backend),
        Ok(Err(SandboxError::Docker(e))) => Err(e),
        Ok(Err(e)) => Err(e.to_string()),
        Err(_) => Err(format!("no answer within {}s", WITHIN.as_secs())),
    };
    match connected {
        Ok(backend) => (
            storage(
                backend.storage_driver().await,
                disks(
                    data_dir,
                    Check::pass(
                        ENGINE,
                        format!(
                            "engine {} answers at {at}; {}",
                            backend.version(),
                            egress(&backend)
                        ),
                    ),
                ),
            ),
            image(&crate::config::repo::HiveConfig::default().image).await,
        ),
        Err(e) if force == Some(Kind::Docker) => (
            Check::fail(
                ENGINE,
                format!(
                    "no Docker engine at {at} ({e}), and VIBELOOP_SANDBOX=docker: serve will not start"
                ),
                "start Docker, or point DOCKER_HOST at a running engine",
            ),
            Check::skipped(IMAGE, "no Docker engine to look in"),
        ),
        Err(e) => (
            Check::fail(
                ENGINE,
                format!(
                    "no Docker engine at {at} ({e}): serve will not start (it runs the agents' and gates' commands only in containers, unless VIBELOOP_SANDBOX=local says otherwise)"
                ),
                "install Docker (or start it, or point DOCKER_HOST at it)",
            ),
            Check::skipped(IMAGE, "no Docker engine to look in"),
        ),
    }
}

/// Whether each worktree gets a disk of its own, said on `check`: a warning when not.
fn disks(data_dir: &Path, check: Check) -> Check {
    match crate::sandbox::disk::probe(data_dir) {
        Ok(()) => match check.outcome {
            super::Outcome::Pass(detail) => Check {
                outcome: super::Outcome::Pass(format!(
                    "{detail}; each worktree has a disk of its own (limits.disk_mb)"
                )),
                ..check
            },
            _ => check,
        },
        Err(why) => check.warn(why),
    }
}

/// The engine's storage driver, said on `check`: a warning for the drivers that copy or serve
/// every file of an image from user space, which every sandbox's start and imports pay for.
fn storage(driver: Option<String>, check: Check) -> Check {
    let Some(driver) = driver else { return check };
    let slow = match driver.as_str() {
        "fuse-overlayfs" => Some(
            "every file a sandbox reads from its image goes through a user-space process (Python's start and imports take about 3 times the CPU of overlay2)",
        ),
        "vfs" => Some("every container starts with a full copy of its image"),
        _ => None,
    };
    let check = match check.outcome {
        super::Outcome::Pass(detail) => Check {
            outcome: super::Outcome::Pass(format!("{detail}; images stored with {driver}")),
            ..check
        },
        _ => check,
    };
    match slow {
        Some(why) => check.warn(format!(
            "the engine stores images with {driver}: {why}; use overlay2 (\"storage-driver\" in /etc/docker/daemon.json) where the kernel can mount an overlay"
        )),
        None => check,
    }
}

/// Where networked setup may go: the allow-list and its network, or anywhere.
fn egress(backend: &DockerBackend) -> String {
    match backend.egress() {
        Some(e) => format!(
            "networked setup reaches only {} (VIBELOOP_EGRESS_ALLOW), through a proxy at {} on the internal network {}",
            e.allow.hosts().join(", "),
            e.proxy,
            e.network
        ),
        None => "networked setup may reach any host (set VIBELOOP_EGRESS_ALLOW to your registries' hosts to allow only those)".to_owned(),
    }
}

/// Looks `name` up in the engine.
async fn image(name: &str) -> Check {
    let looked_up = async {
        let docker = Docker::connect_with_defaults()?.negotiate_version().await?;
        docker.inspect_image(name).await
    };
    match tokio::time::timeout(WITHIN, looked_up).await {
        Ok(Ok(_)) => Check::pass(
            IMAGE,
            format!(
                "{name} is there (the default; a repository may name another in .github/hive.yml)"
            ),
        ),
        Ok(Err(bollard::errors::Error::DockerResponseServerError {
            status_code: 404, ..
        })) => Check::fail(
            IMAGE,
            format!("{name} is missing, so gates cannot run in Docker"),
            "build it with docker/build-runner-image.sh",
        ),
        Ok(Err(e)) => Check::fail(
            IMAGE,
            format!("cannot look up {name}: {e}"),
            "check that the Docker engine works (`docker image ls`)",
        ),
        Err(_) => Check::fail(
            IMAGE,
            format!("Docker did not answer within {}s", WITHIN.as_secs()),
            "check that the Docker engine works (`docker image ls`)",
        ),
    }
}

/// One download from a setup sandbox of the default image, as setup makes them; when it fails
/// on a certificate and no bundle is given, a second one with the host's bundle says whether
/// `VIBELOOP_SANDBOX_CA_BUNDLE` would fix it.
pub(super) async fn setup_network(data_dir: &Path) -> Check {
    let backend = match DockerBackend::connect(data_dir).await {
        Ok(b) => Backend::Docker(b),
        Err(e) => return Check::skipped(NETWORK, format!("no Docker engine ({e})")),
    };
    let image = crate::config::repo::HiveConfig::default().image;
    let network = Network::from_env();
    let first = match try_fetch(&backend, &image, &network).await {
        Ok(r) => r,
        Err(e) => return Check::skipped(NETWORK, format!("no sandbox of {image} started: {e}")),
    };
    let with_host = match (&first, &network.ca_bundle, reach::host_bundle()) {
        (Reach::Certificate(_), None, Some(bundle)) => {
            let network = Network {
                ca_bundle: Some(bundle.to_owned()),
                ..network.clone()
            };
            try_fetch(&backend, &image, &network).await.ok()
        }
        _ => None,
    };
    judge(&first, with_host.as_ref(), network.ca_bundle.as_deref())
}

/// What the downloads say: `first` as setup is configured, `with_host` with the host's CA bundle
/// (tried only when `first` met a certificate nobody trusts and none is `given`).
fn judge(first: &Reach, with_host: Option<&Reach>, given: Option<&Path>) -> Check {
    const HOST: &str = "/etc/ssl/certs/ca-certificates.crt";
    let given_text = given.map(|p| p.display().to_string());
    match (first, with_host) {
        (Reach::Fetched, _) => Check::pass(
            NETWORK,
            match &given_text {
                Some(p) => {
                    format!("a setup sandbox downloads from the package index (CA bundle {p})")
                }
                None => "a setup sandbox downloads from the package index".to_owned(),
            },
        ),
        (Reach::Certificate(line), Some(Reach::Fetched)) => Check::fail(
            NETWORK,
            format!(
                "this network re-signs TLS: a setup sandbox cannot verify the package index (`{line}`), and can with the host's CA bundle"
            ),
            format!("set VIBELOOP_SANDBOX_CA_BUNDLE={HOST}"),
        ),
        (Reach::Certificate(line), _) => Check::fail(
            NETWORK,
            match &given_text {
                Some(p) => format!(
                    "a setup sandbox cannot verify the package index (`{line}`) though VIBELOOP_SANDBOX_CA_BUNDLE={p} is given"
                ),
                None => format!(
                    "a setup sandbox cannot verify the package index (`{line}`), not even with the host's CA bundle"
                ),
            },
            "set VIBELOOP_SANDBOX_CA_BUNDLE to a bundle that holds the certificate this network signs with",
        ),
        (Reach::Failed(line), _) => Check::fail(
            NETWORK,
            format!(
                "a setup sandbox could not download from the package index (`{line}`), so setting up a project's dependencies will fail"
            ),
            "let containers reach the package index, or give serve HTTPS_PROXY (setup passes it on)",
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_certificate_failure_says_whether_the_host_bundle_fixes_it() {
        let cert = Reach::Certificate("SSL: CERTIFICATE_VERIFY_FAILED".into());
        let c = judge(&cert, Some(&Reach::Fetched), None).to_string();
        assert!(
            c.contains("re-signs TLS")
                && c.contains("VIBELOOP_SANDBOX_CA_BUNDLE=/etc/ssl/certs/ca-certificates.crt"),
            "{c}"
        );
        let c = judge(&cert, None, Some(Path::new("/etc/my.pem"))).to_string();
        assert!(
            c.contains("though VIBELOOP_SANDBOX_CA_BUNDLE=/etc/my.pem is given"),
            "{c}"
        );
        let c = judge(&Reach::Fetched, None, Some(Path::new("/etc/my.pem")));
        assert!(
            !c.failed() && c.to_string().contains("CA bundle /etc/my.pem"),
            "{c}"
        );
        let c = judge(&Reach::Failed("Network is unreachable".into()), None, None).to_string();
        assert!(
            c.contains("`Network is unreachable`") && c.contains("HTTPS_PROXY"),
            "{c}"
        );
    }

    #[test]
    fn the_storage_driver_is_named_and_the_slow_ones_warned_of() {
        let engine = || Check::pass(ENGINE, "engine 28 answers");
        let fast = storage(Some("overlay2".into()), engine()).to_string();
        assert_eq!(
            fast,
            "✓ docker: engine 28 answers; images stored with overlay2"
        );
        for (driver, why) in [
            ("fuse-overlayfs", "user-space process"),
            ("vfs", "full copy of its image"),
        ] {
            let c = storage(Some(driver.into()), engine()).to_string();
            assert!(c.starts_with(&format!("✓ docker: engine 28 answers; images stored with {driver}\n! docker: the engine stores images with {driver}: ")), "{c}");
            assert!(c.contains(why) && c.contains("use overlay2"), "{c}");
        }
        // An engine that does not say, or a check that failed already, is left as it is.
        assert_eq!(storage(None, engine()).to_string(), engine().to_string());
        let failed = || Check::fail(ENGINE, "no engine", "start it");
        assert!(
            !storage(Some("vfs".into()), failed())
                .to_string()
                .contains("images stored")
        );
    }

    /// Needs a Docker engine, like the sandbox tests.
    #[tokio::test]
    async fn a_missing_image_names_the_build_script() {
        let c = image("vibeloop-runner:no-such-tag-for-doctor").await;
        let text = c.to_string();
        assert!(c.failed(), "{text}");
        assert!(
            text.contains("is missing") && text.contains("docker/build-runner-image.sh"),
            "{text}"
        );
    }
}
