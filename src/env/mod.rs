//! A repository's environment: what it is built and tested with. From the base branch's files,
//! [`detect`] finds the ecosystems (Rust, Python, Node, Go) and their defaults, [`devcontainer`]
//! reads a devcontainer, and [`resolve`] fills the keys `.github/hive.yml` leaves unset from them,
//! saying where each came from. [`setup`] runs the setup command once per environment, with
//! network, and [`cache`] keeps the result for every later sandbox of the repository (a second
//! ticket on the same lockfile pays nothing). [`tree`] reads a commit's files for the detector,
//! and [`manifests`] what they declare (libraries, services) for the knowledge check;
//! [`coverage`] holds each ecosystem's coverage command for the acceptance criteria.
//! [`image`] makes sure the engine has the image (built, pulled, or the detected one instead),
//! [`toolchain`] compares the versions a project asks for with the image's, [`hints`] says
//! what a failed setup's output asks for, and [`reach`] is doctor's download from a setup
//! sandbox.

pub mod cache;
pub mod coverage;
pub mod detect;
pub mod devcontainer;
pub mod fetch;
mod fill;
pub mod groups;
pub mod hints;
pub mod how;
pub mod image;
pub mod includes;
pub mod instructions;
pub mod manifests;
pub mod node_deps;
pub mod poetry;
pub mod precommit;
pub mod pyproject;
pub mod reach;
pub mod requirement;
pub mod resolve;
pub mod setup;
pub mod toolchain;
pub mod tree;

pub use cache::{EnvInfo, EnvKey, Envs, Retention};
pub use resolve::{Resolved, resolve};
pub use setup::{Lookup, Maker, Network, Pending, Ready, SetupError};

/// The variables that give a build the project's `version` (from the bot's git, which a
/// sandbox cannot read) for the tools that take it from git tags: setuptools-scm and
/// hatch-vcs, pbr, and poetry-dynamic-versioning. Never part of an environment's key: every
/// commit has its own version.
pub fn version_env(version: &str) -> Vec<(String, String)> {
    [
        "SETUPTOOLS_SCM_PRETEND_VERSION",
        "PBR_VERSION",
        "POETRY_DYNAMIC_VERSIONING_BYPASS",
    ]
    .iter()
    .map(|k| ((*k).to_owned(), version.to_owned()))
    .collect()
}

/// Where a bot keeps environments, how many, and what setup may use of the host's network.
#[derive(Debug, Clone)]
pub struct Settings {
    pub envs: Envs,
    pub network: Network,
    pub retention: Retention,
    /// Credentials for the one registry the operator names (`image::Registry::from_env`).
    pub registry: Option<image::Registry>,
}

impl Settings {
    /// Environments under `<data_dir>/envs`, the host's proxies and `VIBELOOP_SANDBOX_CA_BUNDLE`,
    /// and the retention of `VIBELOOP_ENV_MAX_GB` and `VIBELOOP_ENV_MAX_AGE_DAYS` (20 GB, 14 days
    /// by default).
    pub fn new(data_dir: &std::path::Path) -> Self {
        let mut retention = Retention::default();
        let num = |k: &str| {
            std::env::var(k)
                .ok()
                .and_then(|v| v.trim().parse::<f64>().ok())
                .filter(|v| *v > 0.0)
        };
        if let Some(gb) = num("VIBELOOP_ENV_MAX_GB") {
            retention.max_bytes = (gb * 1e9) as u64;
        }
        if let Some(days) = num("VIBELOOP_ENV_MAX_AGE_DAYS") {
            retention.max_age = std::time::Duration::from_secs_f64(days * 86_400.0);
        }
        Self {
            envs: Envs::in_data_dir(data_dir),
            network: Network::from_env(),
            retention,
            registry: image::Registry::from_env(),
        }
    }

    /// What makes environments with `backend`.
    pub fn maker<'a>(&'a self, backend: &'a crate::sandbox::Backend) -> Maker<'a> {
        Maker {
            backend,
            envs: &self.envs,
            network: &self.network,
            retention: self.retention,
        }
    }
}
