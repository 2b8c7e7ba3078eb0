//! The Docker checks: an engine answers, found the way `serve` finds it (`DOCKER_HOST`, else the
//! local socket), and the default runner image is there. Nothing is pulled or started.

use std::path::Path;
use std::time::Duration;

use bollard::Docker;

use super::Check;
use crate::sandbox::docker::DockerBackend;
use crate::sandbox::{Kind, SandboxError};

const ENGINE: &str = "docker";
const IMAGE: &str = "runner image";
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
            Check::pass(
                ENGINE,
                format!("engine {} answers at {at}", backend.version()),
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

#[cfg(test)]
mod tests {
    use super::*;

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
