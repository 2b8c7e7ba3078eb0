//! The real `vibeloop` binary as a child process, configured through its environment like a
//! user would, with its log captured to a file.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use vibeloop::store::Store;

/// What the bot is pointed at.
pub struct BotEnv {
    pub data_dir: PathBuf,
    pub github_api_url: String,
    pub llm_url: String,
    pub webhook_secret: String,
    pub app_id: Option<u64>,
    pub extra: Vec<(String, String)>,
    /// Run the bot in this working directory on its default data directory (`./.vibeloop`,
    /// no `VIBELOOP_DATA_DIR`), as a new user would; `data_dir` is then `<cwd>/.vibeloop`.
    pub cwd: Option<PathBuf>,
}

pub struct Bot {
    pub url: String,
    pub data_dir: PathBuf,
    /// `DATABASE_URL` when the bot was given one (else its SQLite file in `data_dir`).
    pub database_url: Option<String>,
    log_path: PathBuf,
    child: Child,
}

/// How many [`Bot`]s are alive per data directory. A killed bot's containers and worktree
/// disks are the next bot's to find, as after a real crash; the last bot of a directory to go,
/// killed or not, removes them (a test that ends on a crash left them to nobody).
static LIVE: std::sync::Mutex<std::collections::BTreeMap<PathBuf, usize>> =
    std::sync::Mutex::new(std::collections::BTreeMap::new());

fn live(dir: &Path, by: isize) -> usize {
    let mut all = LIVE.lock().unwrap_or_else(|e| e.into_inner());
    let n = all.entry(dir.to_owned()).or_default();
    *n = n.saturating_add_signed(by);
    let now = *n;
    if now == 0 {
        all.remove(dir);
    }
    now
}

impl Drop for Bot {
    /// Stops the bot at the end of its test — passed or panicked — and removes the sandbox
    /// containers it left running, so that a failing test does not leave them to the next.
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if live(&self.data_dir, -1) == 0 {
            remove_containers(&self.data_dir);
            // The worktrees' disks (the bot runs as root here), which no directory removal
            // takes away.
            let _ = vibeloop::sandbox::disk::release_all(&self.data_dir);
        }
    }
}

/// Removes the containers of the bot instance on `data_dir` (the sandbox's own clean-up), on a
/// thread and runtime of its own: a drop may run inside the test's runtime.
fn remove_containers(data_dir: &Path) {
    let dir = data_dir.to_owned();
    let cleaned = std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .ok()?;
        rt.block_on(async {
            let kind = Some(vibeloop::sandbox::Kind::Docker);
            match vibeloop::sandbox::Backend::detect(&dir, kind).await {
                Ok((vibeloop::sandbox::Backend::Docker(d), _)) => d.remove_leftovers().await.ok(),
                _ => None,
            }
        })
    })
    .join();
    if let Ok(Some(n)) = cleaned
        && n > 0
    {
        eprintln!("removed {n} sandbox container(s) the bot left running");
    }
}

/// The private key of the fake app.
pub fn app_key_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/keys/app.pem")
}

pub fn app_public_key() -> String {
    std::fs::read_to_string(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/keys/app.pub.pem"),
    )
    .unwrap()
}

impl Bot {
    /// Starts `vibeloop serve` and waits until `/healthz` answers.
    pub async fn start(env: &BotEnv) -> Bot {
        // The free port may be taken by another socket before the bot binds it (an outgoing
        // connection's ephemeral port, another test's server): then try another one.
        for _ in 0..5 {
            match Self::try_start_on(env, crate::support::free_port()).await {
                Ok(bot) => return bot,
                Err(log) if log.contains("Address already in use") => continue,
                Err(log) => panic!("the bot did not start\n--- bot log ---\n{log}"),
            }
        }
        panic!("five free ports were taken before the bot could bind one");
    }

    /// Kills the bot (if it still runs) and starts it again on the same address, as a
    /// restarted service would be.
    pub async fn restart(&mut self, env: &BotEnv) {
        self.kill();
        let port: u16 = self.url.rsplit(':').next().unwrap().parse().unwrap();
        *self = Self::start_on(env, port).await;
    }

    /// Starts `vibeloop serve` listening on `port`.
    pub async fn start_on(env: &BotEnv, port: u16) -> Bot {
        match Self::try_start_on(env, port).await {
            Ok(bot) => bot,
            Err(log) => panic!("the bot did not start\n--- bot log ---\n{log}"),
        }
    }

    /// Starts `vibeloop serve` listening on `port`; its log if it exits or does not answer
    /// `/healthz` within 30 s.
    async fn try_start_on(env: &BotEnv, port: u16) -> Result<Bot, String> {
        if env.cwd.is_none() {
            std::fs::create_dir_all(&env.data_dir).unwrap();
        }
        // Beside the data directory, not in it: a test may fill the data directory's disk.
        let log_path = PathBuf::from(format!("{}-bot-{port}.log", env.data_dir.display()));
        // Appended to: a restarted bot's log follows the one before it.
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log_path)
            .unwrap();
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_vibeloop"));
        cmd.arg("serve")
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("RUST_LOG", "info,vibeloop=debug")
            .env("VIBELOOP_LISTEN", format!("127.0.0.1:{port}"));
        match &env.cwd {
            Some(cwd) => {
                assert_eq!(
                    env.data_dir,
                    cwd.join(".vibeloop"),
                    "the default data directory"
                );
                cmd.current_dir(cwd);
            }
            None => {
                cmd.env("VIBELOOP_DATA_DIR", &env.data_dir);
            }
        }
        // The tests serve the dashboard over plain HTTP on purpose.
        cmd.env("VIBELOOP_INSECURE_COOKIES", "true");
        cmd.env("GITHUB_WEBHOOK_SECRET", &env.webhook_secret)
            .env("GITHUB_API_URL", &env.github_api_url)
            .env("VIBELOOP_LLM_BASE_URL", &env.llm_url)
            .env("VIBELOOP_LLM_MODEL", "fake-model")
            .envs(env.extra.iter().map(|(k, v)| (k, v)))
            .stdout(Stdio::from(log.try_clone().unwrap()))
            .stderr(Stdio::from(log));
        if let Some(id) = env.app_id {
            cmd.env("GITHUB_APP_ID", id.to_string())
                .env("GITHUB_PRIVATE_KEY_PATH", app_key_path());
        }
        let mut child = cmd.spawn().expect("vibeloop binary starts");
        let client = reqwest::Client::new();
        let healthz = format!("http://127.0.0.1:{port}/healthz");
        let started = super::poll_until(Duration::from_secs(30), || {
            let exited = matches!(child.try_wait(), Ok(Some(_)));
            let req = client.get(&healthz);
            async move {
                if exited {
                    return Some(false);
                }
                super::answers_ok(req).await.map(|()| true)
            }
        })
        .await;
        if started != Some(true) {
            let _ = child.kill();
            let _ = child.wait();
            return Err(std::fs::read_to_string(&log_path).unwrap_or_default());
        }
        live(&env.data_dir, 1);
        Ok(Bot {
            url: format!("http://127.0.0.1:{port}"),
            data_dir: env.data_dir.clone(),
            database_url: env
                .extra
                .iter()
                .find(|(k, _)| k == "DATABASE_URL")
                .map(|(_, v)| v.clone()),
            log_path,
            child,
        })
    }

    /// The bot's process id (for RSS and file-descriptor readings).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log_path).unwrap_or_default()
    }

    /// Kills the bot at once (SIGKILL), as a crash would.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// The bot's database (its own SQLite file unless it was given `DATABASE_URL`), opened
    /// alongside it.
    pub async fn store(&self) -> Store {
        match &self.database_url {
            Some(url) => Store::connect(url).await.unwrap(),
            None => store_at(&self.data_dir).await,
        }
    }

    /// Polls `check` until it yields a value; on timeout, fails with the bot's log.
    pub async fn wait_until<T, F, Fut>(&self, what: &str, timeout: Duration, check: F) -> T
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = Option<T>>,
    {
        match super::poll_until(timeout, check).await {
            Some(v) => v,
            None => panic!(
                "timed out after {timeout:?} waiting for {what}\n--- bot log ---\n{}",
                self.log()
            ),
        }
    }
}

pub async fn store_at(data_dir: &Path) -> Store {
    let url = format!(
        "sqlite://{}?mode=rwc",
        data_dir.join("vibeloop.db").display()
    );
    Store::connect(&url).await.unwrap()
}
