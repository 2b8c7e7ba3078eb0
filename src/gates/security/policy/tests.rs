//! Tests of the policy check: the embedded script really runs, with `python3 -I -S -c`, through
//! the local sandbox, on files written to a temporary directory.

use std::path::Path;
use std::time::Duration;

use super::*;
use crate::gates::security::testing::{Change, TestRepo};
use crate::sandbox::local::{LocalCommand, run};

fn names(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| (*s).to_owned()).collect()
}

fn calls() -> Vec<String> {
    names(&["eval", "exec", "os.system", "subprocess.Popen"])
}

fn imports() -> Vec<String> {
    names(&["pickle", "xml"])
}

async fn sh(script: &str, dir: &Path) -> CommandOutput {
    run(&LocalCommand::new(script, dir, Duration::from_secs(60)))
        .await
        .unwrap()
}

/// Writes `files` into a fresh directory and runs the check on `checked`.
async fn check(files: &[(&str, &str)], checked: &[&str]) -> (tempfile::TempDir, PolicyRun) {
    let dir = tempfile::tempdir().unwrap();
    for (name, text) in files {
        std::fs::write(dir.path().join(name), text).unwrap();
    }
    let out = sh(
        &policy_command(&names(checked), &calls(), &imports()),
        dir.path(),
    )
    .await;
    let result = policy_result(&out).unwrap_or_else(|e| panic!("{e}\n{}", out.output));
    (dir, result)
}

/// (line, kind, name) of every finding in `path`.
fn found(run: &PolicyRun, path: &str) -> Vec<(u32, String, String)> {
    let mut v: Vec<_> = run
        .findings
        .iter()
        .filter(|f| f.path == path)
        .map(|f| (f.line, f.kind.clone(), f.name.clone()))
        .collect();
    v.sort();
    v
}

fn at(line: u32, kind: &str, name: &str) -> (u32, String, String) {
    (line, kind.to_owned(), name.to_owned())
}

const IMPORTS: &str = "\
import importlib
import pickle
import pickle as p
from pickle import loads
import xml.etree.ElementTree
from xml import etree
__import__(\"pickle\")
importlib.import_module(\"pic\" + \"kle\")
from importlib import import_module as im
im(\"xml.dom\")
import json, os.path
from . import pickle
";

#[tokio::test]
async fn banned_imports_in_every_form() {
    let (_dir, r) = check(&[("imports.py", IMPORTS)], &["imports.py"]).await;
    let expected = [
        at(2, "import", "pickle"),
        at(3, "import", "pickle"),
        at(4, "import", "pickle"),
        at(5, "import", "xml.etree.ElementTree"),
        at(6, "import", "xml"),
        at(7, "import", "pickle"),
        at(8, "import", "pickle"),
        at(10, "import", "xml.dom"),
    ];
    assert_eq!(found(&r, "imports.py"), expected);
    assert_eq!(r.files_checked, 1);
    let a = r.annotations();
    assert_eq!(a[0].title.as_deref(), Some(TITLE));
    assert!(
        a[0].message.contains("policy.banned_imports"),
        "{}",
        a[0].message
    );
}

const CALLS: &str = "\
import os
import os as o
from os import system
from os import system as s
import subprocess
import subprocess as sp
from subprocess import Popen
from subprocess import Popen as P
eval(\"1\")
os.system(\"ls\")
o.system(\"ls\")
system(\"ls\")
s(\"ls\")
subprocess.Popen([\"ls\"])
sp.Popen([\"ls\"])
Popen([\"ls\"])
P([\"ls\"])
getattr(os, \"system\")(\"ls\")
getattr(o, \"sys\" + \"tem\")(\"ls\")
runner = os.system
runner(\"ls\")
__import__(\"os\").system(\"ls\")
import builtins as b
b.eval(\"1\")
shell = sp
shell.Popen([\"ls\"])
from os import *
system(\"again\")
import sys
__builtins__[\"eval\"](\"1\")
os.__dict__[\"system\"](\"ls\")
vars(os)[\"system\"](\"ls\")
sys.modules[\"os\"].system(\"ls\")
";

#[tokio::test]
async fn banned_calls_through_every_alias() {
    let (_dir, r) = check(&[("calls.py", CALLS)], &["calls.py"]).await;
    let mut expected = vec![at(9, "call", "eval")];
    for line in [10, 11, 12, 13, 18, 19, 21, 22, 28, 31, 32, 33] {
        expected.push(at(line, "call", "os.system"));
    }
    for line in [14, 15, 16, 17, 26] {
        expected.push(at(line, "call", "subprocess.Popen"));
    }
    expected.push(at(20, "reference", "os.system"));
    expected.push(at(24, "call", "eval"));
    expected.push(at(30, "call", "eval"));
    expected.sort();
    assert_eq!(found(&r, "calls.py"), expected);
}

const HARMLESS: &str = "\
import os
import subprocess
# os.system(\"ls\") in a comment
text = \"os.system('ls')\"
def helper():
    \"\"\"Never eval(x) anything.\"\"\"
    return os.path.join(\"a\", \"b\")
model.eval()
obj.system(\"x\")
subprocess.run([\"ls\"], check=True)
getattr(os, name)(\"x\")
";

/// Decision: names, not values, are checked, so a local `eval` is still flagged when called.
const SHADOW: &str = "def eval(x):\n    return x\n\neval(1)\n";

#[tokio::test]
async fn harmless_code_passes_and_shadowing_does_not_help() {
    let files = [("ok.py", HARMLESS), ("shadow.py", SHADOW)];
    let (_dir, r) = check(&files, &["ok.py", "shadow.py", "missing.py"]).await;
    assert_eq!(found(&r, "ok.py"), []);
    assert_eq!(found(&r, "shadow.py"), [at(4, "call", "eval")]);
    // The missing file is skipped, not counted.
    assert_eq!((r.files_checked, r.findings.len()), (2, 1));
}

#[tokio::test]
async fn a_syntax_error_is_one_finding_at_its_line() {
    let text = "x = 1\n\ndef f(:\n    eval('1')\n";
    let (_dir, r) = check(&[("bad.py", text)], &["bad.py"]).await;
    assert_eq!(found(&r, "bad.py"), [at(3, "syntax", "")]);
    assert!(
        r.findings[0].message.starts_with("cannot parse: "),
        "{:?}",
        r.findings
    );
}

#[tokio::test]
async fn hostile_file_names_are_quoted() {
    let hostile = [
        "a b.py",
        "it's.py",
        "$(touch pwned1).py",
        "`touch pwned2`.py",
        "new\nline.py",
        "'; touch pwned3; '.py",
        "quo\"te\\.py",
        "tab\tand ${HOME}.py",
    ];
    let files: Vec<_> = hostile.iter().map(|n| (*n, "eval('1')\n")).collect();
    let (dir, r) = check(&files, &hostile).await;
    for name in hostile {
        assert_eq!(found(&r, name), [at(1, "call", "eval")], "{name:?}");
    }
    for p in ["pwned1", "pwned2", "pwned3"] {
        assert!(!dir.path().join(p).exists(), "{p} was created");
    }
    // The quoting round-trips through sh exactly.
    for name in hostile {
        let out = sh(&format!("printf %s {}", quote(name)), dir.path()).await;
        assert_eq!(out.output, name);
    }
}

#[tokio::test]
async fn a_planted_stdlib_module_cannot_shadow_the_checker() {
    let planted = "import sys\nprint('planted module ran')\nsys.exit(0)\n";
    let files = [
        ("ast.py", planted),
        ("json.py", planted),
        ("app.py", "import os\nos.system('ls')\n"),
    ];
    let dir = tempfile::tempdir().unwrap();
    for (name, text) in files {
        std::fs::write(dir.path().join(name), text).unwrap();
    }
    // Without -I the planted module wins: the check would never run.
    let bare = sh("python3 -c 'import ast; print(ast.parse)'", dir.path()).await;
    assert!(
        bare.output.contains("planted module ran"),
        "{}",
        bare.output
    );
    let cmd = policy_command(&names(&["app.py", "ast.py"]), &calls(), &[]);
    let out = sh(&cmd, dir.path()).await;
    let r = policy_result(&out).unwrap();
    assert!(!out.output.contains("planted module ran"), "{}", out.output);
    assert_eq!(found(&r, "app.py"), [at(2, "call", "os.system")]);
    assert_eq!(r.files_checked, 2);
}

#[tokio::test]
async fn an_unfinished_run_is_an_error_not_a_pass() {
    let dir = tempfile::tempdir().unwrap();
    let no_python = sh("exec python-that-is-not-there -c 1", dir.path()).await;
    let err = policy_result(&no_python).unwrap_err().to_string();
    assert!(err.contains("the image has no python3"), "{err}");
    let no_end = sh("echo '{\"path\":\"a.py\",\"line\":1}'", dir.path()).await;
    let err = policy_result(&no_end).unwrap_err().to_string();
    assert!(err.contains("did not finish"), "{err}");
}

#[test]
fn output_parsing_ignores_noise() {
    let output = "\
{\"path\":\"a.py\",\"line\":3,\"col\":5,\"kind\":\"call\",\"name\":\"eval\",\"message\":\"m\"}
Traceback (most recent call last):
{\"path\":\"b.py\",\"line\":1}
{\"done\": 1}
not json
";
    let a = parse_policy_output(output);
    assert_eq!(a.len(), 1);
    assert_eq!(
        (a[0].path.as_str(), a[0].start_line, a[0].start_column),
        ("a.py", 3, Some(5))
    );
    assert_eq!(
        (a[0].level, a[0].title.as_deref()),
        (Level::Failure, Some(TITLE))
    );
}

#[tokio::test]
async fn long_file_lists_are_split_below_the_argument_limit() {
    let files: Vec<String> = (0..3000)
        .map(|i| format!("pkg/it's a rather long module name number {i:05}.py"))
        .collect();
    let commands = policy_commands(&files, &calls(), &imports());
    assert!(commands.len() >= 2, "{}", commands.len());
    assert!(commands.iter().all(|c| c.len() <= MAX_COMMAND_BYTES));
    assert!(policy_commands(&[], &calls(), &imports()).is_empty());
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("pkg")).unwrap();
    for i in [0, 2999] {
        std::fs::write(dir.path().join(&files[i]), "exec('1')\n").unwrap();
    }
    let mut total = 0;
    let mut flagged = Vec::new();
    for c in &commands {
        let r = policy_result(&sh(c, dir.path()).await).unwrap();
        total += r.files_checked;
        flagged.extend(r.findings.into_iter().map(|f| f.path));
    }
    assert_eq!(
        (total, flagged),
        (2, vec![files[0].clone(), files[2999].clone()])
    );
}

#[test]
fn changed_python_files_lists_what_head_adds_or_changes() {
    let t = TestRepo::new();
    let base = t.commit(
        None,
        &[
            ("a.py", Change::Write(b"x = 1\n")),
            ("b.py", Change::Write(b"x = 1\n")),
            ("c.py", Change::Write(b"x = 1\n")),
        ],
    );
    let head = t.commit_raw(
        Some(base),
        &[
            (b"a.py".as_slice(), &Change::Write(b"x = 2\n")),
            (b"b.py".as_slice(), &Change::Delete),
            (b"pkg/new.py".as_slice(), &Change::Write(b"")),
            (b"notes.txt".as_slice(), &Change::Write(b"")),
            (b"odd\xff.py".as_slice(), &Change::Write(b"")),
        ],
    );
    let p = changed_python_files(&t.repo, base, head).unwrap();
    assert_eq!(p.files, ["a.py", "pkg/new.py"]);
    assert_eq!(p.unnamed.len(), 1);
    assert!(p.unnamed[0].message.contains("not UTF-8"));
}
