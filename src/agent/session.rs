//! One agent run: a model in a loop with tools. Before every model call the budget is
//! checked; the tool calls the model asks for run one after another; tool errors go back to
//! the model as JSON it can act on; the loop stops when the model answers without a tool call
//! or a [`termination`](super::termination) rule fires. Phases (claim → load_context →
//! assemble_prompt → agent_loop → final_response → write_result → cleanup) are marked with
//! stage events by [`Session::phase`]. Before every model call the run's [`Interrupt`], when it
//! has one, is asked too: that is the checkpoint where a run stops for something outside it.

use std::future::Future;
use std::pin::Pin;
use std::time::Instant;

use super::events::{AgentEvent, EventSink, summarize, summarize_args};
use super::termination::{Limits, StopReason, Tracker};
use super::tools::Toolbox;
use crate::llm::budget::{Ledger, Prices};
use crate::llm::{LlmClient, LlmError, Message, Request, Usage};

/// Asked before every model call: `Some(why)` stops the run there with
/// [`StopReason::Interrupted`].
pub type Interrupt = dyn Fn() -> Pin<Box<dyn Future<Output = Option<String>> + Send>> + Send + Sync;

/// Everything a run needs besides its conversation and tools.
pub struct Session<'a> {
    /// Who is working (for the ledger and the timeline).
    pub role: &'a str,
    pub llm: &'a LlmClient,
    pub prices: &'a Prices,
    pub ledger: &'a Ledger,
    pub limits: Limits,
    pub events: EventSink,
    /// How many times this step was tried before (raises the temperature).
    pub step_retry: u32,
    /// Ask for a tool call on the first turn of a fresh conversation (roles that must act on
    /// the repository start by looking at it, not by answering from memory).
    pub act_first: bool,
    /// Asked before every model call (see [`Interrupt`]).
    pub interrupt: Option<&'a Interrupt>,
}

/// What a run did.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub stop: StopReason,
    /// The model's last words.
    pub summary: String,
    pub iterations: u32,
    pub usage: Usage,
    /// The whole conversation, for a follow-up turn.
    pub messages: Vec<Message>,
}

impl Session<'_> {
    /// Runs `f` as phase `stage`, marked by stage_enter and stage_exit events.
    pub async fn phase<T, F: Future<Output = T>>(&self, stage: &str, f: F) -> T {
        self.events.emit(AgentEvent::StageEnter {
            role: self.role.into(),
            stage: stage.into(),
        });
        let started = Instant::now();
        let out = f.await;
        self.events.emit(AgentEvent::StageExit {
            role: self.role.into(),
            stage: stage.into(),
            detail: format!("{} ms", started.elapsed().as_millis()),
        });
        out
    }

    /// The agent loop over `messages` with `toolbox`.
    pub async fn run(
        &self,
        mut messages: Vec<Message>,
        toolbox: &mut Toolbox,
    ) -> Result<Outcome, LlmError> {
        let specs = toolbox.specs();
        let mut usage = Usage::default();
        let mut tracker = Tracker::new(self.limits);
        let role = self.role.to_owned();
        let done = |stop, summary, iterations, usage, messages| {
            Ok(Outcome {
                stop,
                summary,
                iterations,
                usage,
                messages,
            })
        };
        for iteration in 1..=self.limits.max_iterations {
            if let Err(e) = self.ledger.check() {
                return done(
                    StopReason::Budget {
                        message: e.to_string(),
                    },
                    String::new(),
                    iteration - 1,
                    usage,
                    messages,
                );
            }
            if let Some(why) = match self.interrupt {
                Some(ask) => ask().await,
                None => None,
            } {
                return done(
                    StopReason::Interrupted { why },
                    String::new(),
                    iteration - 1,
                    usage,
                    messages,
                );
            }
            self.events.emit(AgentEvent::IterationStart {
                role: role.clone(),
                iteration,
            });
            let completion = self.ask(&messages, &specs, iteration, &mut usage).await?;
            let calls = completion.message.tool_calls.clone();
            let text = completion.message.content.clone().unwrap_or_default();
            messages.push(completion.message);
            if calls.is_empty() {
                return done(StopReason::Finished, text, iteration, usage, messages);
            }
            if !text.trim().is_empty() {
                self.events.emit(AgentEvent::Thinking {
                    role: role.clone(),
                    text: summarize(&text, 400),
                });
            }
            let stop = self
                .call_tools(calls, toolbox, &mut tracker, &mut messages)
                .await;
            if let Some(stop) = stop {
                return done(stop, text, iteration, usage, messages);
            }
        }
        done(
            StopReason::MaxIterations {
                limit: self.limits.max_iterations,
            },
            String::new(),
            self.limits.max_iterations,
            usage,
            messages,
        )
    }

    /// One model call on the conversation so far, its spend recorded and told.
    async fn ask(
        &self,
        messages: &[Message],
        specs: &[crate::llm::ToolSpec],
        iteration: u32,
        usage: &mut Usage,
    ) -> Result<crate::llm::Completion, LlmError> {
        let role = self.role;
        let started = Instant::now();
        let completion = self
            .llm
            .complete(Request {
                step_retry: self.step_retry,
                require_tool: self.act_first && iteration == 1,
                ..Request::new(messages, specs)
            })
            .await?;
        let elapsed = started.elapsed();
        let cost = self.prices.cost(&self.llm.route().model, completion.usage);
        self.ledger
            .record_call(role, completion.usage, cost, elapsed);
        usage.prompt_tokens += completion.usage.prompt_tokens;
        usage.completion_tokens += completion.usage.completion_tokens;
        crate::metrics::model_call(
            role,
            completion.usage.prompt_tokens,
            completion.usage.completion_tokens,
            cost,
        );
        self.events.emit(AgentEvent::LlmUsage {
            role: role.to_owned(),
            model: self.llm.route().model.clone(),
            prompt_tokens: completion.usage.prompt_tokens,
            completion_tokens: completion.usage.completion_tokens,
            cost_usd: cost,
            millis: elapsed.as_millis() as u64,
        });
        Ok(completion)
    }

    /// Runs the model's tool calls in order, each answered in `messages` (after a stop too, so
    /// the conversation stays valid); why the run stops, if a call made it stop.
    async fn call_tools(
        &self,
        calls: Vec<crate::llm::ToolCall>,
        toolbox: &mut Toolbox,
        tracker: &mut Tracker,
        messages: &mut Vec<Message>,
    ) -> Option<StopReason> {
        let role = self.role.to_owned();
        let mut stop = None;
        for call in calls {
            // Every call gets an answer, even after a stop, so the conversation stays valid.
            if stop.is_some() {
                messages.push(Message::tool_result(
                    &call.id,
                    r#"{"error":"stopped","message":"the run stopped before this call"}"#,
                ));
                continue;
            }
            let args = summarize_args(&call.function.arguments, 160);
            self.events.emit(AgentEvent::ToolStart {
                role: role.clone(),
                name: call.function.name.clone(),
                args: args.clone(),
            });
            let started = Instant::now();
            let result = toolbox
                .call(&call.function.name, &call.function.arguments)
                .await;
            let elapsed = started.elapsed();
            self.ledger.record_time(&role, elapsed);
            self.events.emit(AgentEvent::ToolComplete {
                role: role.clone(),
                name: call.function.name.clone(),
                args,
                millis: elapsed.as_millis() as u64,
                ok: result.is_ok(),
                error: result.as_ref().err().map(|e| e.kind.to_owned()),
                outcome: result
                    .as_ref()
                    .ok()
                    .filter(|_| matches!(call.function.name.as_str(), "shell" | "run_command"))
                    .and_then(|t| t.lines().next())
                    .map(|l| summarize(l, 200)),
            });
            stop = tracker.record(
                &call.function.name,
                &call.function.arguments,
                result.is_ok(),
            );
            let reply = match result {
                Ok(text) => text,
                Err(e) => e.to_json(),
            };
            messages.push(Message::tool_result(&call.id, reply));
        }
        stop
    }
}
