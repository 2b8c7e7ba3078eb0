//! The image a repository's sandboxes run: the engine has it, or it is built from the base's
//! devcontainer Dockerfile and the files beside it ([`ImageBuild`], tagged by their content:
//! the base's own build steps, as trusted as its setup), or it is pulled from its registry (a
//! devcontainer's image, or one `image:` names), or — when a devcontainer's image cannot be
//! had — the detected ecosystem's image runs instead, and the ticket says so: a ticket the
//! detected image could serve never stops for a missing image. The operator's registry
//! credentials go only to the registry they are given for, never to one a repository names.

use secrecy::{ExposeSecret, SecretString};

use sha2::{Digest, Sha256};

use super::Resolved;
use super::detect::Files;
use super::devcontainer::Build;
use crate::sandbox::Backend;

/// A devcontainer's image to build: its Dockerfile and context as the base has them.
#[derive(Debug, Clone, PartialEq)]
pub struct ImageBuild {
    /// `vibeloop-devcontainer:<content hash>`: the same files build once.
    pub tag: String,
    /// The Dockerfile, within the context.
    pub dockerfile: String,
    /// The Dockerfile as a repository path, for people.
    pub from: String,
    pub files: Vec<(String, Vec<u8>)>,
    pub args: Vec<(String, String)>,
}

/// At most this much context is sent to the engine.
const MAX_CONTEXT_BYTES: usize = 16 << 20;

impl ImageBuild {
    /// The build `b` names, with the context's files from `files` (what the tree reads: text
    /// files up to 1 MiB; a binary one is left out, and a `COPY` of it fails the build, which
    /// then says so); `None` when the Dockerfile is not among them or the context is too large.
    pub fn of(b: &Build, files: &dyn Files) -> Option<Self> {
        let prefix = format!("{}/", b.context);
        let mut context: Vec<(String, Vec<u8>)> = files
            .paths()
            .iter()
            .filter_map(|p| {
                let rel = p.strip_prefix(&prefix)?;
                Some((rel.to_owned(), files.read(p)?.into_bytes()))
            })
            .collect();
        context.sort();
        let dockerfile = b.dockerfile.strip_prefix(&prefix)?.to_owned();
        let size: usize = context.iter().map(|(_, c)| c.len()).sum();
        if size > MAX_CONTEXT_BYTES || !context.iter().any(|(p, _)| *p == dockerfile) {
            return None;
        }
        // Each part length-prefixed: no two different builds hash alike.
        let mut h = Sha256::new();
        let mut part = |bytes: &[u8]| {
            h.update((bytes.len() as u64).to_le_bytes());
            h.update(bytes);
        };
        part(dockerfile.as_bytes());
        for (path, content) in &context {
            part(path.as_bytes());
            part(content);
        }
        for (k, v) in &b.args {
            part(k.as_bytes());
            part(v.as_bytes());
        }
        let tag = format!("vibeloop-devcontainer:{}", &hex::encode(h.finalize())[..16]);
        Some(Self {
            tag,
            dockerfile,
            from: b.dockerfile.clone(),
            files: context,
            args: b.args.clone(),
        })
    }

    /// The context as the engine takes it: a tar archive.
    fn tar(&self) -> std::io::Result<Vec<u8>> {
        let mut tar = tar::Builder::new(Vec::new());
        for (path, content) in &self.files {
            let mut header = tar::Header::new_gnu();
            header.set_size(content.len() as u64);
            header.set_mode(0o644);
            header.set_mtime(0);
            tar.append_data(&mut header, path, content.as_slice())?;
        }
        tar.into_inner()
    }
}

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
    /// Built from the devcontainer's Dockerfile (`from`).
    Built {
        image: String,
        from: String,
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
            Had::Built {
                image,
                from,
                seconds,
            } => Some(format!(
                "built the image {image} from {from} in {seconds:.0} s"
            )),
            Had::FellBack { wanted, image, why } => Some(format!(
                "the devcontainer's image {wanted} could not be had ({why}), so the detected {image} runs instead: \
                 make {wanted} reachable (VIBELOOP_REGISTRY, VIBELOOP_REGISTRY_USER, VIBELOOP_REGISTRY_TOKEN for a private registry), \
                 fix its Dockerfile, or set `image:` in .github/hive.yml"
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
    let build = r.image_build.clone().filter(|b| b.tag == image);
    let why = if let Some(b) = build {
        let started = std::time::Instant::now();
        let built = match b.tar() {
            Ok(tar) => {
                backend
                    .build(&b.tag, tar, &b.dockerfile, &b.args, progress)
                    .await
            }
            Err(e) => Err(crate::sandbox::SandboxError::Io(e)),
        };
        match built {
            Ok(()) => {
                return Had::Built {
                    image,
                    from: b.from,
                    seconds: started.elapsed().as_secs_f64(),
                };
            }
            Err(e) => format!("building it from {} failed: {e}", b.from),
        }
    } else if image.starts_with("vibeloop-runner:") {
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
                "the devcontainer's image {image} could not be had ({why}): the detected image runs instead"
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
