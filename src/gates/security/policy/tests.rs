//! Tests of the Python policy check: the findings of every form of import and call, as
//! Python's own `ast` named them in the checker this one replaced, and the files it refuses.

use super::*;
use crate::gates::security::testing::{Change, TestRepo};

fn names(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| (*s).to_owned()).collect()
}

fn calls() -> Vec<String> {
    names(&["eval", "exec", "os.system", "subprocess.Popen"])
}

fn imports() -> Vec<String> {
    names(&["pickle", "xml"])
}

/// Checks each of `checked` that `files` has, as the gate does.
fn check(files: &[(&str, &str)], checked: &[&str]) -> PolicyRun {
    let mut run = PolicyRun {
        findings: vec![],
        files_checked: 0,
    };
    for name in checked {
        let Some((_, text)) = files.iter().find(|(n, _)| n == name) else {
            continue;
        };
        run.findings.extend(python::check_source(
            name,
            text.as_bytes(),
            &calls(),
            &imports(),
        ));
        run.files_checked += 1;
    }
    run
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

#[test]
fn banned_imports_in_every_form() {
    let r = check(&[("imports.py", IMPORTS)], &["imports.py"]);
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

#[test]
fn banned_calls_through_every_alias() {
    let r = check(&[("calls.py", CALLS)], &["calls.py"]);
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

#[test]
fn harmless_code_passes_and_shadowing_does_not_help() {
    let files = [("ok.py", HARMLESS), ("shadow.py", SHADOW)];
    let r = check(&files, &["ok.py", "shadow.py", "missing.py"]);
    assert_eq!(found(&r, "ok.py"), []);
    assert_eq!(found(&r, "shadow.py"), [at(4, "call", "eval")]);
    // The missing file is skipped, not counted.
    assert_eq!((r.files_checked, r.findings.len()), (2, 1));
}

#[test]
fn a_syntax_error_is_one_finding_at_its_line() {
    let text = "x = 1\n\ndef f(:\n    eval('1')\n";
    let r = check(&[("bad.py", text)], &["bad.py"]);
    assert_eq!(found(&r, "bad.py"), [at(3, "syntax", "")]);
    assert!(
        r.findings[0].message.starts_with("cannot parse: "),
        "{:?}",
        r.findings
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

/// Spellings Python reads as a banned name that a reader of the text alone would miss.
const DISGUISED: &str = "\
import os
(os.system)('ls')
(os).system('ls')
ｅｖａｌ('1')
os.ｓｙｓｔｅｍ('ls')
getattr(os, '\\x73ystem')('ls')
getattr(os, 'sys' 'tem')('ls')
__import__(r'pickle')
getattr(os, f'system')('ls')
a = b = os.system
b('ls')
(c := os.system)('ls')
d: object = os.system
def f(x=os.system): pass
@eval
def g(): pass
class K(metaclass=os.system): pass
f'{eval}'
match x:
    case os.system: pass
";

#[test]
fn disguised_names_are_read_as_python_reads_them() {
    let r = check(&[("d.py", DISGUISED)], &["d.py"]);
    let mut expected = vec![
        at(2, "call", "os.system"),
        at(3, "call", "os.system"),
        at(4, "call", "eval"),
        at(5, "call", "os.system"),
        at(6, "call", "os.system"),
        at(7, "call", "os.system"),
        at(8, "import", "pickle"),
        at(9, "call", "os.system"),
        at(10, "reference", "os.system"),
        at(11, "call", "os.system"),
        at(12, "reference", "os.system"),
        at(13, "reference", "os.system"),
        at(14, "reference", "os.system"),
        at(15, "reference", "eval"),
        at(17, "reference", "os.system"),
        at(18, "reference", "eval"),
        at(20, "reference", "os.system"),
    ];
    expected.sort();
    assert_eq!(found(&r, "d.py"), expected);
}

/// Names that are declared, not read: parameters, definitions, keywords, `global`, captures.
const DECLARED: &str = "\
import os
def eval(exec, *system, **more): pass
class exec: pass
lambda eval: 1
f(eval=1)
global exec
os.system = None
del os.system
for eval in []: pass
try:
    pass
except ValueError as eval:
    pass
match x:
    case eval: pass
    case {'k': exec}: pass
";

#[test]
fn declared_names_are_not_calls() {
    let r = check(&[("ok.py", DECLARED)], &["ok.py"]);
    assert_eq!(found(&r, "ok.py"), []);
}

#[test]
fn a_name_only_unicode_can_spell_is_refused_where_it_names_a_module() {
    let text = "import os\n__import__('\\N{LATIN SMALL LETTER O}s').system('ls')\nprint('\\N{BULLET} done')\n";
    let r = check(&[("n.py", text)], &["n.py"]);
    let f = &r.findings;
    assert_eq!(found(&r, "n.py"), [at(2, "error", "")], "{f:?}");
    assert!(f[0].message.contains("write the name out"), "{f:?}");
}

#[test]
fn files_python_would_read_differently_are_refused() {
    let utf7 = "# coding: utf-7\nimport os\n+AG8-s.system('ls')\n";
    let py2 = "print >> sys.stderr, 'hello'\nexec 'import os; os.system(\"ls\")'\n";
    let print = "print 'hello'\n";
    let hidden = "# decoding notes; coding: utf-7\nimport os\n+AG8-s.system('ls')\n";
    let latin1 = b"x = '\xe9'\n".as_slice();
    // (file, text, (line, kind), what the finding says)
    type Case<'a> = (&'a str, &'a [u8], (u32, &'a str), &'a str);
    let cases: [Case<'_>; 5] = [
        (
            "utf7.py",
            utf7.as_bytes(),
            (1, "error"),
            "declares the encoding `utf-7`",
        ),
        (
            "hidden.py",
            hidden.as_bytes(),
            (1, "error"),
            "declares the encoding `utf-7`",
        ),
        (
            "py2.py",
            py2.as_bytes(),
            (2, "syntax"),
            "Python 2 `exec` statement",
        ),
        (
            "print.py",
            print.as_bytes(),
            (1, "syntax"),
            "Python 2 `print` statement",
        ),
        ("latin1.py", latin1, (1, "syntax"), "not UTF-8"),
    ];
    for (name, text, (line, kind), says) in cases {
        let f = python::check_source(name, text, &calls(), &imports());
        assert_eq!(f.len(), 1, "{name}: {f:?}");
        assert_eq!(
            (f[0].line, f[0].kind.as_str()),
            (line, kind),
            "{name}: {f:?}"
        );
        assert!(f[0].message.contains(says), "{name}: {f:?}");
    }
    // UTF-8 said in so many words, or with a byte-order mark, is read.
    let declared = "# -*- coding: utf-8 -*-\neval('1')\n";
    let bom = "\u{feff}eval('1')\n";
    for text in [declared, bom] {
        let f = python::check_source("u.py", text.as_bytes(), &calls(), &imports());
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].kind, "call", "{f:?}");
    }
}

#[test]
fn deep_nesting_is_checked_without_running_out_of_stack() {
    // Run on a thread with a small stack: a recursive walk would overflow it.
    let handle = std::thread::Builder::new()
        .stack_size(256 * 1024)
        .spawn(|| {
            let n = 20_000;
            let chain = format!("import os\nx = os{}\nos.system('ls')\n", ".a".repeat(n));
            let concat = format!("__import__({})\n", vec!["'x'"; n].join(" + "));
            let parens = format!("y = {}1{}\n", "(".repeat(n), ")".repeat(n));
            let text = format!("{chain}{concat}{parens}");
            python::check_source("deep.py", text.as_bytes(), &calls(), &imports())
        })
        .unwrap();
    let f = handle.join().expect("the check finished");
    assert!(
        f.iter().any(|f| f.line == 3 && f.name == "os.system"),
        "{f:?}"
    );
}

#[test]
fn the_check_reads_the_committed_blobs_of_the_changed_files() {
    let t = TestRepo::new();
    let base = t.commit(None, &[("keep.py", Change::Write(b"x = 1\n"))]);
    let head = t.commit(
        Some(base),
        &[
            (
                "pkg/deep/app.py",
                Change::Write(b"import os\nos.system('ls')\n"),
            ),
            ("it's a $(name).py", Change::Write(b"eval('1')\n")),
            ("clean.py", Change::Write(b"print('ok')\n")),
            ("link.py", Change::Link("pkg/deep/app.py")),
        ],
    );
    let files = changed_python_files(&t.repo, base, head).unwrap().files;
    assert_eq!(files.len(), 4, "{files:?}");
    let run = super::check(&t.repo, head, &files, &calls(), &imports()).unwrap();
    // The link is not a file of its own: left out, not counted.
    assert_eq!(run.files_checked, 3);
    let mut got: Vec<_> = run
        .findings
        .iter()
        .map(|f| (f.path.as_str(), f.line, f.kind.as_str()))
        .collect();
    got.sort();
    assert_eq!(
        got,
        [
            ("it's a $(name).py", 1, "call"),
            ("pkg/deep/app.py", 2, "call")
        ]
    );
}
