//! Command lines of the operator's tools beside `serve`: `vibeloop setup` (register the GitHub
//! App through GitHub's manifest flow) and `vibeloop doctor` (check an installation). Each
//! flag has an environment variable, like `serve`'s.

use std::path::PathBuf;

use clap::Args;

/// `vibeloop setup`: create the GitHub App from `app-manifest/manifest.json` and write its
/// credentials to an env file.
#[derive(Debug, Clone, Args)]
pub struct SetupArgs {
    /// Address of the local page that walks through GitHub's manifest flow.
    #[arg(long, env = "VIBELOOP_SETUP_LISTEN", default_value = "127.0.0.1:3001")]
    pub listen: String,
    /// The bot's public base URL: GitHub sends webhooks to `<url>/webhook`.
    #[arg(long, env = "VIBELOOP_PUBLIC_URL")]
    pub public_url: String,
    /// Create the App under this organisation instead of your user account.
    #[arg(long, env = "VIBELOOP_SETUP_ORG")]
    pub org: Option<String>,
    /// Name of the App on GitHub (must be unique there).
    #[arg(long, env = "VIBELOOP_APP_NAME", default_value = "vibeloop")]
    pub name: String,
    /// GitHub's web address (GitHub Enterprise: `https://host`).
    #[arg(long, env = "GITHUB_URL", default_value = "https://github.com")]
    pub github_url: String,
    /// Base URL of GitHub's REST API.
    #[arg(long, env = "GITHUB_API_URL", default_value = "https://api.github.com")]
    pub github_api_url: String,
    /// Where the credentials are written (mode 0600; an existing file is not overwritten).
    #[arg(long, env = "VIBELOOP_ENV_FILE", default_value = ".env")]
    pub env_file: PathBuf,
    /// A manifest to register instead of the built-in `app-manifest/manifest.json` (the
    /// command fills in its name, `url`, `hook_attributes.url`, `redirect_url` and `callback_urls`).
    #[arg(long, env = "VIBELOOP_SETUP_MANIFEST")]
    pub manifest: Option<PathBuf>,
}
