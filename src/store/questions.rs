//! The `questions` table: what people asked the read-only agent (`/hive ask`), where, and the
//! answer once given. A question is recorded once per source, in the same transaction that
//! queues the job answering it; the answers given before on the same issue or pull request are
//! what a follow-up question is asked with.

use sqlx::Row as _;

use super::jobs::{JobKey, enqueue_in};
use super::{Result, Store};
use crate::ids::{InstallationId, RepoName};
use crate::now_ms;

/// A question to record.
#[derive(Debug, Clone)]
pub struct NewQuestion<'a> {
    /// The command's source, `comment:<id>#<line>`.
    pub source: &'a str,
    pub repo: &'a RepoName,
    pub installation_id: InstallationId,
    /// The issue's or pull request's number.
    pub issue: u64,
    pub pull_request: bool,
    /// The review thread it was asked in (the thread's first comment).
    pub thread: Option<u64>,
    pub base_branch: &'a str,
    pub author: &'a str,
    pub question: &'a str,
}

/// A recorded question.
#[derive(Debug, Clone, PartialEq)]
pub struct Question {
    /// Its row: later questions have larger ones.
    pub id: i64,
    pub source: String,
    pub repo: String,
    pub installation_id: InstallationId,
    pub issue: u64,
    pub pull_request: bool,
    pub thread: Option<u64>,
    pub base_branch: String,
    pub author: String,
    pub question: String,
    /// The answer itself, once answered (what a follow-up is told).
    pub answer: Option<String>,
    /// The reply as posted: the answer, its warnings and its spend.
    pub reply: Option<String>,
    pub commit_sha: Option<String>,
    /// What the answer cost (JSON).
    pub spend: Option<serde_json::Value>,
    pub created_at: i64,
    /// Why it could not be answered, when its job failed for good.
    pub error: Option<String>,
}

/// An answer to record.
#[derive(Debug, Clone)]
pub struct Answer<'a> {
    /// The answer itself.
    pub text: &'a str,
    /// The reply as posted.
    pub reply: &'a str,
    pub commit: &'a str,
    pub spend: &'a serde_json::Value,
}

const COLUMNS: &str = "id, source, repo, installation_id, issue, pull_request, thread, base_branch, \
    author, question, answer, reply, commit_sha, spend, created_at, error";

impl Store {
    /// Records a question and queues its answer; false when this source asked it already.
    pub async fn ask_question(&self, q: &NewQuestion<'_>) -> Result<bool> {
        let now = now_ms();
        let mut tx = self.writer().begin().await?;
        let n = sqlx::query(
            "INSERT INTO questions (source, repo, installation_id, issue, pull_request, thread, \
             base_branch, author, question, created_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) ON CONFLICT DO NOTHING",
        )
        .bind(q.source)
        .bind(q.repo.as_str())
        .bind(q.installation_id.0 as i64)
        .bind(q.issue as i64)
        .bind(i64::from(q.pull_request))
        .bind(q.thread.map(|t| t as i64))
        .bind(q.base_branch)
        .bind(q.author)
        .bind(q.question)
        .bind(now)
        .execute(&mut *tx)
        .await?
        .rows_affected();
        if n == 1 {
            enqueue_in(&mut tx, &JobKey::Question(q.source.to_owned()), now).await?;
        }
        tx.commit().await?;
        Ok(n == 1)
    }

    /// The question recorded under `source`.
    pub async fn question(&self, source: &str) -> Result<Option<Question>> {
        let row = sqlx::query(&format!(
            "SELECT {COLUMNS} FROM questions WHERE source = $1"
        ))
        .bind(source)
        .fetch_optional(self.reader())
        .await?;
        Ok(row.as_ref().map(question))
    }

    /// The questions answered on `repo`'s issue or pull request `issue` that were asked before
    /// question `before` (a follow-up's [`Question::id`]), the newest `limit`, oldest first.
    pub async fn answered_before(
        &self,
        repo: &str,
        issue: u64,
        before: i64,
        limit: usize,
    ) -> Result<Vec<Question>> {
        let rows = sqlx::query(&format!(
            "SELECT {COLUMNS} FROM questions WHERE repo = $1 AND issue = $2 \
             AND answer IS NOT NULL AND id < $3 ORDER BY id DESC LIMIT $4"
        ))
        .bind(repo)
        .bind(issue as i64)
        .bind(before)
        .bind(limit as i64)
        .fetch_all(self.reader())
        .await?;
        let mut out: Vec<Question> = rows.iter().map(question).collect();
        out.reverse();
        Ok(out)
    }

    /// Records the answer to `source`: its text, the reply as posted, the commit it read, what
    /// it cost.
    pub async fn answer_question(&self, source: &str, answer: &Answer<'_>) -> Result<()> {
        sqlx::query(
            "UPDATE questions SET answer = $1, reply = $2, commit_sha = $3, spend = $4, \
             answered_at = $5 WHERE source = $6",
        )
        .bind(answer.text)
        .bind(answer.reply)
        .bind(answer.commit)
        .bind(answer.spend.to_string())
        .bind(now_ms())
        .bind(source)
        .execute(self.writer())
        .await?;
        Ok(())
    }
}

/// What was asked lately, for `ask.rate` and `ask.daily_budget`: counts and the oldest of
/// each (milliseconds), and the spend with when it began.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Asked {
    pub by_person: u64,
    pub by_person_oldest: Option<i64>,
    pub in_repo: u64,
    pub in_repo_oldest: Option<i64>,
    /// `(created_at, cost in dollars)` of each answered question since the day's start.
    pub spent: Vec<(i64, f64)>,
}

impl Store {
    /// Whether another line of the comment `source` belongs to asked a question already.
    pub async fn comment_asked(&self, source: &str) -> Result<bool> {
        let Some((comment, _line)) = source.rsplit_once('#') else {
            return Ok(false);
        };
        let n: i64 = sqlx::query_scalar(
            "SELECT COUNT(*) FROM questions WHERE source LIKE $1 AND source <> $2",
        )
        .bind(format!("{}#%", comment.replace(['%', '_'], "")))
        .bind(source)
        .fetch_one(self.reader())
        .await?;
        Ok(n > 0)
    }

    /// What `author` and everyone asked on `repo` since `hour` (ms), and what answers cost
    /// since `day` (ms).
    pub async fn asked_since(
        &self,
        repo: &str,
        author: &str,
        hour: i64,
        day: i64,
    ) -> Result<Asked> {
        let person = sqlx::query(
            "SELECT COUNT(*), MIN(created_at) FROM questions \
             WHERE repo = $1 AND created_at > $2 AND author = $3",
        )
        .bind(repo)
        .bind(hour)
        .bind(author)
        .fetch_one(self.reader())
        .await?;
        let all = sqlx::query(
            "SELECT COUNT(*), MIN(created_at) FROM questions WHERE repo = $1 AND created_at > $2",
        )
        .bind(repo)
        .bind(hour)
        .fetch_one(self.reader())
        .await?;
        let rows = sqlx::query(
            "SELECT created_at, spend FROM questions WHERE repo = $1 AND created_at > $2 AND spend IS NOT NULL ORDER BY created_at",
        )
        .bind(repo)
        .bind(day)
        .fetch_all(self.reader())
        .await?;
        let spent = rows
            .iter()
            .map(|r| {
                let usd = r
                    .get::<Option<String>, _>(1)
                    .and_then(|s| serde_json::from_str::<serde_json::Value>(&s).ok())
                    .and_then(|v| v["cost_usd"].as_f64())
                    .unwrap_or(0.0);
                (r.get::<i64, _>(0), usd)
            })
            .collect();
        Ok(Asked {
            by_person: person.get::<i64, _>(0) as u64,
            by_person_oldest: person.get::<Option<i64>, _>(1),
            in_repo: all.get::<i64, _>(0) as u64,
            in_repo_oldest: all.get::<Option<i64>, _>(1),
            spent,
        })
    }

    /// Records why the question asked as `source` could not be answered.
    pub async fn question_failed(&self, source: &str, why: &str) -> Result<()> {
        sqlx::query("UPDATE questions SET error = $1 WHERE source = $2")
            .bind(why)
            .bind(source)
            .execute(self.writer())
            .await?;
        Ok(())
    }
}

fn question(r: &sqlx::any::AnyRow) -> Question {
    Question {
        id: r.get(0),
        source: r.get(1),
        repo: r.get(2),
        installation_id: InstallationId(r.get::<i64, _>(3) as u64),
        issue: r.get::<i64, _>(4) as u64,
        pull_request: r.get::<i64, _>(5) != 0,
        thread: r.get::<Option<i64>, _>(6).map(|t| t as u64),
        base_branch: r.get(7),
        author: r.get(8),
        question: r.get(9),
        answer: r.get(10),
        reply: r.get(11),
        commit_sha: r.get(12),
        spend: r
            .get::<Option<String>, _>(13)
            .and_then(|s| serde_json::from_str(&s).ok()),
        created_at: r.get(14),
        error: r.get(15),
    }
}
