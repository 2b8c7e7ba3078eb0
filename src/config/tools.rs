//! Command lines of the tools beside `serve`: `vibeloop setup` (register the GitHub App
//! through GitHub's manifest flow), `vibeloop doctor` (check an installation; it takes `serve`'s
//! flags) and `vibeloop run` (the whole hive on a local repository, without GitHub). Each
//! setting flag has an environment variable, like `serve`'s.

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

/// `vibeloop run`: the whole hive on a local repository — plan, tests first, code, gates,
/// review — against a scratch copy of it; nothing is pushed anywhere.
#[derive(Debug, Clone, Args)]
pub struct RunArgs {
    /// The repository to work on; the run starts from its committed state.
    #[arg(long, default_value = ".")]
    pub repo: PathBuf,
    /// What to change, written as you would write the issue (its first line is the title).
    #[arg(long)]
    pub goal: String,
    /// The branch to start from [default: the branch checked out in --repo]
    #[arg(long)]
    pub base: Option<String>,
    /// Approve for the person running: a plan that waits for approval goes ahead, and an
    /// approved change is rebased, checked again, merged into the scratch copy's base branch
    /// and tagged. Without it the run stops where the hive waits for a person.
    #[arg(long)]
    pub approve: bool,
    /// Where the run keeps its scratch copy, worktrees and database; must be empty or new
    /// [default: a new directory under the system's temporary directory]
    #[arg(long, env = "VIBELOOP_RUN_DIR")]
    pub data_dir: Option<PathBuf>,
    /// Where gate commands run: `auto` (Docker when an engine answers, else local), `docker` or
    /// `local`.
    #[arg(long, env = "VIBELOOP_SANDBOX", default_value = "auto")]
    pub sandbox: String,
    /// Give up after this many minutes.
    #[arg(long, default_value_t = 60)]
    pub timeout_minutes: u64,
    /// Show the bot's log on standard error (otherwise only warnings and errors).
    #[arg(long)]
    pub verbose: bool,
    #[command(flatten)]
    pub llm: super::llm::LlmArgs,
}
