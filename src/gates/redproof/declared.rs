//! The tests a file declares, read from its text, for runners that cannot say which file a
//! test is in: Go (`func TestX(t *testing.T)` in a `_test.go` file; `go test` names tests by
//! package) and JavaScript/TypeScript (`test('title', …)`, `it("title", …)`; Node's runner
//! names a passing test by its title alone). When such a file cannot load on the base, these
//! are the names the Encounter must see passing.

/// The test names `text` (the file `path`) declares; empty for other languages.
pub fn tests(path: &str, text: &str) -> Vec<String> {
    let mut names = Vec::new();
    if path.ends_with("_test.go") {
        for line in text.lines() {
            let Some(rest) = line.trim_start().strip_prefix("func Test") else {
                continue;
            };
            let name: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            // `TestXxx(t *testing.T)`: not `Testify`, not `TestMain(m *testing.M)`.
            let lower = name.chars().next().is_some_and(char::is_lowercase);
            if !lower && name != "Main" && rest[name.len()..].starts_with('(') {
                names.push(format!("Test{name}"));
            }
        }
    } else if is_script(path) {
        for call in ["test(", "it(", "test.only(", "it.only("] {
            for (at, _) in text.match_indices(call) {
                let before = text[..at].chars().next_back();
                if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '.') {
                    continue;
                }
                let rest = text[at + call.len()..].trim_start();
                let Some(quote) = rest
                    .chars()
                    .next()
                    .filter(|c| matches!(c, '\'' | '"' | '`'))
                else {
                    continue;
                };
                if let Some(title) = rest[1..].split(quote).next().filter(|t| !t.is_empty()) {
                    names.push(title.to_owned());
                }
            }
        }
    }
    names.sort();
    names.dedup();
    names
}

pub(super) fn is_script(path: &str) -> bool {
    [".js", ".mjs", ".cjs", ".ts", ".mts", ".cts", ".jsx", ".tsx"]
        .iter()
        .any(|e| path.ends_with(e))
}

#[cfg(test)]
mod tests {
    #[test]
    fn go_and_javascript_tests_are_read_from_their_files() {
        let go = "package calc\n\nfunc TestNewThing(t *testing.T) {}\nfunc TestMain(m *testing.M) {}\nfunc helper() {}\nfunc Testify() {}\n";
        assert_eq!(super::tests("calc_test.go", go), ["TestNewThing"]);
        let js = "import { mul } from '../calc.mjs';\ntest('mul multiplies', () => {});\ndescribe('x', () => { it(\"handles zero\", () => {}); });\nobj.test('not a test');\n";
        assert_eq!(
            super::tests("test/a.test.mjs", js),
            ["handles zero", "mul multiplies"]
        );
        assert!(super::tests("tests/test_a.py", "def test_a(): pass").is_empty());
    }
}
