//! Filling the keys `.github/hive.yml` leaves out, one by one, from what the base's files show
//! — a devcontainer first, then the ecosystems detected — each with where its value came from
//! (an [`Origin`], which `vibeloop gates --explain` shows).

use super::detect::{Files, Found};
use super::devcontainer::Devcontainer;
use super::image::ImageBuild;
use crate::config::repo::{HiveConfig, PATH as CONFIG_PATH};

/// The image for a repository of several ecosystems (`--ecosystem all`).
pub const POLYGLOT_IMAGE: &str = "vibeloop-runner:all";

/// One key of the effective config, and where its value came from.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Origin {
    pub key: &'static str,
    pub value: Option<String>,
    pub from: String,
}

/// "detected: Cargo.toml, pyproject.toml".
fn detected(f: &[&Found]) -> String {
    let names: Vec<String> = f.iter().map(|f| f.manifest.clone()).collect();
    format!("detected: {}", names.join(", "))
}

/// The sandbox image: the file's, the devcontainer's (its image, or the image its Dockerfile
/// builds), the one ecosystem's, or the polyglot one.
pub(super) fn image(
    config: &mut HiveConfig,
    found: &[Found],
    devcontainer: Option<&Devcontainer>,
    files: &dyn Files,
) -> (Origin, Option<ImageBuild>) {
    let mut image_build = None;
    let from = if config.is_set("image") {
        CONFIG_PATH.to_owned()
    } else if let Some(d) = devcontainer.filter(|d| d.image.is_some()) {
        config.image = d.image.clone().unwrap_or_default();
        d.path.clone()
    } else if let Some((d, b)) = devcontainer.and_then(|d| {
        let b = ImageBuild::of(d.build.as_ref()?, files)?;
        Some((d, b))
    }) {
        config.image = b.tag.clone();
        image_build = Some(b);
        d.path.clone()
    } else if found.len() == 1 {
        config.image = found[0].ecosystem.image();
        detected(&[&found[0]])
    } else if found.len() > 1 {
        config.image = POLYGLOT_IMAGE.into();
        detected(&found.iter().collect::<Vec<_>>())
    } else {
        "default".into()
    };
    let origin = Origin {
        key: "image",
        value: Some(config.image.clone()),
        from,
    };
    (origin, image_build)
}

/// The setup command: the file's, the devcontainer's, or the ecosystems' (with what measuring
/// coverage needs); and whether it was detected (so `prepare` may follow it).
pub(super) fn setup(
    config: &mut HiveConfig,
    found: &[Found],
    devcontainer: Option<&Devcontainer>,
) -> (Origin, bool) {
    let theirs = devcontainer.and_then(|d| Some((d, d.setup.clone()?)));
    let detected_here = !config.is_set("setup") && theirs.is_none();
    let from = if config.is_set("setup") {
        CONFIG_PATH.to_owned()
    } else if let Some((d, setup)) = theirs {
        config.setup = Some(setup);
        d.path.clone()
    } else {
        // Measuring coverage may need a tool in the environment (coverage.py).
        let coverage = config.acceptance.coverage.is_on();
        let pick = |f: &Found| {
            let setup = f.setup.clone()?;
            Some(match f.coverage_setup.as_deref().filter(|_| coverage) {
                Some(more) => format!("{setup} && {more}"),
                None => setup,
            })
        };
        fill(&mut config.setup, found, pick)
    };
    let origin = Origin {
        key: "setup",
        value: config.setup.clone(),
        from,
    };
    (origin, detected_here)
}

/// `prepare`: only beside a detected setup (it builds on what that setup installs).
pub(super) fn prepare(config: &mut HiveConfig, found: &[Found], setup_detected: bool) -> Origin {
    let from = if config.is_set("prepare") {
        CONFIG_PATH.to_owned()
    } else if setup_detected {
        fill(&mut config.prepare, found, |f| f.prepare.clone())
    } else {
        "not detected with a setup of the repository's own".into()
    };
    Origin {
        key: "prepare",
        value: config.prepare.clone(),
        from,
    }
}

/// The gates' commands; a gate the ecosystems leave out on purpose says why.
pub(super) fn gate_commands(config: &mut HiveConfig, found: &[Found]) -> Vec<Origin> {
    type Pick = fn(&Found) -> Option<String>;
    let gates: [(&'static str, Pick); 4] = [
        ("gates.test", |f| f.test.clone()),
        ("gates.lint", |f| f.lint.clone()),
        ("gates.typecheck", |f| f.typecheck.clone()),
        ("gates.build", |f| f.build.clone()),
    ];
    let mut origins = vec![];
    for (key, pick) in gates {
        let set = config.is_set(key);
        let slot = match key {
            "gates.test" => &mut config.gates.test,
            "gates.lint" => &mut config.gates.lint,
            "gates.typecheck" => &mut config.gates.typecheck,
            _ => &mut config.gates.build,
        };
        let gate = key.trim_start_matches("gates.");
        let from = if set {
            CONFIG_PATH.to_owned()
        } else {
            let mut from = fill(slot, found, pick);
            let own = found
                .iter()
                .flat_map(|f| &f.sources)
                .filter(|(g, _)| g == gate);
            for (_, source) in own {
                from.push_str(&format!("; the command from {source}"));
            }
            from
        };
        let value = slot.clone();
        if !set && value.is_none() {
            let why = found
                .iter()
                .flat_map(|f| f.left_out.iter())
                .find(|(g, _)| g == gate);
            if let Some((g, why)) = why {
                config.gates.left_out.insert(g.clone(), why.clone());
            }
        }
        origins.push(Origin { key, value, from });
    }
    origins
}

/// The coverage command, when coverage is measured.
pub(super) fn coverage(config: &mut HiveConfig, found: &[Found]) -> Option<Origin> {
    if !config.acceptance.coverage.is_on() {
        return None;
    }
    let slot = &mut config.acceptance.coverage.command;
    let from = if slot.is_some() {
        CONFIG_PATH.to_owned()
    } else {
        fill(slot, found, |f| f.coverage.clone())
    };
    Some(Origin {
        key: "acceptance.coverage.command",
        value: slot.clone(),
        from,
    })
}

/// Where the tests live: the file's, or every ecosystem's, once each.
pub(super) fn test_paths(config: &mut HiveConfig, found: &[Found]) -> Origin {
    let from = if config.is_set("policy.test_paths") {
        CONFIG_PATH.to_owned()
    } else if found.is_empty() {
        "default".into()
    } else {
        let mut paths: Vec<String> = Vec::new();
        for p in found.iter().flat_map(|f| f.test_paths.iter()) {
            if !paths.contains(p) {
                paths.push(p.clone());
            }
        }
        config.policy.test_paths = paths;
        detected(&found.iter().collect::<Vec<_>>())
    };
    Origin {
        key: "policy.test_paths",
        value: Some(config.policy.test_paths.join(", ")),
        from,
    }
}

/// Sets `slot` from the ecosystems that give a value (several are joined with `&&`); says where
/// it came from.
fn fill(
    slot: &mut Option<String>,
    found: &[Found],
    pick: impl Fn(&Found) -> Option<String>,
) -> String {
    let giving: Vec<(&Found, String)> = found.iter().filter_map(|f| Some((f, pick(f)?))).collect();
    if giving.is_empty() {
        return if slot.is_some() {
            "default"
        } else {
            "nothing detected gives one"
        }
        .into();
    }
    let commands: Vec<&str> = giving.iter().map(|(_, c)| c.as_str()).collect();
    *slot = Some(if commands.len() == 1 {
        commands[0].to_owned()
    } else {
        commands
            .iter()
            .map(|c| format!("({c})"))
            .collect::<Vec<_>>()
            .join(" && ")
    });
    detected(&giving.iter().map(|(f, _)| *f).collect::<Vec<_>>())
}
