//! The budget ledger: what each role of a ticket spent — calls, prompt and completion tokens,
//! cost (from the price table), wall-clock — and the caps of `.github/hive.yml` (`budget.*`),
//! checked before every model call.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::Usage;

/// USD per million tokens.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Price {
    pub prompt: f64,
    pub completion: f64,
}

/// The price table, by model name.
#[derive(Debug, Clone, Default)]
pub struct Prices(BTreeMap<String, Price>);

impl Prices {
    pub fn new(map: BTreeMap<String, Price>) -> Self {
        Self(map)
    }

    pub fn get(&self, model: &str) -> Option<Price> {
        self.0.get(model).copied()
    }

    /// The cost of `usage` on `model`; 0 for a model without a price.
    pub fn cost(&self, model: &str, usage: Usage) -> f64 {
        self.get(model)
            .map(|p| {
                (usage.prompt_tokens as f64 * p.prompt
                    + usage.completion_tokens as f64 * p.completion)
                    / 1e6
            })
            .unwrap_or(0.0)
    }
}

/// What was spent.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Spend {
    pub calls: u64,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub cost_usd: f64,
    /// Wall-clock of the role's work (model calls and tools), in milliseconds.
    pub millis: u64,
}

impl Spend {
    pub fn tokens(&self) -> u64 {
        self.prompt_tokens + self.completion_tokens
    }

    pub fn add(&mut self, o: &Spend) {
        self.calls += o.calls;
        self.prompt_tokens += o.prompt_tokens;
        self.completion_tokens += o.completion_tokens;
        self.cost_usd += o.cost_usd;
        self.millis += o.millis;
    }

    /// "$0.42 · 12,345 tokens · 3.2 min · 14 calls".
    pub fn describe(&self) -> String {
        format!(
            "${:.2} · {} tokens · {:.1} min · {} calls",
            self.cost_usd,
            thousands(self.tokens()),
            self.millis as f64 / 60_000.0,
            self.calls
        )
    }
}

fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The caps of `budget.*` in `.github/hive.yml`; `None` is no cap. A key left out keeps its
/// default: $10, 2,000,000 tokens, 60 minutes per ticket.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct Caps {
    pub max_usd: Option<f64>,
    pub max_tokens: Option<u64>,
    pub max_minutes: Option<f64>,
}

impl Default for Caps {
    fn default() -> Self {
        Self {
            max_usd: Some(10.0),
            max_tokens: Some(2_000_000),
            max_minutes: Some(60.0),
        }
    }
}

impl Caps {
    /// No cap at all.
    pub fn none() -> Self {
        Self {
            max_usd: None,
            max_tokens: None,
            max_minutes: None,
        }
    }

    /// Each cap the lower of the two (`None`, no cap, is the higher).
    pub fn narrowest(self, other: Caps) -> Caps {
        fn low<T: PartialOrd>(a: Option<T>, b: Option<T>) -> Option<T> {
            match (a, b) {
                (Some(a), Some(b)) => Some(if b < a { b } else { a }),
                (a, b) => a.or(b),
            }
        }
        Caps {
            max_usd: low(self.max_usd, other.max_usd),
            max_tokens: low(self.max_tokens, other.max_tokens),
            max_minutes: low(self.max_minutes, other.max_minutes),
        }
    }
}

/// A cap reached: the ticket stops here.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error(
    "the budget is spent: {what} (spent {spent}); raise `budget.{key}` in .github/hive.yml to allow more"
)]
pub struct BudgetExceeded {
    pub key: &'static str,
    pub what: String,
    pub spent: String,
}

/// The ledger of one ticket, by role.
#[derive(Debug)]
pub struct Ledger {
    caps: Caps,
    by_role: Mutex<BTreeMap<String, Spend>>,
}

impl Ledger {
    /// A ledger with `caps`, continuing from what earlier runs of the ticket spent.
    pub fn new(caps: Caps, prior: BTreeMap<String, Spend>) -> Self {
        Self {
            caps,
            by_role: Mutex::new(prior),
        }
    }

    pub fn caps(&self) -> Caps {
        self.caps
    }

    /// Checked before every model call.
    pub fn check(&self) -> Result<(), BudgetExceeded> {
        let t = self.total();
        if let Some(max) = self.caps.max_usd.filter(|m| t.cost_usd >= *m) {
            return Err(BudgetExceeded {
                key: "max_usd",
                what: format!("max_usd ${max:.2}"),
                spent: format!("${:.2}", t.cost_usd),
            });
        }
        if let Some(max) = self.caps.max_tokens.filter(|m| t.tokens() >= *m) {
            return Err(BudgetExceeded {
                key: "max_tokens",
                what: format!("max_tokens {}", thousands(max)),
                spent: thousands(t.tokens()),
            });
        }
        if let Some(max) = self
            .caps
            .max_minutes
            .filter(|m| t.millis as f64 >= m * 60_000.0)
        {
            return Err(BudgetExceeded {
                key: "max_minutes",
                what: format!("max_minutes {max}"),
                spent: format!("{:.1} min", t.millis as f64 / 60_000.0),
            });
        }
        Ok(())
    }

    /// Books one model call of `role`; returns what it cost.
    pub fn record_call(&self, role: &str, usage: Usage, cost_usd: f64, elapsed: Duration) -> Spend {
        let spend = Spend {
            calls: 1,
            prompt_tokens: usage.prompt_tokens,
            completion_tokens: usage.completion_tokens,
            cost_usd,
            millis: elapsed.as_millis() as u64,
        };
        self.by_role
            .lock()
            .expect("lock")
            .entry(role.to_owned())
            .or_default()
            .add(&spend);
        spend
    }

    /// Books time a role spent outside model calls (its tools).
    pub fn record_time(&self, role: &str, elapsed: Duration) {
        let spend = Spend {
            millis: elapsed.as_millis() as u64,
            ..Spend::default()
        };
        self.by_role
            .lock()
            .expect("lock")
            .entry(role.to_owned())
            .or_default()
            .add(&spend);
    }

    pub fn by_role(&self) -> BTreeMap<String, Spend> {
        self.by_role.lock().expect("lock").clone()
    }

    pub fn total(&self) -> Spend {
        let mut t = Spend::default();
        for s in self.by_role.lock().expect("lock").values() {
            t.add(s);
        }
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_narrowest_caps_take_the_lower_of_each() {
        let a = Caps {
            max_usd: Some(1.0),
            max_tokens: None,
            max_minutes: Some(60.0),
        };
        let b = Caps {
            max_usd: Some(10.0),
            max_tokens: Some(50),
            max_minutes: None,
        };
        let want = Caps {
            max_usd: Some(1.0),
            max_tokens: Some(50),
            max_minutes: Some(60.0),
        };
        assert_eq!(a.narrowest(b), want);
        assert_eq!(b.narrowest(a), want);
        assert_eq!(Caps::none().narrowest(Caps::none()), Caps::none());
    }

    #[test]
    fn costs_come_from_the_price_table() {
        let p = Prices::new(BTreeMap::from([(
            "m".into(),
            Price {
                prompt: 3.0,
                completion: 15.0,
            },
        )]));
        let u = Usage {
            prompt_tokens: 1_000_000,
            completion_tokens: 100_000,
        };
        assert!((p.cost("m", u) - 4.5).abs() < 1e-9);
        assert_eq!(p.cost("unknown", u), 0.0);
    }

    #[test]
    fn caps_stop_the_ticket_with_a_clear_reason() {
        let l = Ledger::new(
            Caps {
                max_usd: Some(1.0),
                max_tokens: Some(10_000),
                max_minutes: None,
            },
            BTreeMap::new(),
        );
        assert!(l.check().is_ok());
        l.record_call(
            "builder",
            Usage {
                prompt_tokens: 6_000,
                completion_tokens: 1_000,
            },
            0.5,
            Duration::from_secs(2),
        );
        assert!(l.check().is_ok());
        l.record_call(
            "critic",
            Usage {
                prompt_tokens: 3_000,
                completion_tokens: 500,
            },
            0.25,
            Duration::from_secs(1),
        );
        let e = l.check().unwrap_err();
        assert_eq!(e.key, "max_tokens");
        assert!(
            e.to_string().contains("10,500") && e.to_string().contains("budget.max_tokens"),
            "{e}"
        );
        let t = l.total();
        assert_eq!((t.calls, t.tokens(), t.millis), (2, 10_500, 3_000));
        assert_eq!(l.by_role()["critic"].calls, 1);
    }

    #[test]
    fn prior_spend_counts() {
        let prior = BTreeMap::from([(
            "builder".into(),
            Spend {
                cost_usd: 2.0,
                ..Spend::default()
            },
        )]);
        let l = Ledger::new(
            Caps {
                max_usd: Some(2.0),
                ..Caps::none()
            },
            prior,
        );
        assert_eq!(l.check().unwrap_err().key, "max_usd");
        assert_eq!(
            Spend {
                cost_usd: 0.4242,
                prompt_tokens: 12_000,
                completion_tokens: 345,
                millis: 192_000,
                calls: 14
            }
            .describe(),
            "$0.42 · 12,345 tokens · 3.2 min · 14 calls"
        );
    }
}
