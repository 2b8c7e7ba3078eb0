//! Where the agents' models live: the flags shared by `serve`, `doctor` and `run` (the default
//! provider, endpoint, key and model; the models file routing roles; the prompts directory),
//! checked into [`LlmConfig`].

use std::path::PathBuf;

use clap::Args;
use secrecy::SecretString;

use super::{ConfigError, bad, parse_url};

/// The model flags.
#[derive(Debug, Clone, Args)]
pub struct LlmArgs {
    /// OpenAI-compatible endpoint of the model provider.
    #[arg(
        long,
        env = "VIBELOOP_LLM_BASE_URL",
        default_value = "http://127.0.0.1:11434/v1"
    )]
    pub llm_base_url: String,
    /// API key of the model provider (sent as a bearer token).
    #[arg(long, env = "VIBELOOP_LLM_API_KEY", hide_env_values = true)]
    pub llm_api_key: Option<String>,
    /// Model name sent to the provider.
    #[arg(long, env = "VIBELOOP_LLM_MODEL", default_value = "qwen2.5-coder:7b")]
    pub llm_model: String,
    /// API of the model provider: `openai` (OpenAI-compatible) or `anthropic`.
    #[arg(long, env = "VIBELOOP_LLM_PROVIDER", default_value = "openai")]
    pub llm_provider: String,
    /// YAML file routing roles to models and holding the price table (see docs/configuration.md).
    #[arg(long, env = "VIBELOOP_MODELS_FILE")]
    pub models_file: Option<PathBuf>,
    /// Directory of role prompts (`builder.md`…) replacing the compiled-in ones.
    #[arg(long, env = "VIBELOOP_PROMPTS_DIR")]
    pub prompts_dir: Option<PathBuf>,
}

/// Where the agents' models live, checked.
#[derive(Clone)]
pub struct LlmConfig {
    /// The route every role uses unless the models file says otherwise.
    pub default: crate::llm::Route,
    /// The models file's text, read at start-up.
    pub models_file: Option<(PathBuf, String)>,
    pub prompts_dir: Option<PathBuf>,
}

impl LlmArgs {
    /// Checks the flags; an error names the setting.
    pub fn config(&self) -> Result<LlmConfig, ConfigError> {
        if self.llm_model.trim().is_empty() {
            return Err(bad("VIBELOOP_LLM_MODEL", "is empty: name the model to use"));
        }
        let api_key = self
            .llm_api_key
            .as_deref()
            .map(str::trim)
            .filter(|k| !k.is_empty())
            .map(|k| SecretString::from(k.to_owned()));
        let provider = match self.llm_provider.trim() {
            "openai" => crate::llm::Provider::Openai,
            "anthropic" => crate::llm::Provider::Anthropic,
            other => {
                return Err(bad(
                    "VIBELOOP_LLM_PROVIDER",
                    format!("{other:?} is neither openai nor anthropic"),
                ));
            }
        };
        let models_file = match &self.models_file {
            Some(path) => Some((
                path.clone(),
                std::fs::read_to_string(path).map_err(|e| {
                    bad(
                        "VIBELOOP_MODELS_FILE",
                        format!("cannot read {}: {e}", path.display()),
                    )
                })?,
            )),
            None => None,
        };
        let prompts_dir = match &self.prompts_dir {
            Some(dir) if !dir.is_dir() => {
                return Err(bad(
                    "VIBELOOP_PROMPTS_DIR",
                    format!("{} is not a directory", dir.display()),
                ));
            }
            dir => dir.clone(),
        };
        Ok(LlmConfig {
            default: crate::llm::Route {
                provider,
                base_url: parse_url("VIBELOOP_LLM_BASE_URL", &self.llm_base_url)?,
                api_key,
                model: self.llm_model.trim().to_owned(),
                temperature: 0.2,
            },
            models_file,
            prompts_dir,
        })
    }
}
