//! The model endpoint checks: one per distinct route of the five roles. OpenAI-compatible:
//! `GET {base}/models`, and the model must be listed when the list is readable (a provider
//! without `/models` only proves it answers). Anthropic: `GET …/v1/models/{model}`, which proves
//! the key and the model at once. A refused key names the variable that holds it; the key itself
//! is sent, never shown.

use std::path::{Path, PathBuf};
use std::time::Duration;

use futures_util::future::join_all;
use reqwest::StatusCode;
use secrecy::ExposeSecret as _;

use super::{Check, NO_CONFIG, Parsed, redact, root_cause, shown};
use crate::llm::routing::Router;
use crate::llm::{Provider, Route};
use crate::ticket::Role;

const NAME: &str = "model endpoint";
const WITHIN: Duration = Duration::from_secs(10);
/// The Messages API version `llm::anthropic` speaks.
const ANTHROPIC_VERSION: &str = "2023-06-01";

/// Which settings a route comes from, to name them in a fix.
#[derive(Debug, PartialEq)]
struct Sources {
    base: String,
    key: String,
    model: String,
}

pub(super) async fn check(parsed: Option<&Parsed>) -> Vec<Check> {
    let Some(parsed) = parsed else {
        return vec![Check::skipped(NAME, NO_CONFIG)];
    };
    check_routes(&parsed.router, parsed.config.llm.models_file.as_ref()).await
}

/// Probes every distinct route of the roles (`models_file`: where the routes came from, to
/// name the setting in a fix).
pub(crate) async fn check_routes(
    router: &Router,
    models_file: Option<&(PathBuf, String)>,
) -> Vec<Check> {
    let mut groups: Vec<(Vec<&str>, &Route)> = Vec::new();
    for role in Role::ROUTED.map(Role::as_str) {
        let route = router.route(role);
        match groups.iter_mut().find(|(_, r)| same(r, route)) {
            Some((roles, _)) => roles.push(role),
            None => groups.push((vec![role], route)),
        }
    }
    let http = match reqwest::Client::builder()
        .connect_timeout(WITHIN)
        .timeout(WITHIN)
        .build()
    {
        Ok(c) => c,
        Err(e) => {
            return vec![Check::fail(
                NAME,
                format!("cannot make an HTTP client: {e}"),
                "report this as a bug",
            )];
        }
    };
    let yaml = models_file.and_then(|(_, text)| serde_yaml_ng::from_str(text).ok());
    let single = groups.len() == 1;
    let probes = groups.iter().map(|(roles, route)| {
        let name = if single {
            NAME.to_owned()
        } else {
            format!("{NAME} ({})", roles.join(", "))
        };
        let sources = sources(
            models_file.map(|(p, _)| p.as_path()).zip(yaml.as_ref()),
            roles[0],
        );
        probe(&http, name, route, sources)
    });
    join_all(probes).await
}

fn same(a: &Route, b: &Route) -> bool {
    a.provider == b.provider
        && a.base_url == b.base_url
        && a.model == b.model
        && a.api_key.as_ref().map(|k| k.expose_secret())
            == b.api_key.as_ref().map(|k| k.expose_secret())
}

/// Where `role`'s base URL, key and model are set: the models file's role entry, its default,
/// or the process settings.
fn sources(file: Option<(&Path, &serde_yaml_ng::Value)>, role: &str) -> Sources {
    let set_in = |field: &str| -> Option<(String, &serde_yaml_ng::Value)> {
        let (path, yaml) = file?;
        let role_entry = yaml.get("roles").and_then(|r| r.get(role));
        [
            (format!("roles.{role}"), role_entry),
            ("default".into(), yaml.get("default")),
        ]
        .into_iter()
        .find_map(|(at, entry)| {
            let value = entry?.get(field)?;
            Some((format!("{at}.{field} in {}", path.display()), value))
        })
    };
    Sources {
        base: set_in("base_url").map_or("VIBELOOP_LLM_BASE_URL".into(), |(at, _)| at),
        model: set_in("model").map_or("VIBELOOP_LLM_MODEL".into(), |(at, _)| at),
        key: set_in("api_key_env")
            .and_then(|(_, var)| var.as_str().map(str::to_owned))
            .unwrap_or_else(|| "VIBELOOP_LLM_API_KEY".into()),
    }
}

async fn probe(http: &reqwest::Client, name: String, route: &Route, src: Sources) -> Check {
    let base = shown(&route.base_url);
    let key = route.api_key.as_ref().map(|k| k.expose_secret());
    let trimmed = route.base_url.as_str().trim_end_matches('/');
    let request = match route.provider {
        Provider::Openai => {
            let mut r = http.get(format!("{trimmed}/models"));
            if let Some(key) = key {
                r = r.bearer_auth(key);
            }
            r
        }
        Provider::Anthropic => {
            let models = if trimmed.ends_with("/v1") {
                format!("{trimmed}/models")
            } else {
                format!("{trimmed}/v1/models")
            };
            let Ok(mut url) = url::Url::parse(&models) else {
                return Check::fail(
                    name,
                    format!("{base} is not a usable URL"),
                    format!("correct {}", src.base),
                );
            };
            if let Ok(mut segments) = url.path_segments_mut() {
                segments.push(&route.model);
            }
            let mut r = http.get(url).header("anthropic-version", ANTHROPIC_VERSION);
            if let Some(key) = key {
                r = r.header("x-api-key", key);
            }
            r
        }
    };
    let resp = match request.send().await {
        Ok(r) => r,
        Err(e) => {
            let why = if e.is_timeout() {
                format!("no answer within {}s", WITHIN.as_secs())
            } else {
                root_cause(&e.without_url())
            };
            return Check::fail(
                name,
                format!("nothing answers at {base} ({why})"),
                format!("start the model server, or set {}", src.base),
            );
        }
    };
    let status = resp.status();
    if matches!(status, StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN) {
        let problem = match key {
            Some(_) => format!("{base} refused the key ({})", status.as_u16()),
            None => format!("{base} wants a key ({}) and none is set", status.as_u16()),
        };
        return Check::fail(name, problem, format!("set {} to a valid key", src.key));
    }
    let model = &route.model;
    match route.provider {
        Provider::Openai => {
            if matches!(
                status,
                StatusCode::NOT_FOUND | StatusCode::METHOD_NOT_ALLOWED
            ) {
                return Check::pass(
                    name,
                    format!("{base} answers (it lists no models, so {model} is not verified)"),
                );
            }
            if !status.is_success() {
                let body = redact(&resp.text().await.unwrap_or_default(), key);
                return Check::fail(
                    name,
                    format!("{base} answered {} to GET /models: {body}", status.as_u16()),
                    format!("check the model server, and {}", src.base),
                );
            }
            let listed: Option<Vec<String>> =
                resp.json::<serde_json::Value>().await.ok().and_then(|v| {
                    v["data"].as_array().map(|data| {
                        data.iter()
                            .filter_map(|m| m["id"].as_str().map(str::to_owned))
                            .collect()
                    })
                });
            match listed {
                None => Check::pass(
                    name,
                    format!(
                        "{base} answers (its model list is unreadable, so {model} is not verified)"
                    ),
                ),
                Some(ids) if ids.iter().any(|id| id == model) => {
                    Check::pass(name, format!("{base} serves {model}"))
                }
                Some(ids) => {
                    let mut some: Vec<&str> = ids.iter().take(5).map(String::as_str).collect();
                    if ids.len() > some.len() {
                        some.push("…");
                    }
                    Check::fail(
                        name,
                        format!(
                            "{base} does not serve {model} (it lists {}: {})",
                            ids.len(),
                            some.join(", ")
                        ),
                        format!(
                            "set {} to a model it lists, or load {model} there (Ollama: `ollama pull {model}`)",
                            src.model
                        ),
                    )
                }
            }
        }
        Provider::Anthropic => {
            if status.is_success() {
                Check::pass(name, format!("anthropic at {base} serves {model}"))
            } else if status == StatusCode::NOT_FOUND {
                Check::fail(
                    name,
                    format!("anthropic at {base} does not know {model} (404)"),
                    format!("set {} to a model the key may use", src.model),
                )
            } else {
                let body = redact(&resp.text().await.unwrap_or_default(), key);
                Check::fail(
                    name,
                    format!("anthropic at {base} answered {}: {body}", status.as_u16()),
                    format!("check {} and the provider's status", src.base),
                )
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sources_name_the_setting_a_route_comes_from() {
        let yaml: serde_yaml_ng::Value = serde_yaml_ng::from_str(
            "default: { model: m }\nroles:\n  critic: { base_url: 'http://x', api_key_env: CRITIC_KEY }\n",
        )
        .unwrap();
        let file = Some((Path::new("models.yml"), &yaml));
        assert_eq!(
            sources(file, "critic"),
            Sources {
                base: "roles.critic.base_url in models.yml".into(),
                key: "CRITIC_KEY".into(),
                model: "default.model in models.yml".into(),
            }
        );
        assert_eq!(
            sources(None, "builder"),
            Sources {
                base: "VIBELOOP_LLM_BASE_URL".into(),
                key: "VIBELOOP_LLM_API_KEY".into(),
                model: "VIBELOOP_LLM_MODEL".into(),
            }
        );
    }
}
