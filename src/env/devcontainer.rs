//! A repository's devcontainer (`.devcontainer/devcontainer.json` or `.devcontainer.json`), the
//! ecosystem's common way to describe a development environment: its `image`, its lifecycle
//! commands (`onCreateCommand`, `updateContentCommand`, `postCreateCommand`, in that order) as the
//! setup, and its `containerEnv`. The file is JSON with comments and trailing commas (JSONC).
//! Images are not built here: a `build.dockerfile` is reported, with what to do instead.

use serde_json::Value;

/// Where a devcontainer may live, in the order looked at.
pub const PATHS: [&str; 2] = [".devcontainer/devcontainer.json", ".devcontainer.json"];

/// What Vibeloop takes from a devcontainer.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct Devcontainer {
    pub path: String,
    pub image: Option<String>,
    /// The lifecycle commands, joined with `&&`.
    pub setup: Option<String>,
    pub env: Vec<(String, String)>,
    /// What the file asks for that Vibeloop does not do, for people.
    pub unsupported: Vec<String>,
}

/// Reads the devcontainer at `path`; the error says what is wrong with the file.
pub fn parse(path: &str, text: &str) -> Result<Devcontainer, String> {
    let value: Value = serde_json::from_str(&strip_jsonc(text))
        .map_err(|e| format!("{path} is not valid JSON (with comments): {e}"))?;
    let mut d = Devcontainer {
        path: path.to_owned(),
        image: value["image"].as_str().map(str::to_owned),
        ..Default::default()
    };
    let steps: Vec<String> = [
        "onCreateCommand",
        "updateContentCommand",
        "postCreateCommand",
    ]
    .iter()
    .filter_map(|k| command(&value[*k]))
    .collect();
    d.setup = (!steps.is_empty()).then(|| steps.join(" && "));
    if let Some(env) = value["containerEnv"].as_object() {
        d.env = env
            .iter()
            .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned())))
            .collect();
    }
    if value.get("build").is_some() || value.get("dockerFile").is_some() {
        d.unsupported.push(format!(
            "{path} builds its image from a Dockerfile, which the bot does not do: build it (`docker build -t my-runner .devcontainer`) and name it in `image:` in .github/hive.yml"
        ));
    }
    if value.get("dockerComposeFile").is_some() {
        d.unsupported.push(format!(
            "{path} uses Docker Compose, which the bot does not run: name the service's image in `image:` in .github/hive.yml"
        ));
    }
    Ok(d)
}

/// A lifecycle command: a shell string, an argv array (quoted for the shell), or named commands
/// run one after the other.
fn command(v: &Value) -> Option<String> {
    match v {
        Value::String(s) if !s.trim().is_empty() => Some(s.clone()),
        Value::Array(argv) => {
            let words: Vec<String> = argv
                .iter()
                .filter_map(Value::as_str)
                .map(|w| format!("'{}'", w.replace('\'', r"'\''")))
                .collect();
            (!words.is_empty()).then(|| words.join(" "))
        }
        Value::Object(named) => {
            let parts: Vec<String> = named.values().filter_map(command).collect();
            (!parts.is_empty()).then(|| parts.join(" && "))
        }
        _ => None,
    }
}

/// JSON with `//` and `/* */` comments and trailing commas → JSON.
fn strip_jsonc(text: &str) -> String {
    without_trailing_commas(&without_comments(text))
}

/// The length of the string literal `s` starts with (`s` starts with `"`), quotes included.
fn string_len(s: &str) -> usize {
    let mut escaped = false;
    for (i, c) in s.char_indices().skip(1) {
        match c {
            _ if escaped => escaped = false,
            '\\' => escaped = true,
            '"' => return i + 1,
            _ => {}
        }
    }
    s.len()
}

fn without_comments(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        let taken = if c == '"' {
            let n = string_len(rest);
            out.push_str(&rest[..n]);
            n
        } else if rest.starts_with("//") {
            rest.find('\n').unwrap_or(rest.len())
        } else if let Some(body) = rest.strip_prefix("/*") {
            out.push(' ');
            body.find("*/").map_or(rest.len(), |e| e + 4)
        } else {
            out.push(c);
            c.len_utf8()
        };
        rest = &rest[taken..];
    }
    out
}

/// Drops each comma followed only by blanks before `]` or `}` (`text` has no comments).
fn without_trailing_commas(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        let taken = if c == '"' {
            string_len(rest)
        } else {
            c.len_utf8()
        };
        let trailing = c == ',' && matches!(rest[1..].trim_start().chars().next(), Some(']' | '}'));
        if !trailing {
            out.push_str(&rest[..taken]);
        }
        rest = &rest[taken..];
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn image_commands_and_env_are_read_from_jsonc() {
        let text = r#"{
  // The toolchain, "pinned" (a quote in a comment)
  "image": "vibeloop-runner:go", /* pinned, "really" */
  "onCreateCommand": ["go", "mod", "download"],
  "postCreateCommand": { "tools": "make tools", "url": "echo http://x//y" },
  "containerEnv": { "APP_ENV": "test", "NOTE": "a // b, /* c */ \" ," },
}"#;
        let d = parse(".devcontainer/devcontainer.json", text).unwrap();
        assert_eq!(d.image.as_deref(), Some("vibeloop-runner:go"));
        assert_eq!(
            d.setup.as_deref(),
            Some("'go' 'mod' 'download' && make tools && echo http://x//y")
        );
        assert_eq!(
            d.env,
            [
                ("APP_ENV".to_owned(), "test".to_owned()),
                ("NOTE".to_owned(), "a // b, /* c */ \" ,".to_owned())
            ]
        );
        assert!(d.unsupported.is_empty());
    }

    #[test]
    fn a_dockerfile_build_is_reported_and_bad_json_is_an_error() {
        let d = parse(
            ".devcontainer.json",
            r#"{"build": {"dockerfile": "Dockerfile"}}"#,
        )
        .unwrap();
        assert!(
            d.unsupported[0].contains("docker build"),
            "{:?}",
            d.unsupported
        );
        let e = parse(".devcontainer.json", "{ image: x }").unwrap_err();
        assert!(e.contains(".devcontainer.json is not valid JSON"), "{e}");
    }
}
