//! The image a repository's sandboxes run: the engine has it, or it is pulled from its registry
//! (a devcontainer's image, or one `image:` names), or — when a devcontainer's image cannot be
//! had — the detected ecosystem's image runs instead, and the ticket says so: a ticket the
//! detected image could serve never stops for a missing image. The operator's registry
//! credentials go only to the registry they are given for, never to one a repository names.

use secrecy::{ExposeSecret, SecretString};

use super::Resolved;
use crate::sandbox::Backend;

/// Credentials for one registry (`VIBELOOP_REGISTRY`, `VIBELOOP_REGISTRY_USER`,
/// `VIBELOOP_REGISTRY_TOKEN`).
#[derive(Clone)]
pub struct Registry {
    pub host: String,
    username: String,
    token: SecretString,
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registry")
            .field("host", &self.host)
            .finish_non_exhaustive()
    }
}

impl Registry {
    /// The operator's registry credentials, when all three variables are set.
    pub fn from_env() -> Option<Self> {
        let var = |k: &str| std::env::var(k).ok().filter(|v| !v.trim().is_empty());
        Some(Self {
            host: var("VIBELOOP_REGISTRY")?.trim().to_owned(),
            username: var("VIBELOOP_REGISTRY_USER")?,
            token: SecretString::from(var("VIBELOOP_REGISTRY_TOKEN")?),
        })
    }

    /// The credentials for pulling `image`: only when it lives on this registry.
    fn for_image(&self, image: &str) -> Option<bollard::auth::DockerCredentials> {
        (registry_of(image) == self.host).then(|| bollard::auth::DockerCredentials {
            username: Some(self.username.clone()),
            password: Some(self.token.expose_secret().to_owned()),
            serveraddress: Some(self.host.clone()),
            ..Default::default()
        })
    }
}

/// The registry an image reference names: its first part when that has a `.` or `:` or is
/// `localhost` (`ghcr.io/o/i`, `127.0.0.1:5000/i`), else Docker Hub's `docker.io`.
pub fn registry_of(image: &str) -> &str {
    match image.split_once('/') {
        Some((first, _)) if first.contains(['.', ':']) || first == "localhost" => first,
        _ => "docker.io",
    }
}

/// How the image was had.
#[derive(Debug, Clone, PartialEq)]
pub enum Had {
    /// The engine had it (or the backend runs no images).
    Present,
    Pulled {
        image: String,
        seconds: f64,
    },
    /// The devcontainer's `image` could not be had: the detected one runs instead.
    FellBack {
        wanted: String,
        image: String,
        why: String,
    },
    /// Not there and not to be had: starting a sandbox will say so.
    Missing {
        image: String,
        why: String,
    },
}

impl Had {
    /// One line for people; `None` when there is nothing to say.
    pub fn describe(&self) -> Option<String> {
        match self {
            Had::Present => None,
            Had::Pulled { image, seconds } => {
                Some(format!("pulled the image {image} in {seconds:.0} s"))
            }
            Had::FellBack { wanted, image, why } => Some(format!(
                "the devcontainer's image {wanted} could not be pulled ({why}), so the detected {image} runs instead: \
                 make {wanted} reachable (VIBELOOP_REGISTRY, VIBELOOP_REGISTRY_USER, VIBELOOP_REGISTRY_TOKEN for a private registry) \
                 or set `image:` in .github/hive.yml"
            )),
            Had::Missing { image, why } => {
                Some(format!("the image {image} could not be pulled: {why}"))
            }
        }
    }
}

/// Makes sure the engine has `r`'s image: pulls it when it does not (telling `progress`), and
/// when a devcontainer's image cannot be pulled, makes `r` what the repository resolves to
/// without its devcontainer. Our own runner images are never pulled: they are built
/// (`docker/build-runner-image.sh`).
pub async fn ensure(
    backend: &Backend,
    r: &mut Resolved,
    registry: Option<&Registry>,
    progress: &mut (dyn FnMut(&str) + Send),
) -> Had {
    let image = r.config.image.clone();
    if matches!(backend, Backend::Local) || backend.image_id(&image).await.is_some() {
        return Had::Present;
    }
    let why = if image.starts_with("vibeloop-runner:") {
        "it is built, not pulled: docker/build-runner-image.sh".to_owned()
    } else {
        let started = std::time::Instant::now();
        let credentials = registry.and_then(|g| g.for_image(&image));
        match backend.pull(&image, credentials, progress).await {
            Ok(()) => {
                return Had::Pulled {
                    image,
                    seconds: started.elapsed().as_secs_f64(),
                };
            }
            Err(e) => e.to_string(),
        }
    };
    match r.without_devcontainer.take() {
        Some(detected) => {
            let mut detected = *detected;
            detected.problems.push(format!(
                "the devcontainer's image {image} could not be pulled ({why}): the detected image runs instead"
            ));
            *r = detected;
            Had::FellBack {
                wanted: image,
                image: r.config.image.clone(),
                why,
            }
        }
        None => Had::Missing { image, why },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_go_only_to_their_own_registry() {
        assert_eq!(registry_of("ghcr.io/acme/dev:1"), "ghcr.io");
        assert_eq!(registry_of("127.0.0.1:5000/dev"), "127.0.0.1:5000");
        assert_eq!(registry_of("localhost/dev"), "localhost");
        assert_eq!(registry_of("python:3.12"), "docker.io");
        assert_eq!(registry_of("library/python"), "docker.io");
        let g = Registry {
            host: "ghcr.io".into(),
            username: "bot".into(),
            token: SecretString::from("s3cret".to_owned()),
        };
        assert!(g.for_image("ghcr.io/acme/dev:1").is_some());
        // A repository naming another registry (or one that merely starts like it) gets none.
        assert!(g.for_image("ghcr.io.evil.example/acme/dev:1").is_none());
        assert!(g.for_image("evil.example/ghcr.io/dev").is_none());
        assert!(g.for_image("python:3.12").is_none());
        assert!(!format!("{g:?}").contains("s3cret"));
    }
}
