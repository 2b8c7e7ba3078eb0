//! The Architect's output: the TaskTicket and TaskPlan of the seed documents, with the
//! deterministic completeness validator ([`validate_plan`]) and the ambiguity linter
//! ([`lint_ambiguity`]) that run before any model looks at them again.

use serde::{Deserialize, Serialize};

use crate::ticket::Finding;

/// What the ticket is about.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct TaskTicket {
    #[serde(rename = "type")]
    pub kind: String,
    pub goal: String,
    pub constraints: Constraints,
    /// Repository files the roles should read first.
    pub context_refs: Vec<String>,
    pub vibe_config: VibeConfig,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Constraints {
    pub read_only_paths: Vec<String>,
    pub timeout_seconds: Option<u64>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct VibeConfig {
    pub linter: Option<String>,
    pub complexity_limit: Option<u32>,
}

/// How the work is done.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct TaskPlan {
    pub title: String,
    pub description: String,
    pub steps: Vec<Step>,
    /// `[a, b]`: step `a` needs step `b` done first (0-based).
    pub dependencies: Vec<[usize; 2]>,
    /// The third-party libraries and the services the change needs (the knowledge check of
    /// Preparing looks for them in the repository).
    pub requires: Vec<Requirement>,
}

/// A library or a service a plan needs.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Requirement {
    /// As its package registry spells it (`bcrypt`, `serde_json`, `github.com/gorilla/mux`), or
    /// the service's name (`postgres`).
    pub name: String,
    /// `library` (also when absent) or `service`.
    pub kind: String,
}

impl Requirement {
    pub fn is_service(&self) -> bool {
        self.kind.trim().eq_ignore_ascii_case("service")
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Step {
    pub input: String,
    pub output: String,
    pub validation_criteria: String,
}

/// The Architect's whole answer.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Blueprint {
    pub ticket: TaskTicket,
    pub plan: TaskPlan,
    /// Questions for people when the issue is too vague to plan.
    pub open_questions: Vec<String>,
}

impl Blueprint {
    /// Reads the JSON object in a model's answer (bare, or in a ```json fence).
    pub fn parse(text: &str) -> Result<Self, Finding> {
        let start = text.find('{').ok_or_else(|| {
            Finding::new(
                "not_json",
                "the answer holds no JSON object; answer with the object alone",
            )
        })?;
        let end = text.rfind('}').unwrap_or(start);
        serde_json::from_str(text.get(start..=end).unwrap_or_default())
            .map_err(|e| Finding::new("not_json", format!("the JSON does not fit the format: {e}")))
    }
}

/// How many steps a plan may have unless the repository says otherwise (`plan.min_steps`,
/// `plan.max_steps`).
pub const STEPS: std::ops::RangeInclusive<usize> = 1..=30;

/// Completeness: a title, a description, a number of steps within `steps`, each with input,
/// output and validation criteria, dependencies between existing steps without cycles, context
/// refs that `exists` confirms, a sane timeout.
pub fn validate_plan(
    bp: &Blueprint,
    exists: impl Fn(&str) -> bool,
    steps: std::ops::RangeInclusive<usize>,
) -> Vec<Finding> {
    let mut f = Vec::new();
    let p = &bp.plan;
    if p.title.trim().is_empty() {
        f.push(Finding::new("missing_title", "the plan has no title"));
    }
    if p.description.trim().is_empty() {
        f.push(Finding::new(
            "missing_description",
            "the plan has no description",
        ));
    }
    if bp.ticket.goal.trim().is_empty() {
        f.push(Finding::new("missing_goal", "the ticket has no goal"));
    }
    if p.steps.is_empty() {
        f.push(Finding::new("missing_steps", "the plan has no steps"));
    } else if p.steps.len() < *steps.start() {
        f.push(Finding::new(
            "too_few_steps",
            format!(
                "{} step(s); break the work into at least {} (plan.min_steps)",
                p.steps.len(),
                steps.start()
            ),
        ));
    }
    if p.steps.len() > *steps.end() {
        f.push(Finding::new(
            "too_many_steps",
            format!(
                "{} steps; split the work into at most {} (plan.max_steps)",
                p.steps.len(),
                steps.end()
            ),
        ));
    }
    for (i, s) in p.steps.iter().enumerate() {
        for (name, value) in [
            ("input", &s.input),
            ("output", &s.output),
            ("validation_criteria", &s.validation_criteria),
        ] {
            if value.trim().is_empty() {
                f.push(Finding::new(
                    "incomplete_step",
                    format!("step {i} has no {name}"),
                ));
            }
        }
    }
    for [a, b] in &p.dependencies {
        if *a >= p.steps.len() || *b >= p.steps.len() {
            f.push(Finding::new(
                "bad_dependency",
                format!("dependency [{a}, {b}] names a step that does not exist"),
            ));
        } else if a == b {
            f.push(Finding::new(
                "bad_dependency",
                format!("step {a} depends on itself"),
            ));
        }
    }
    if f.iter().all(|x| x.code != "bad_dependency") && has_cycle(p.steps.len(), &p.dependencies) {
        f.push(Finding::new(
            "dependency_cycle",
            "the dependencies form a cycle",
        ));
    }
    for r in &bp.ticket.context_refs {
        if !exists(r) {
            f.push(Finding {
                code: "missing_context_ref".into(),
                message: format!("context ref {r:?} does not exist in the repository"),
                path: Some(r.clone()),
            });
        }
    }
    if let Some(t) = bp
        .ticket
        .constraints
        .timeout_seconds
        .filter(|t| !(1..=86_400).contains(t))
    {
        f.push(Finding::new(
            "bad_constraint",
            format!("timeout_seconds {t} is not from 1 to 86400"),
        ));
    }
    f
}

fn has_cycle(n: usize, deps: &[[usize; 2]]) -> bool {
    // Kahn's algorithm: a cycle leaves nodes that never reach in-degree 0.
    let mut indegree = vec![0usize; n];
    for [a, _] in deps {
        indegree[*a] += 1;
    }
    let mut ready: Vec<usize> = (0..n).filter(|i| indegree[*i] == 0).collect();
    let mut seen = 0;
    while let Some(b) = ready.pop() {
        seen += 1;
        for [a, dep] in deps {
            if *dep == b {
                indegree[*a] -= 1;
                if indegree[*a] == 0 {
                    ready.push(*a);
                }
            }
        }
    }
    seen < n
}

/// Words that make a requirement untestable when nothing concrete follows.
const VAGUE: &[&str] = &[
    "etc",
    "and so on",
    "as needed",
    "as appropriate",
    "appropriate",
    "somehow",
    "properly",
    "user-friendly",
    "user friendly",
    "various",
    "tbd",
    "to be decided",
    "improve",
    "better",
    "nicer",
    "cleaner",
    "robust",
    "fast enough",
    "if possible",
    "some",
];

/// Flags vague wording in the goal and the steps (one finding per place).
pub fn lint_ambiguity(bp: &Blueprint) -> Vec<Finding> {
    let mut places: Vec<(String, &str)> = vec![("the goal".into(), bp.ticket.goal.as_str())];
    for (i, s) in bp.plan.steps.iter().enumerate() {
        places.push((format!("step {i} output"), s.output.as_str()));
        places.push((
            format!("step {i} validation criteria"),
            s.validation_criteria.as_str(),
        ));
    }
    let mut out = Vec::new();
    for (place, text) in places {
        let lower = text.to_lowercase();
        let words: Vec<&str> = lower
            .split(|c: char| !c.is_alphanumeric() && c != '-')
            .filter(|w| !w.is_empty())
            .collect();
        let joined = format!(" {} ", words.join(" "));
        if let Some(v) = VAGUE.iter().find(|v| joined.contains(&format!(" {v} "))) {
            out.push(Finding::new(
                "vague_requirement",
                format!("{place} says {v:?}; say exactly what is expected, so a test can check it"),
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn good() -> Blueprint {
        Blueprint::parse(
            r#"```json
{"ticket": {"type": "bugfix", "goal": "add(2, 3) returns 5", "context_refs": ["calc.py"]},
 "plan": {"title": "Fix add", "description": "add subtracts; make it add.",
          "steps": [{"input": "calc.py", "output": "add returns a + b", "validation_criteria": "test_add passes"},
                    {"input": "tests", "output": "a test for add(0, 0)", "validation_criteria": "test_zero passes"}],
          "dependencies": [[1, 0]]},
 "open_questions": []}
```"#,
        )
        .unwrap()
    }

    #[test]
    fn a_complete_plan_passes() {
        let bp = good();
        assert_eq!(bp.ticket.kind, "bugfix");
        assert!(validate_plan(&bp, |p| p == "calc.py", STEPS).is_empty());
        assert!(lint_ambiguity(&bp).is_empty());
    }

    #[test]
    fn the_number_of_steps_keeps_to_the_repositorys_range() {
        let bp = good();
        let n = bp.plan.steps.len();
        let codes = |r: std::ops::RangeInclusive<usize>| -> Vec<String> {
            validate_plan(&bp, |_| true, r)
                .into_iter()
                .map(|f| f.code)
                .collect()
        };
        assert!(codes(n..=n).is_empty());
        assert_eq!(codes(n + 1..=30), ["too_few_steps"]);
        assert_eq!(codes(1..=n - 1), ["too_many_steps"]);
    }

    #[test]
    fn gaps_are_named() {
        let mut bp = good();
        bp.plan.title.clear();
        bp.plan.steps[1].validation_criteria = " ".into();
        bp.plan.dependencies = vec![[0, 1], [1, 0]];
        bp.ticket.context_refs.push("nope.py".into());
        let codes: Vec<String> = validate_plan(&bp, |p| p == "calc.py", STEPS)
            .into_iter()
            .map(|f| f.code)
            .collect();
        assert_eq!(
            codes,
            [
                "missing_title",
                "incomplete_step",
                "dependency_cycle",
                "missing_context_ref"
            ]
        );
        bp.plan.dependencies = vec![[0, 0], [0, 9]];
        let codes: Vec<String> = validate_plan(&bp, |_| true, STEPS)
            .into_iter()
            .map(|f| f.code)
            .collect();
        assert!(
            codes.iter().filter(|c| *c == "bad_dependency").count() == 2,
            "{codes:?}"
        );
        assert_eq!(
            validate_plan(&Blueprint::default(), |_| true, STEPS).len(),
            4,
            "title, description, goal and steps"
        );
    }

    #[test]
    fn vague_words_are_flagged() {
        let mut bp = good();
        bp.ticket.goal = "Improve the parser and so on".into();
        bp.plan.steps[0].validation_criteria = "it works properly".into();
        let found = lint_ambiguity(&bp);
        assert_eq!(found.len(), 2, "{found:?}");
        assert!(found[0].message.contains("the goal"));
        // Words that merely contain a vague word are fine.
        bp.ticket.goal = "Handle something in somebody's betterment".into();
        bp.plan.steps[0].validation_criteria = "x".into();
        assert!(lint_ambiguity(&bp).is_empty(), "{:?}", lint_ambiguity(&bp));
    }

    #[test]
    fn answers_without_json_are_findings() {
        assert_eq!(
            Blueprint::parse("I think we should…").unwrap_err().code,
            "not_json"
        );
        assert_eq!(
            Blueprint::parse("{\"plan\": 3}").unwrap_err().code,
            "not_json"
        );
    }
}
