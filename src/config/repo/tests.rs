//! `.github/hive.yml` as repositories write it: defaults, every key, and the errors that
//! name the bad line.

use super::*;

#[test]
fn absent_or_empty_file_gives_defaults() {
    assert_eq!(HiveConfig::parse("").unwrap(), HiveConfig::default());
    let d = HiveConfig::default();
    assert_eq!(
        (d.label.as_str(), d.gates.security, d.limits.network),
        ("hive", SecurityGate::Builtin, false)
    );
}

#[test]
fn a_full_config_parses() {
    let text = "\
label: robot
base: develop
image: vibeloop-runner:python
gates:
  test: python3 -m pytest -q
  lint: flake8
  typecheck: mypy .
  security: builtin
policy:
  read_only_paths: [docs/spec/]
  test_paths: [tests/]
  banned_calls: [eval, subprocess.Popen]
  banned_imports: [pickle]
limits: { timeout_seconds: 60, max_retries: 2, cpu: 1.5, memory_mb: 512, pids: 256, network: true }
budget: { max_usd: 2.5, max_minutes: 30 }
commits: { signoff: true }
";
    let c = HiveConfig::parse(text).unwrap();
    assert!(c.commits.signoff);
    assert!(!HiveConfig::default().commits.signoff);
    assert_eq!(
        c.gates.commands().map(|(g, _)| g).collect::<Vec<_>>(),
        ["test", "lint", "typecheck"]
    );
    assert!(c.read_only().contains("docs/spec/api.md"));
    assert!(!c.read_only().contains("docs/readme.md"));
    // `.github/` stays locked though the repository's list leaves it out.
    assert!(c.read_only().contains(".github/hive/critic.md"));
    assert!(c.read_only().contains(".github/workflows/ci.yml"));
    // So do the files that steer the agents and the machine.
    for steering in [
        "AGENTS.md",
        "src/pkg/AGENTS.md",
        "CLAUDE.md",
        "docs/CLAUDE.md",
        ".github/copilot-instructions.md",
        ".github/instructions/py.instructions.md",
        ".devcontainer/devcontainer.json",
        ".devcontainer/Dockerfile",
        ".devcontainer.json",
    ] {
        assert!(c.read_only().contains(steering), "{steering}");
    }
    assert!(!c.read_only().contains("docs/AGENTS.md.bak"));
    assert!(c.test_paths().contains("tests/unit/test_a.py"));
    assert_eq!(c.limits.memory_mb, 512);
    assert_eq!(c.limits.pids, 256);
    assert_eq!(c.retry.max_retries, 2, "limits.max_retries is still read");
    // A key left out keeps its default.
    assert_eq!(
        c.budget,
        Caps {
            max_usd: Some(2.5),
            max_tokens: Some(2_000_000),
            max_minutes: Some(30.0)
        }
    );
}

#[test]
fn retry_and_plan_settings_parse_strictly_under_the_designs_names() {
    let c = HiveConfig::parse(
        "retry: { max_retries: 5, base_delay_ms: 500, backoff_multiplier: 2, max_delay_ms: 4000, human_intervention_after: 4 }\nplan: { min_steps: 2, max_steps: 8, decomposition_retries: 1 }\n",
    )
    .unwrap();
    assert_eq!(
        (
            c.retry.max_retries,
            c.retry.delay_ms(3),
            c.retry.human_intervention_after
        ),
        (5, 2_000, 4)
    );
    assert_eq!(
        (
            c.plan.min_steps,
            c.plan.max_steps,
            c.plan.decomposition_retries
        ),
        (2, 8, 1)
    );
    assert_eq!(HiveConfig::default().retry, Retry::default());
    for (text, says) in [
        (
            "retry: { max_retries: 2 }\nlimits: { max_retries: 2 }\n",
            "limits.max_retries: also set as retry.max_retries",
        ),
        (
            "retry: { backof_multiplier: 2 }\n",
            "unknown field `backof_multiplier`",
        ),
        (
            "\nplan:\n  max_steps: 0\n",
            "plan.max_steps: must be from plan.min_steps to 100 (line 3)",
        ),
    ] {
        let e = HiveConfig::parse(text).unwrap_err().to_string();
        assert!(e.contains(says), "{text:?}: {e}");
    }
}

#[test]
fn default_paths_cover_common_layouts() {
    let c = HiveConfig::default();
    assert!(c.read_only().contains(".github/hive.yml"));
    for t in ["tests/test_x.py", "test_calc.py", "pkg/calc_test.py"] {
        assert!(c.test_paths().contains(t), "{t}");
    }
    assert!(!c.test_paths().contains("calc.py"));
}

#[test]
fn the_keys_a_file_sets_are_known() {
    let c = HiveConfig::parse("setup: make deps\ngates:\n  test: make test\nlimits: { cpu: 1 }\n")
        .unwrap();
    for k in ["setup", "gates", "gates.test", "limits.cpu"] {
        assert!(c.is_set(k), "{k}");
    }
    for k in ["image", "gates.lint", "policy.test_paths", "limits.pids"] {
        assert!(!c.is_set(k), "{k}");
    }
    assert_eq!(c.setup.as_deref(), Some("make deps"));
}

#[test]
fn unknown_keys_name_the_key_and_line() {
    let err = HiveConfig::parse("label: hive\ngates:\n  tset: pytest\n").unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains("tset") && msg.contains("line 3"), "{msg}");
    let err = HiveConfig::parse("limits:\n  timeout_seconds: 5\n  netwrok: true\n")
        .unwrap_err()
        .to_string();
    assert!(err.contains("netwrok") && err.contains("line 3"), "{err}");
}

#[test]
fn bad_values_name_their_line() {
    let err = HiveConfig::parse("label: hive\nlimits:\n  cpu: 1\n  pids: 2\n")
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("limits.pids") && err.contains("(line 4)"),
        "{err}"
    );
    let err = HiveConfig::parse("gates: { test: \"x\" }\nlimits: { timeout_seconds: 0 }\n")
        .unwrap_err()
        .to_string();
    assert!(err.contains("(line 2)"), "{err}");
}

#[test]
fn bad_values_are_refused() {
    for text in [
        "gates: { test: \"\" }",
        "gates: { security: maybe }",
        "limits: { timeout_seconds: 0 }",
        "limits: { memory_mb: 1 }",
        "limits: { pids: 2 }",
        "limits: { cpu: 0 }",
        "label: [a]",
        "policy: { read_only_paths: [/etc] }",
        "policy: { test_paths: [../x] }",
        "policy: { banned_calls: [\"os system\"] }",
        "image: \"a b\"",
        "budget: { max_usd: 0 }",
        "budget: { max_dollars: 3 }",
        "setup: \"  \"",
        "gates: { test_report: /tmp/junit.xml }",
        "limits: { setup_timeout_seconds: 0 }",
    ] {
        assert!(HiveConfig::parse(text).is_err(), "{text}");
    }
}

/// `yaml` nested under the keys of `path`.
fn nested(path: &[String], yaml: &str) -> String {
    let mut text = yaml.to_owned();
    for key in path.iter().rev() {
        text = format!("{key}:\n{}", indent(&text));
    }
    text
}

fn indent(text: &str) -> String {
    text.lines().map(|l| format!("  {l}\n")).collect()
}

/// The keys `.github/hive.yml` takes under `path`, from the parser itself: serde names the
/// keys it expected when it meets one it does not know. Empty where `path` takes no keys.
fn keys_under(path: &[String]) -> Vec<String> {
    let err = HiveConfig::parse(&nested(path, "zz_no_such_key: 1"))
        .unwrap_err()
        .to_string();
    if !err.contains("unknown field `zz_no_such_key`") {
        return vec![];
    }
    let expected = err.split("expected").nth(1).unwrap_or_default();
    expected
        .split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_owned)
        .collect()
}

/// Every key the file takes that holds a value (not keys), dotted: `gates.test`.
fn every_key() -> Vec<String> {
    let mut leaves = vec![];
    let mut todo = vec![vec![]];
    while let Some(path) = todo.pop() {
        let keys = keys_under(&path);
        if keys.is_empty() && !path.is_empty() {
            leaves.push(path.join("."));
        }
        for key in keys {
            let mut p = path.clone();
            p.push(key);
            todo.push(p);
        }
    }
    leaves.sort();
    leaves
}

/// The keys docs/configuration.md's `.github/hive.yml` table documents: its first cells
/// (`a.b.c`, `.d` meaning `a.b.d`), and every key its rows name elsewhere (an older name).
fn documented() -> (Vec<String>, std::collections::BTreeSet<String>) {
    let doc = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/configuration.md"),
    )
    .unwrap();
    let table = doc.split("| key | default | meaning |").nth(1).unwrap();
    let rows = table.lines().skip(2).take_while(|l| l.starts_with('|'));
    let (mut first, mut anywhere) = (vec![], std::collections::BTreeSet::new());
    for row in rows {
        let cells: Vec<&str> = row.trim_matches('|').split('|').collect();
        let mut parent = String::new();
        for tok in cells[0].split('`').skip(1).step_by(2) {
            let key = match tok.strip_prefix('.') {
                Some(rest) => format!("{parent}{rest}"),
                None => tok.to_owned(),
            };
            parent = key
                .rsplit_once('.')
                .map(|(p, _)| format!("{p}."))
                .unwrap_or_default();
            first.push(key);
        }
        anywhere.extend(row.split('`').skip(1).step_by(2).map(str::to_owned));
    }
    anywhere.extend(first.iter().cloned());
    (first, anywhere)
}

#[test]
fn every_key_of_hive_yml_is_documented() {
    let keys = every_key();
    assert!(keys.len() > 60, "{keys:?}");
    assert!(
        keys.contains(&"ask.rate.per_repository".to_owned()),
        "{keys:?}"
    );
    let (first, anywhere) = documented();
    let missing: Vec<&String> = keys.iter().filter(|k| !anywhere.contains(*k)).collect();
    assert!(
        missing.is_empty(),
        "keys of .github/hive.yml missing from docs/configuration.md: {missing:?}"
    );
    let unknown: Vec<&String> = first.iter().filter(|k| !keys.contains(k)).collect();
    assert!(
        unknown.is_empty(),
        "docs/configuration.md documents keys the parser refuses: {unknown:?}"
    );
}
