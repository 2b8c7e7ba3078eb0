//! Reading what `tests/cli/packaging.rs` checks: the real binary's `serve --help`, the Dockerfile's
//! instructions, command lines, and YAML documents (compose output, Kubernetes manifests).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use serde::Deserialize as _;
use serde_yaml_ng::Value;

/// Variables read by libraries rather than by clap, so `--help` does not list them.
pub const LIBRARY_ENV: &[&str] = &[
    "DOCKER_HOST", // bollard: the Docker engine the sandboxes run on
    "PGPASSWORD",  // sqlx: the PostgreSQL password, kept out of DATABASE_URL
    "RUST_LOG",    // tracing-subscriber: the log filter
];

pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

pub fn read(rel: &str) -> String {
    std::fs::read_to_string(repo().join(rel)).unwrap_or_else(|e| panic!("cannot read {rel}: {e}"))
}

pub fn bin_name() -> String {
    let exe = Path::new(env!("CARGO_BIN_EXE_vibeloop"));
    exe.file_name().unwrap().to_string_lossy().into_owned()
}

/// `vibeloop serve --help` of the real binary, run with an empty environment so no value of
/// the developer's shell shows up in it.
pub fn serve_help() -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_vibeloop"))
        .args(["serve", "--help"])
        .env_clear()
        .output()
        .expect("runs vibeloop serve --help");
    assert!(
        out.status.success(),
        "vibeloop serve --help failed: {out:?}"
    );
    String::from_utf8(out.stdout).expect("help is UTF-8")
}

/// The variables `serve --help` names (`[env: NAME=]`, or `[env: NAME]` for hidden values).
pub fn known_env(help: &str) -> BTreeSet<String> {
    let mut names: BTreeSet<String> = help
        .split("[env: ")
        .skip(1)
        .map(|rest| {
            let end = rest.find(['=', ']']).expect("an [env: …] entry ends");
            rest[..end].to_owned()
        })
        .collect();
    assert!(
        names.contains("VIBELOOP_LISTEN") && names.contains("DATABASE_URL"),
        "found no [env: …] entries in `vibeloop serve --help`; has its format changed?\n{help}"
    );
    names.extend(LIBRARY_ENV.iter().map(|n| (*n).to_owned()));
    names
}

/// The long flags `serve --help` lists.
pub fn known_flags(help: &str) -> BTreeSet<String> {
    help.split_whitespace()
        .filter(|w| w.starts_with("--"))
        .map(|w| w.trim_end_matches([',', '=']).to_owned())
        .collect()
}

pub fn assert_known(what: &str, names: &BTreeSet<String>, known: &BTreeSet<String>) {
    let unknown: Vec<_> = names.difference(known).collect();
    assert!(
        unknown.is_empty(),
        "{what} sets {unknown:?}, which `vibeloop serve` does not read (a typo?); it reads {known:?}"
    );
}

/// The bot's flags in a command line: `--role worker`, `--data-dir=…`.
pub fn flags_in(words: &[String]) -> BTreeSet<String> {
    words
        .iter()
        .flat_map(|w| w.split_whitespace())
        .filter(|w| w.starts_with("--"))
        .map(|w| w.split('=').next().unwrap().to_owned())
        .collect()
}

/// The value after `flag` (`--role worker` or `--role=worker`) in a command line.
pub fn flag_value(words: &[String], flag: &str) -> Option<String> {
    let words: Vec<&str> = words.iter().flat_map(|w| w.split_whitespace()).collect();
    words.iter().enumerate().find_map(|(i, w)| {
        if *w == flag {
            words.get(i + 1).map(|v| v.trim_matches('"').to_owned())
        } else {
            w.strip_prefix(&format!("{flag}="))
                .map(|v| v.trim_matches('"').to_owned())
        }
    })
}

// --- Dockerfile ----------------------------------------------------------------------------

/// The Dockerfile's instructions as (KEYWORD, arguments), continuation lines joined and
/// comments dropped.
pub fn dockerfile() -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut current = String::new();
    for line in read("docker/Dockerfile").lines() {
        let trimmed = line.trim();
        if trimmed.starts_with('#') || (trimmed.is_empty() && current.is_empty()) {
            continue;
        }
        match trimmed.strip_suffix('\\') {
            Some(part) => current.push_str(part),
            None => {
                current.push_str(trimmed);
                let (kw, args) = current
                    .split_once(char::is_whitespace)
                    .unwrap_or((&current, ""));
                out.push((kw.to_ascii_uppercase(), args.trim().to_owned()));
                current.clear();
            }
        }
    }
    out
}

/// The instructions of the last stage (the image that ships).
pub fn runtime_stage(all: &[(String, String)]) -> Vec<(String, String)> {
    let from = all.iter().rposition(|(k, _)| k == "FROM").expect("a FROM");
    all[from..].to_vec()
}

/// `ENV A=1 B=2` (or the old `ENV A 1`) as a map.
pub fn env_of(stage: &[(String, String)]) -> BTreeMap<String, String> {
    let mut env = BTreeMap::new();
    for (_, args) in stage.iter().filter(|(k, _)| k == "ENV") {
        if args
            .split_whitespace()
            .next()
            .is_some_and(|w| w.contains('='))
        {
            for pair in args.split_whitespace() {
                let (k, v) = pair.split_once('=').expect("KEY=value");
                env.insert(k.to_owned(), v.trim_matches('"').to_owned());
            }
        } else if let Some((k, v)) = args.split_once(char::is_whitespace) {
            env.insert(k.to_owned(), v.trim().to_owned());
        }
    }
    env
}

pub fn json_words(args: &str) -> Vec<String> {
    serde_json::from_str(args).unwrap_or_else(|e| panic!("{args} is not a JSON array: {e}"))
}

/// The data directory of the image (its `VIBELOOP_DATA_DIR`).
pub fn image_data_dir() -> String {
    env_of(&runtime_stage(&dockerfile()))["VIBELOOP_DATA_DIR"].clone()
}

// --- YAML ----------------------------------------------------------------------------------

/// A string or a list of strings (a compose `command`, a container's `args`) as words.
pub fn strings(v: Option<&Value>) -> Vec<String> {
    match v {
        Some(Value::String(s)) => vec![s.clone()],
        Some(Value::Sequence(seq)) => seq
            .iter()
            .filter_map(|w| w.as_str().map(str::to_owned))
            .collect(),
        _ => Vec::new(),
    }
}

/// Every document of every `deploy/kubernetes/*.yaml`, with its file name.
pub fn manifests() -> Vec<(String, Value)> {
    let dir = repo().join("deploy/kubernetes");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("deploy/kubernetes exists")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "yaml" || x == "yml"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no manifests in {dir:?}");
    let mut out = Vec::new();
    for path in files {
        let file = path.file_name().unwrap().to_string_lossy().into_owned();
        let text = std::fs::read_to_string(&path).unwrap();
        for doc in serde_yaml_ng::Deserializer::from_str(&text) {
            let value = Value::deserialize(doc).unwrap_or_else(|e| panic!("{file}: {e}"));
            if !value.is_null() {
                out.push((file.clone(), value));
            }
        }
    }
    out
}

pub fn s<'a>(v: &'a Value, path: &[&str]) -> Option<&'a str> {
    path.iter().try_fold(v, |v, k| v.get(*k))?.as_str()
}

pub fn seq<'a>(v: &'a Value, key: &str) -> impl Iterator<Item = &'a Value> {
    v.get(key)
        .and_then(Value::as_sequence)
        .into_iter()
        .flatten()
}

/// The keys of the ConfigMap or Secret `name`.
pub fn keys_of<'a>(
    objects: &'a [(String, Value)],
    kind: &str,
    name: &str,
) -> Option<BTreeSet<&'a str>> {
    let obj = objects.iter().find(|(_, o)| {
        s(o, &["kind"]) == Some(kind) && s(o, &["metadata", "name"]) == Some(name)
    })?;
    Some(
        ["data", "stringData"]
            .iter()
            .filter_map(|k| obj.1.get(*k).and_then(Value::as_mapping))
            .flat_map(|m| m.keys().filter_map(Value::as_str))
            .collect(),
    )
}

pub fn mounts(c: &Value) -> Vec<(String, String)> {
    seq(c, "volumeMounts")
        .map(|m| {
            (
                s(m, &["name"]).unwrap().to_owned(),
                s(m, &["mountPath"]).unwrap().to_owned(),
            )
        })
        .collect()
}
