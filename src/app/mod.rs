//! Process wiring for `vibeloop serve` and `vibeloop migrate`: logging, the store, the HTTP
//! server and the workers, and a graceful shutdown on SIGINT/SIGTERM. The other commands have a
//! module each: [`gates`], [`setup`], [`doctor`], [`run`], [`eval`].

pub mod doctor;
#[cfg(feature = "forge")]
pub mod eval;
pub mod gates;
#[cfg(feature = "forge")]
pub mod run;
pub mod setup;

use std::sync::Arc;

use anyhow::Context as _;
use secrecy::ExposeSecret as _;
use tokio::sync::{Notify, watch};
use tracing::{info, warn};

use crate::config::access::ProcessRole;
use crate::config::llm::LlmConfig;
use crate::config::{ServeConfig, StoreArgs};
use crate::github::GitHubApp;
use crate::hive::{self, Hive};
use crate::llm::routing::Router;
use crate::sandbox::Backend;
use crate::store::{Dialect, Store};
use crate::webhook::{self, Ingress};
use crate::workspace::{Author, Workspace};

/// Sets up `tracing` output: text or JSON lines, filtered by `RUST_LOG` (default `info`).
pub fn init_logging(json: bool) {
    init_logging_with(json, "info");
}

/// Sets up `tracing` output with `level` (`info`, `warn`…) for Vibeloop when `RUST_LOG` is
/// not set.
pub fn init_logging_with(json: bool, level: &str) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| {
        tracing_subscriber::EnvFilter::new(format!("{level},sqlx=warn,octocrab=warn,hyper=warn"))
    });
    // Colours only for a terminal: a log file or a collector gets plain text.
    let colour = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(colour)
        .with_writer(std::io::stderr);
    if json {
        builder.json().init();
    } else {
        builder.init();
    }
}

/// Opens the store and applies migrations.
pub async fn open_store(url: &str) -> anyhow::Result<Store> {
    let store = Store::connect(url).await?;
    store.migrate().await?;
    Ok(store)
}

/// `vibeloop migrate`.
pub async fn migrate(args: &StoreArgs) -> anyhow::Result<()> {
    open_store(&args.database_url()).await?;
    println!("migrations applied");
    Ok(())
}

/// `vibeloop serve`: runs until SIGINT or SIGTERM.
pub async fn serve(config: ServeConfig) -> anyhow::Result<()> {
    for w in &config.warnings {
        warn!("{w}");
    }
    std::fs::create_dir_all(&config.data_dir).with_context(|| {
        format!(
            "cannot create the data directory {}",
            config.data_dir.display()
        )
    })?;
    crate::metrics::install();
    let store = open_store(&config.database_url).await?;
    let role = config.role;
    if store.dialect() == Dialect::Sqlite && role != ProcessRole::All {
        anyhow::bail!(
            "VIBELOOP_ROLE={}: several processes need a shared PostgreSQL database (DATABASE_URL=postgres://…); SQLite serves one process with VIBELOOP_ROLE=all",
            role.as_str()
        );
    }
    let instance = crate::ids::Instance::of(&config.data_dir);
    let owner = instance.lease_owner(std::process::id());
    let released = if store.dialect() == Dialect::Sqlite {
        // SQLite means one process: leases held by a previous, crashed run are free now.
        store.release_all_leases().await?
    } else if role.runs_workers() {
        // A shared database: only this data directory's earlier process is surely gone.
        store
            .release_leases_of(&instance.owner_prefix(), &owner)
            .await?
    } else {
        0
    };
    if released > 0 {
        info!(
            jobs = released,
            "resuming jobs interrupted by the last shutdown"
        );
    }
    let jobs_queued = Arc::new(Notify::new());
    let listener = tokio::net::TcpListener::bind(config.listen)
        .await
        .with_context(|| format!("cannot listen on {}", config.listen))?;
    info!(addr = %listener.local_addr()?, database = ?store.dialect(), role = role.as_str(), "listening");

    let (stop_tx, stop_rx) = watch::channel(false);
    let hive = match &config.app {
        Some(creds) => Some(build_hive(&config, creds, &store, owner, jobs_queued.clone()).await?),
        None => None,
    };
    let workers = match (&hive, role.runs_workers()) {
        (Some(hive), true) => {
            info!(
                workers = config.workers,
                sandbox = hive.sandbox.name(),
                "workers started"
            );
            hive::sweep::schedule(&hive.store).await?;
            Some(tokio::spawn(hive::run_workers(
                hive.clone(),
                config.workers,
                stop_rx.clone(),
            )))
        }
        _ => None,
    };
    tokio::spawn(async move {
        shutdown_signal().await;
        info!("shutting down");
        let _ = stop_tx.send(true);
    });
    let dashboard = crate::dashboard::Dashboard {
        store: store.clone(),
        access: Arc::new(config.access.clone()),
        keys: crate::dashboard::auth::Keys::derive(
            session_key(&config)?.expose_secret().as_bytes(),
            config.access.token.as_ref(),
        ),
        github_url: config.github_git_url.clone(),
        github_api_url: config.github_api_url.clone(),
        github: hive.as_ref().map(|h| h.github.clone()),
        sandbox: hive.as_ref().map(|h| h.sandbox.clone()),
        data_dir: config.data_dir.clone(),
        http: reqwest::Client::builder()
            .timeout(std::time::Duration::from_secs(20))
            .build()?,
        login_throttle: Default::default(),
        recheck: config.recheck,
    };
    let http = if role.takes_webhooks() {
        let ingress = Ingress {
            store: store.clone(),
            deliveries: crate::store::deliveries::DeliveryWriter::spawn(store.clone()),
            secrets: Arc::new(config.webhook_secrets.clone()),
            jobs_queued,
        };
        webhook::router(ingress)
    } else {
        webhook::health(store.clone())
    };
    let http = http.merge(crate::dashboard::router(dashboard));
    let mut server_stop = stop_rx.clone();
    // Each connection's address goes with its requests: wrong tokens are throttled per client.
    let http = http.into_make_service_with_connect_info::<std::net::SocketAddr>();
    axum::serve(listener, http)
        .with_graceful_shutdown(async move {
            let _ = server_stop.changed().await;
        })
        .await
        .context("HTTP server failed")?;
    if let Some(workers) = workers {
        // Workers finish the step they are in; a job cut short resumes at the next start.
        if tokio::time::timeout(std::time::Duration::from_secs(10), workers)
            .await
            .is_err()
        {
            warn!("workers still busy after 10 s; their jobs resume at the next start");
        }
    }
    store.close().await;
    Ok(())
}

/// The hive of this process: the App's client, the workspace, the models, the sandbox. An
/// ingress process runs no job, so it neither probes Docker nor clears leftovers (a worker's
/// containers on a shared engine are not its to remove).
async fn build_hive(
    config: &ServeConfig,
    creds: &crate::config::AppCredentials,
    store: &Store,
    owner: String,
    jobs_queued: Arc<Notify>,
) -> anyhow::Result<Arc<Hive>> {
    let sandbox = if config.role.runs_workers() {
        start_sandbox_backend(&config.data_dir, config.sandbox).await?
    } else {
        Backend::Local
    };
    // An ingest process makes no worktree: no disk to probe for.
    let workspace = if config.role.runs_workers() {
        workspace(&config.data_dir, &config.github_git_url)
    } else {
        Workspace::new(&config.data_dir, &config.github_git_url)
    };
    for path in workspace.clear_stale_locks() {
        info!(path = %path.display(), "removed a git lock file left by the last run");
    }
    Ok(Arc::new(Hive {
        store: store.clone(),
        github: Arc::new(GitHubApp::new(
            creds,
            &config.github_api_url,
            &config.github_graphql_url,
        )?),
        workspace,
        models: Arc::new(router(&config.llm)?),
        prompts: crate::agent::prompts::Prompts::new(config.llm.prompts_dir.clone()),
        sandbox,
        environments: crate::env::Settings::new(&config.data_dir),
        author: Author::default(),
        owner,
        sweep_every: config.sweep_interval,
        lease: config.lease,
        jobs_queued,
    }))
}

/// The models of the roles: the default route, refined by the models file when there is one.
fn router(llm: &LlmConfig) -> anyhow::Result<Router> {
    let default = llm.default.clone();
    let router = match &llm.models_file {
        Some((_, text)) => Router::from_file(default, text, |var| std::env::var(var).ok())?,
        None => Router::single(default),
    };
    for role in crate::ticket::Role::ROUTED.map(crate::ticket::Role::as_str) {
        let r = router.route(role);
        info!(role, provider = ?r.provider, model = %r.model, "model");
    }
    Ok(router)
}

/// The workspace of `data_dir`, its worktrees each on a disk of its own where this process
/// can mount one ([`crate::sandbox::disk`]).
fn workspace(data_dir: &std::path::Path, git_url: &url::Url) -> Workspace {
    let disks = crate::sandbox::disk::probe(data_dir);
    match &disks {
        Ok(()) => info!("each worktree gets a disk of its own (limits.disk_mb)"),
        Err(why) => warn!("{why}"),
    }
    Workspace::new(data_dir, git_url).with_disks(disks.is_ok())
}

/// Picks the sandbox backend, says which in the log, and clears what a crash left behind.
async fn start_sandbox_backend(
    data_dir: &std::path::Path,
    kind: Option<crate::config::SandboxKind>,
) -> anyhow::Result<Backend> {
    let (backend, fallback) = Backend::detect(data_dir, kind)
        .await
        .context("VIBELOOP_SANDBOX=docker, but no Docker engine answers")?;
    match (&backend, fallback) {
        (Backend::Docker(d), _) => info!(engine = d.version(), "sandbox: docker"),
        // No silent way out: the model's code never runs on this host unless asked for.
        (Backend::Local, Some(why)) => anyhow::bail!(
            "no Docker engine answers ({why}), and serve runs the agents' and gates' commands only in containers: start Docker, or set VIBELOOP_SANDBOX=local to run them as plain processes on this host, with no isolation, on purpose"
        ),
        (Backend::Local, None) => warn!(
            "sandbox: local processes, as VIBELOOP_SANDBOX=local asks: the agents' and gates' commands run on this host with no isolation"
        ),
    }
    let removed = backend.remove_leftovers().await?;
    if removed > 0 {
        info!(
            containers = removed,
            "removed sandboxes left by the last run"
        );
    }
    Ok(backend)
}

async fn shutdown_signal() {
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .expect("SIGTERM handler");
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
}

/// The key that signs dashboard sessions: `VIBELOOP_SESSION_KEY`, else `<data>/session.key`,
/// made with 32 random bytes the first time (readable by its owner only). Never the webhook
/// secret: whoever knows that could sign themselves in.
fn session_key(config: &crate::config::ServeConfig) -> anyhow::Result<secrecy::SecretString> {
    use anyhow::Context as _;
    if let Some(k) = &config.access.session_key {
        return Ok(k.clone());
    }
    let path = config.data_dir.join("session.key");
    if let Ok(text) = std::fs::read_to_string(&path)
        && text.trim().len() >= 32
    {
        return Ok(secrecy::SecretString::from(text.trim().to_owned()));
    }
    std::fs::create_dir_all(&config.data_dir)
        .with_context(|| format!("cannot make {}", config.data_dir.display()))?;
    let key = hex::encode(rand::random::<[u8; 32]>());
    let scratch = config
        .data_dir
        .join(format!("session.key.{}", std::process::id()));
    {
        use std::io::Write as _;
        use std::os::unix::fs::OpenOptionsExt as _;
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&scratch)
            .with_context(|| format!("cannot write {}", scratch.display()))?;
        f.write_all(key.as_bytes())?;
        f.sync_all()?;
    }
    // Two processes starting at once: the first rename wins, and both read what is there.
    if std::fs::hard_link(&scratch, &path).is_err() && !path.exists() {
        std::fs::rename(&scratch, &path)?;
    }
    let _ = std::fs::remove_file(&scratch);
    let text = std::fs::read_to_string(&path)
        .with_context(|| format!("cannot read {}", path.display()))?;
    Ok(secrecy::SecretString::from(text.trim().to_owned()))
}
