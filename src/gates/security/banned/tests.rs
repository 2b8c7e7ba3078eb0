//! Tests of the banned-calls check: real parsers on real sources, and [`check`] on real git
//! commits.

use super::*;
use crate::gates::security::testing::{Change, TestRepo};

/// (line, kind, name) of each finding of `source`, checked as `path` under the defaults.
fn found(path: &str, source: &str) -> Vec<(u32, String, String)> {
    found_with(path, source, &Policy::default())
}

fn found_with(path: &str, source: &str, policy: &Policy) -> Vec<(u32, String, String)> {
    let grammar = Grammar::of_path(path).unwrap();
    let rules = policy.rules(language(grammar).unwrap());
    let mut v: Vec<_> = check_source(path, grammar, source.as_bytes(), &rules)
        .into_iter()
        .map(|f| (f.line, f.kind, f.name))
        .collect();
    v.sort();
    v
}

fn at(line: u32, kind: &str, name: &str) -> (u32, String, String) {
    (line, kind.to_owned(), name.to_owned())
}

const RUST: &str = r#"use std::process::{self, Command as C};
use std::process::*;
use std::fmt;
fn a() { ::std::process::Command::new("a"); }
fn b() { C::new("b"); }
fn c() { process::Command::new("c"); }
fn d(_: &mut process::Command) {}
fn e() { log!(std::process::Command::new("x")); }
fn f() { Command::new("g"); }
fn g() -> fmt::Result { let s = "std::process::Command"; /* std::process::Command */ Ok(()) }
fn h() { let spawn = C::new; }
"#;

#[test]
fn rust_paths_in_every_form() {
    assert_eq!(
        found("src/lib.rs", RUST),
        [
            at(1, "import", "std::process::Command"),
            at(4, "call", "std::process::Command::new"),
            at(5, "call", "std::process::Command::new"),
            at(6, "call", "std::process::Command::new"),
            at(7, "reference", "std::process::Command"),
            at(8, "reference", "std::process::Command::new"),
            at(9, "call", "std::process::Command::new"),
            at(11, "reference", "std::process::Command::new"),
        ]
    );
}

#[test]
fn rust_crates_banned_as_imports_wherever_a_path_names_them() {
    let policy: Policy =
        serde_yaml_ng::from_str("rust: { banned_calls: [], banned_imports: [libc] }").unwrap();
    let src = "extern crate libc as c;\nfn a() { unsafe { c::system(std::ptr::null()) }; libc::getpid(); }\nfn b() { let libcx = 1; }\n";
    assert_eq!(
        found_with("src/lib.rs", src, &policy),
        [at(1, "import", "libc"), at(2, "import", "libc::system")],
        "one finding per line and banned name"
    );
}

const JS: &str = r#"import cp, { exec as run } from "node:child_process";
import * as fs from "fs";
const { spawn, execFile: ef } = require("child_process");
const c = require(`child_process`);
eval("1 + 1");
const f = new Function("return 1");
globalThis["eval"]("2");
const e = eval;
const text = "eval('x')"; // eval("y")
fs.readFileSync("a");
const vm = await import("vm");
export { x } from "child_process";
"#;

#[test]
fn javascript_modules_and_globals_in_every_form() {
    assert_eq!(
        found("lib/index.mjs", JS),
        [
            at(1, "import", "child_process"),
            at(3, "import", "child_process"),
            at(4, "import", "child_process"),
            at(5, "call", "eval"),
            at(6, "call", "Function"),
            at(7, "call", "eval"),
            at(8, "reference", "eval"),
            at(12, "import", "child_process"),
        ]
    );
}

#[test]
fn javascript_members_of_a_module_through_aliases() {
    let policy: Policy = serde_yaml_ng::from_str(
        "javascript: { banned_imports: [], banned_calls: [child_process.exec, vm] }",
    )
    .unwrap();
    let src = r#"import cp, { exec as run } from "child_process";
const { exec } = require("child_process");
cp.exec("a");
run("b");
exec("c");
require("child_process")["exec"]("d");
const alias = cp;
alias.exec("e");
cp.spawn("f");
const v = await import("node:vm");
"#;
    assert_eq!(
        found_with("src/a.js", src, &policy),
        [
            at(3, "call", "child_process.exec"),
            at(4, "call", "child_process.exec"),
            at(5, "call", "child_process.exec"),
            at(6, "call", "child_process.exec"),
            at(8, "call", "child_process.exec"),
            at(10, "import", "vm"),
        ]
    );
}

#[test]
fn typescript_and_tsx_parse_with_their_grammars() {
    let ts = "import cp = require(\"child_process\");\nimport type { A } from \"./a\";\nconst n: number = 1;\nexport function f(x: A): void { eval(x as string); }\n";
    assert_eq!(
        found("src/a.ts", ts),
        [at(1, "import", "child_process"), at(4, "call", "eval")]
    );
    let tsx =
        "export const App = (p: { n: number }) => <div onClick={() => eval(\"1\")}>{p.n}</div>;\n";
    assert_eq!(found("src/App.tsx", tsx), [at(1, "call", "eval")]);
}

const GO: &str = r#"package lib

import (
	"fmt"
	"os/exec"
	run "os/exec"
	. "syscall"
	_ "embed"
)

func A() { exec.Command("ls") }
func B() *run.Cmd { return nil }
func C() { Exec("", nil, nil); fmt.Println("exec.Command") }
"#;

#[test]
fn go_imports_members_and_dot_imports() {
    assert_eq!(
        found("pkg/lib/lib.go", GO),
        [
            at(5, "import", "os/exec"),
            at(6, "import", "os/exec"),
            at(13, "call", "syscall.Exec"),
        ],
        "with os/exec banned as an import, its members need no finding of their own"
    );
    let members: Policy =
        serde_yaml_ng::from_str("go: { banned_imports: [], banned_calls: [os/exec.Command] }")
            .unwrap();
    let src = "package m\nimport x \"os/exec\"\nimport \"gopkg.in/yaml.v3\"\nfunc F() { c := x.Command; c(\"ls\"); x.Command(\"ls\").Run(); yaml.Marshal(1) }\n";
    assert_eq!(
        found_with("m.go", src, &members),
        [at(4, "reference", "os/exec.Command")],
        "one finding per line"
    );
    assert_eq!(go::default_name("gopkg.in/yaml.v3"), "yaml");
    assert_eq!(go::default_name("github.com/a/b/v2"), "b");
    assert_eq!(go::default_name("os/exec"), "exec");
}

#[test]
fn code_that_does_not_parse_is_a_finding() {
    for (path, src) in [
        ("src/lib.rs", "fn f( {\n"),
        ("a.js", "const = ;\n"),
        ("a.go", "package\nfunc {\n"),
    ] {
        let f = found(path, src);
        assert_eq!(f.len(), 1, "{path}: {f:?}");
        assert_eq!(f[0].1, "syntax", "{path}: {f:?}");
    }
}

#[test]
fn check_reads_changed_files_at_head_with_allow_in_and_languages_turned_off() {
    let t = TestRepo::new();
    let bad_rs = b"pub fn f() { std::process::Command::new(\"x\"); }\n";
    let base = t.commit(
        None,
        &[
            ("src/old.rs", Change::Write(bad_rs)),
            ("README.md", Change::Write(b"x")),
        ],
    );
    let head = t.commit(
        Some(base),
        &[
            ("src/lib.rs", Change::Write(bad_rs)),
            ("src/main.rs", Change::Write(bad_rs)),
            ("web/a.ts", Change::Write(b"eval(\"1\");\n")),
            ("web/b.test.ts", Change::Write(b"eval(\"1\");\n")),
            ("go/x.go", Change::Write(b"package x\n")),
            ("src/link.rs", Change::Link("old.rs")),
            ("notes.txt", Change::Write(b"std::process::Command")),
            ("src/old.rs", Change::Delete),
        ],
    );
    let run = check(&t.repo, base, head, &Policy::default()).unwrap();
    let mut paths: Vec<_> = run
        .findings
        .iter()
        .map(|f| (f.path.as_str(), f.line))
        .collect();
    paths.sort();
    assert_eq!(paths, [("src/lib.rs", 1), ("web/a.ts", 1)]);
    assert_eq!(run.allowed, 2, "src/main.rs and web/b.test.ts");
    assert_eq!(
        run.summary().unwrap(),
        "policy: 1 go, 1 javascript, 1 rust changed file(s) checked for banned calls (2 more under policy.<language>.allow_in), 2 finding(s)"
    );
    let f = &run.annotations()[0];
    assert_eq!(f.title.as_deref(), Some(TITLE));
    assert!(
        f.message.contains("policy.rust.banned_calls"),
        "{}",
        f.message
    );

    let off: Policy = serde_yaml_ng::from_str(
        "rust: { banned_calls: [] }\njavascript: { banned_calls: [], banned_imports: [] }",
    )
    .unwrap();
    let run = check(&t.repo, base, head, &off).unwrap();
    assert!(run.findings.is_empty(), "{:?}", run.findings);
    assert_eq!(run.checked.get("go"), Some(&1));
    assert_eq!(run.checked.len(), 1);
    assert!(
        check(&t.repo, base, base, &off)
            .unwrap()
            .summary()
            .is_none()
    );
}

#[test]
fn a_file_nested_too_deep_is_a_finding_not_a_crash() {
    // On a thread with the stack the bot's blocking threads have: the readers recurse, and
    // before the bound 5,000 parentheses overflowed it and aborted the whole process.
    let run = || {
        let deep = |n: usize| "(".repeat(n) + "1" + &")".repeat(n);
        let cases = [
            (
                "a.js",
                format!(
                    "const x = {};\nrequire('child_process').exec('ls');\n",
                    deep(5000)
                ),
            ),
            (
                "a.rs",
                format!(
                    "fn f() {{ let x = {}; std::process::Command::new(\"x\"); }}\n",
                    deep(5000)
                ),
            ),
            (
                "a.go",
                format!(
                    "package main\nimport \"os/exec\"\nfunc f() {{ x := {}; exec.Command(\"x\") }}\n",
                    deep(5000)
                ),
            ),
            // Just within the bound the file is read as usual.
            (
                "b.js",
                format!(
                    "const x = {};\nrequire('child_process').exec('ls');\n",
                    deep(990)
                ),
            ),
        ];
        cases.map(|(path, text)| (path, found(path, &text)))
    };
    let results = std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(run)
        .unwrap()
        .join()
        .expect("checked without overflowing the stack");
    for (path, found) in &results[..3] {
        assert_eq!(found, &[at(1, "error", "")], "{path}");
    }
    assert!(
        results[3].1.iter().any(|(_, kind, _)| kind == "import"),
        "{:?}",
        results[3]
    );
}
