//! Which model each role uses. The default route comes from the process settings
//! (`VIBELOOP_LLM_*`); a models file (`VIBELOOP_MODELS_FILE`, YAML) may give any role its own
//! provider, endpoint, key and temperature — so the Critic can use another model than the
//! Builder — and holds the price table the budget ledger uses. Keys are named by environment
//! variable (`api_key_env`), never written in the file.
//!
//! ```yaml
//! default: { provider: openai, base_url: http://127.0.0.1:11434/v1, model: qwen2.5-coder:7b }
//! roles:
//!   critic: { provider: anthropic, base_url: https://api.anthropic.com, api_key_env: ANTHROPIC_API_KEY, model: claude-sonnet-4-5, temperature: 0 }
//! prices:                       # USD per million tokens
//!   claude-sonnet-4-5: { prompt: 3.0, completion: 15.0 }
//! ```

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;

use secrecy::SecretString;
use serde::Deserialize;

use super::budget::{Price, Prices};
use super::{LlmClient, Provider, Route};

use crate::ticket::Role;

/// One route as a models file writes it; absent fields come from the default.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RouteSpec {
    provider: Option<Provider>,
    base_url: Option<String>,
    api_key_env: Option<String>,
    model: Option<String>,
    temperature: Option<f32>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct ModelsFile {
    #[serde(default)]
    default: RouteSpec,
    #[serde(default)]
    roles: BTreeMap<String, RouteSpec>,
    #[serde(default)]
    prices: BTreeMap<String, Price>,
}

/// A models file that cannot be used; the message names the key.
#[derive(Debug, thiserror::Error)]
#[error("VIBELOOP_MODELS_FILE: {0}")]
pub struct RoutingError(String);

/// Routes per role, with one client each (so each keeps its own provider quirks).
pub struct Router {
    default: Route,
    roles: HashMap<String, Route>,
    prices: Prices,
    clients: Mutex<HashMap<String, LlmClient>>,
}

impl Router {
    /// A router where every role uses `default`, with no prices.
    pub fn single(default: Route) -> Self {
        Self {
            default,
            roles: HashMap::new(),
            prices: Prices::default(),
            clients: Mutex::new(HashMap::new()),
        }
    }

    /// Reads a models file over `default`. `env` looks up key variables.
    pub fn from_file(
        default: Route,
        text: &str,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Self, RoutingError> {
        let file: ModelsFile =
            serde_yaml_ng::from_str(text).map_err(|e| RoutingError(e.to_string()))?;
        let base = apply(&default, &file.default, &env, "default")?;
        let mut roles = HashMap::new();
        for (role, spec) in &file.roles {
            if !Role::ROUTED.iter().any(|r| r.as_str() == role.as_str()) {
                return Err(RoutingError(format!(
                    "roles.{role}: not a role; the roles are {}",
                    Role::ROUTED.map(Role::as_str).join(", ")
                )));
            }
            roles.insert(
                role.clone(),
                apply(&base, spec, &env, &format!("roles.{role}"))?,
            );
        }
        Ok(Self {
            default: base,
            roles,
            prices: Prices::new(file.prices),
            clients: Mutex::new(HashMap::new()),
        })
    }

    /// The route of `role`.
    pub fn route(&self, role: &str) -> &Route {
        self.roles.get(role).unwrap_or(&self.default)
    }

    /// The client of `role`.
    pub fn client(&self, role: &str) -> anyhow::Result<LlmClient> {
        let mut clients = self.clients.lock().expect("lock");
        if let Some(c) = clients.get(role) {
            return Ok(c.clone());
        }
        let client = LlmClient::new(self.route(role).clone())?;
        clients.insert(role.to_owned(), client.clone());
        Ok(client)
    }

    pub fn prices(&self) -> &Prices {
        &self.prices
    }
}

fn apply(
    base: &Route,
    spec: &RouteSpec,
    env: &impl Fn(&str) -> Option<String>,
    at: &str,
) -> Result<Route, RoutingError> {
    let mut r = base.clone();
    if let Some(p) = spec.provider {
        r.provider = p;
    }
    if let Some(url) = &spec.base_url {
        r.base_url = url::Url::parse(url)
            .map_err(|e| RoutingError(format!("{at}.base_url: {url:?}: {e}")))?;
    }
    if let Some(var) = &spec.api_key_env {
        let key = env(var)
            .filter(|k| !k.trim().is_empty())
            .ok_or_else(|| RoutingError(format!("{at}.api_key_env: {var} is not set")))?;
        r.api_key = Some(SecretString::from(key));
    }
    if let Some(m) = &spec.model {
        r.model = m.clone();
    }
    if let Some(t) = spec.temperature {
        if !(0.0..=2.0).contains(&t) {
            return Err(RoutingError(format!(
                "{at}.temperature: {t} is not between 0 and 2"
            )));
        }
        r.temperature = t;
    }
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn default_route() -> Route {
        Route {
            provider: Provider::Openai,
            base_url: url::Url::parse("http://127.0.0.1:11434/v1").unwrap(),
            api_key: None,
            model: "local".into(),
            temperature: 0.2,
        }
    }

    #[test]
    fn roles_inherit_from_the_default_and_may_differ() {
        let text = "roles:\n  critic: { provider: anthropic, base_url: 'https://api.anthropic.com', api_key_env: KEY, model: claude, temperature: 0 }\nprices:\n  claude: { prompt: 3.0, completion: 15.0 }\n";
        let r = Router::from_file(default_route(), text, |v| {
            (v == "KEY").then(|| "sk-test".to_owned())
        })
        .unwrap();
        assert_eq!(r.route("builder").model, "local");
        assert_eq!(
            (r.route("critic").provider, r.route("critic").model.as_str()),
            (Provider::Anthropic, "claude")
        );
        assert_eq!(r.route("critic").temperature, 0.0);
        assert!(r.prices().get("claude").is_some());
        assert_eq!(r.client("critic").unwrap().route().model, "claude");
    }

    #[test]
    fn bad_files_name_the_key() {
        let cases = [
            ("roles:\n  janitor: { model: x }\n", "roles.janitor"),
            (
                "roles:\n  critic: { api_key_env: MISSING }\n",
                "MISSING is not set",
            ),
            ("default: { temperature: 3 }\n", "default.temperature"),
            ("default: { modle: x }\n", "modle"),
        ];
        for (text, needle) in cases {
            let err = Router::from_file(default_route(), text, |_| None)
                .err()
                .expect("refused")
                .to_string();
            assert!(err.contains(needle), "{text}: {err}");
        }
    }
}
