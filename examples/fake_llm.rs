//! The fake model server of the test suite, standalone: an OpenAI-compatible
//! `/v1/chat/completions` that replays a scripted conversation per role.
//!
//! ```text
//! cargo run --example fake_llm -- --script script.json
//! ```
//!
//! Without `--script` it replays the README's demo (`examples/demo-script.json`, compiled in).
//!
//! A script maps a role (from the system prompt's `# Role: <Name>` line, lower-cased) to steps:
//! `{"builder": [{"tools": [{"name": "read_file", "arguments": {"path": "calc.py"}}]},
//!               {"say": "Done."}, {"status": 429, "retry_after": 1}]}`.

#[path = "../tests/support/mod.rs"]
mod support;

use std::path::PathBuf;

use anyhow::Context as _;
use clap::Parser;

/// A fake OpenAI-compatible model server that replays a script.
#[derive(Parser)]
#[command(name = "fake_llm")]
struct Args {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:9001")]
    listen: std::net::SocketAddr,
    /// The script (JSON): role → list of steps [default: the demo, examples/demo-script.json]
    #[arg(long)]
    script: Option<PathBuf>,
    /// A model it says it serves (`GET /v1/models`), repeatable.
    #[arg(long = "model", default_value = "qwen2.5-coder:7b")]
    models: Vec<String>,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let text = match &args.script {
        Some(path) => {
            std::fs::read_to_string(path).with_context(|| format!("--script {}", path.display()))?
        }
        None => include_str!("demo-script.json").to_owned(),
    };
    let script: support::fake_llm::Script =
        serde_json::from_str(&text).context("the script is not a role → steps JSON object")?;
    let llm = support::fake_llm::FakeLlm::start_on(args.listen, script).await;
    llm.set_models(&args.models.iter().map(String::as_str).collect::<Vec<_>>());
    println!(
        "fake model server on {} (base URL for VIBELOOP_LLM_BASE_URL)",
        llm.url
    );
    tokio::signal::ctrl_c().await?;
    Ok(())
}
