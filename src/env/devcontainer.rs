//! A repository's devcontainer (`.devcontainer/devcontainer.json` or `.devcontainer.json`), the
//! ecosystem's common way to describe a development environment: its `image`, its lifecycle
//! commands (`onCreateCommand`, `updateContentCommand`, `postCreateCommand`, in that order) as the
//! setup, and its `containerEnv`. The file is JSON with comments and trailing commas (JSONC).
//! An image it builds (`build.dockerfile`, `build.context`, `build.args`) is read as a
//! [`Build`] when its context lies inside `.devcontainer/`; [`super::image`] builds it.

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
    /// The image it builds, when it names no `image`.
    pub build: Option<Build>,
    /// What the file asks for that Vibeloop does not do, for people.
    pub unsupported: Vec<String>,
}

/// An image a devcontainer builds: its Dockerfile and context as repository paths, and its
/// build arguments.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct Build {
    pub dockerfile: String,
    pub context: String,
    pub args: Vec<(String, String)>,
}

/// Where a devcontainer's build context must lie: the bot reads those files from the base.
pub const CONTEXT_ROOT: &str = ".devcontainer";

/// `rel` from the directory `dir`, both `/`-separated repository paths; `None` when it leaves
/// the repository.
fn joined(dir: &str, rel: &str) -> Option<String> {
    let mut parts: Vec<&str> = dir.split('/').filter(|p| !p.is_empty()).collect();
    for part in rel.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            p => parts.push(p),
        }
    }
    Some(parts.join("/"))
}

/// The image `value` builds, or what stops the bot from building it.
fn build_of(path: &str, value: &Value) -> Option<Result<Build, String>> {
    let dockerfile = value["build"]["dockerfile"]
        .as_str()
        .or(value["dockerFile"].as_str())?;
    let dir = path.rsplit_once('/').map_or("", |(d, _)| d);
    let context = value["build"]["context"]
        .as_str()
        .or(value["context"].as_str())
        .unwrap_or(".");
    let inside = |p: &str| p == CONTEXT_ROOT || p.starts_with(&format!("{CONTEXT_ROOT}/"));
    Some(match (joined(dir, dockerfile), joined(dir, context)) {
        (Some(file), Some(ctx)) if inside(&ctx) && file.starts_with(&format!("{ctx}/")) => {
            let args = value["build"]["args"]
                .as_object()
                .into_iter()
                .flatten()
                .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned())))
                .collect();
            Ok(Build {
                dockerfile: file,
                context: ctx,
                args,
            })
        }
        _ => Err(format!(
            "{path} builds its image with `{context}` as the context; the bot builds only from a context inside {CONTEXT_ROOT}/ that holds the Dockerfile: build it (`docker build -t my-runner -f {dockerfile} {context}` from {}) and name it in `image:` in .github/hive.yml",
            if dir.is_empty() { "the root" } else { dir }
        )),
    })
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
    if d.image.is_none() {
        match build_of(path, &value) {
            Some(Ok(b)) => d.build = Some(b),
            Some(Err(why)) => d.unsupported.push(why),
            None => {}
        }
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
    fn a_dockerfile_build_inside_devcontainer_is_read_and_others_are_reported() {
        let d = parse(
            ".devcontainer/devcontainer.json",
            r#"{"build": {"dockerfile": "Dockerfile", "args": {"PY": "3.13"}}}"#,
        )
        .unwrap();
        assert_eq!(
            d.build,
            Some(Build {
                dockerfile: ".devcontainer/Dockerfile".into(),
                context: ".devcontainer".into(),
                args: vec![("PY".into(), "3.13".into())],
            })
        );
        assert!(d.unsupported.is_empty(), "{:?}", d.unsupported);
        // The repository as the context, or a path out of it: said, not built.
        for (path, text) in [
            (
                ".devcontainer.json",
                r#"{"build": {"dockerfile": "Dockerfile"}}"#,
            ),
            (
                ".devcontainer/devcontainer.json",
                r#"{"build": {"dockerfile": "Dockerfile", "context": ".."}}"#,
            ),
            (
                ".devcontainer/devcontainer.json",
                r#"{"build": {"dockerfile": "../../../etc/x"}}"#,
            ),
        ] {
            let d = parse(path, text).unwrap();
            assert_eq!(d.build, None, "{text}");
            assert!(
                d.unsupported[0].contains("docker build -t my-runner"),
                "{:?}",
                d.unsupported
            );
        }
        let e = parse(".devcontainer.json", "{ image: x }").unwrap_err();
        assert!(e.contains(".devcontainer.json is not valid JSON"), "{e}");
    }
}
