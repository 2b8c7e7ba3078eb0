//! Prometheus metrics: every metric's name and help text in one place, the process-wide
//! recorder, and its text. Rooms record through the small functions here (so a name cannot be
//! mistyped twice). A leaf: it knows no other room. The gauges that describe the store —
//! tickets by state, jobs by status — are set by the dashboard, which reads the store when
//! `/metrics` is scraped, so several processes sharing one database all report the same.

use std::sync::OnceLock;
use std::time::Duration;

use metrics::{counter, describe_counter, describe_gauge, describe_histogram, gauge, histogram};
use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};

const DELIVERIES: &str = "vibeloop_deliveries_total";
const DELIVERY_OUTCOMES: &str = "vibeloop_delivery_outcomes_total";
const JOBS_RUN: &str = "vibeloop_job_runs_total";
const JOBS: &str = "vibeloop_jobs";
const TICKETS: &str = "vibeloop_tickets";
const GATE_SECONDS: &str = "vibeloop_gate_duration_seconds";
const MODEL_TOKENS: &str = "vibeloop_model_tokens_total";
const MODEL_COST: &str = "vibeloop_model_cost_microdollars_total";
const MODEL_CALLS: &str = "vibeloop_model_calls_total";
const SANDBOX_STARTS: &str = "vibeloop_sandbox_starts_total";
const SANDBOX_REUSES: &str = "vibeloop_sandbox_reuses_total";

static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();

/// Installs the recorder (once per process; later calls return the same handle).
pub fn install() -> PrometheusHandle {
    HANDLE
        .get_or_init(|| {
            let recorder = PrometheusBuilder::new()
                .set_buckets(&[
                    0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0,
                ])
                .expect("bucket list is not empty")
                .build_recorder();
            let handle = recorder.handle();
            // Only fails when a recorder is already set, which OnceLock rules out here.
            let _ = metrics::set_global_recorder(recorder);
            describe();
            handle
        })
        .clone()
}

fn describe() {
    describe_counter!(
        DELIVERIES,
        "Webhook deliveries received, by event and answer."
    );
    describe_counter!(DELIVERY_OUTCOMES, "Deliveries processed, by outcome.");
    describe_counter!(JOBS_RUN, "Job runs, by kind and outcome.");
    describe_gauge!(JOBS, "Jobs in the store, by status.");
    describe_gauge!(TICKETS, "Tickets in the store, by state.");
    describe_histogram!(
        GATE_SECONDS,
        "Duration of a quality gate, by gate and result."
    );
    describe_counter!(
        MODEL_TOKENS,
        "Model tokens, by role and kind (prompt, completion)."
    );
    describe_counter!(
        MODEL_COST,
        "Model cost in millionths of a US dollar, by role."
    );
    describe_counter!(MODEL_CALLS, "Model calls, by role.");
    describe_counter!(SANDBOX_STARTS, "Sandbox starts, by backend and outcome.");
    describe_counter!(
        SANDBOX_REUSES,
        "Sandboxes given a second piece of work instead of a fresh start, by backend."
    );
}

/// Everything recorded so far, in Prometheus's text format.
pub fn render() -> String {
    install().render()
}

/// Gauge: `n` tickets are in `state`.
pub fn tickets_in(state: &'static str, n: i64) {
    gauge!(TICKETS, "state" => state).set(n as f64);
}

/// Gauge: `n` jobs have `status`.
pub fn jobs_in(status: &'static str, n: i64) {
    gauge!(JOBS, "status" => status).set(n as f64);
}

/// A delivery reached `/webhook` and was answered `status` (202, 200, 401…).
pub fn delivery_received(event: &str, status: u16) {
    let event = if event.len() > 40 { "other" } else { event };
    counter!(DELIVERIES, "event" => event.to_owned(), "status" => status.to_string()).increment(1);
}

/// A stored delivery was processed: `processed`, `ignored`, `unparsed`, `rejected`, `failed`.
pub fn delivery_processed(outcome: &'static str) {
    counter!(DELIVERY_OUTCOMES, "outcome" => outcome).increment(1);
}

/// A job run ended: `done`, `retry` or `failed`.
pub fn job_ran(kind: &'static str, outcome: &'static str) {
    counter!(JOBS_RUN, "kind" => kind, "outcome" => outcome).increment(1);
}

/// A gate finished after `took`.
pub fn gate_finished(gate: &'static str, status: &'static str, took: Duration) {
    histogram!(GATE_SECONDS, "gate" => gate, "status" => status).record(took.as_secs_f64());
}

/// A model call of `role` used these tokens and cost.
pub fn model_call(role: &str, prompt_tokens: u64, completion_tokens: u64, cost_usd: f64) {
    let role = role.to_owned();
    counter!(MODEL_CALLS, "role" => role.clone()).increment(1);
    counter!(MODEL_TOKENS, "role" => role.clone(), "kind" => "prompt").increment(prompt_tokens);
    counter!(MODEL_TOKENS, "role" => role.clone(), "kind" => "completion")
        .increment(completion_tokens);
    // Counters are whole numbers: the cost is counted in millionths of a dollar.
    counter!(MODEL_COST, "role" => role).increment((cost_usd * 1e6).round() as u64);
}

/// A sandbox was started (`ok`) or could not be (`failed`).
pub fn sandbox_started(backend: &'static str, ok: bool) {
    let outcome = if ok { "ok" } else { "failed" };
    counter!(SANDBOX_STARTS, "backend" => backend, "outcome" => outcome).increment(1);
}

/// A started sandbox was given a second piece of work instead of a fresh one starting.
pub fn sandbox_reused(backend: &'static str) {
    counter!(SANDBOX_REUSES, "backend" => backend).increment(1);
}
