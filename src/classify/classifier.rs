//! Classifying findings: triage (optional) then deep analysis, each answer cached, every
//! prompt redacted, a bounded number of requests in flight and in total.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use futures::StreamExt;

use super::cache::LlmCache;
use super::llm::{LlmClient, LlmError};
use super::parse::{Classification, TriageVerdict, parse_classification, parse_triage};
use super::prompts::{DEEP_ANALYSIS_SYSTEM_PROMPT, TRIAGE_SYSTEM_PROMPT, deep_user_prompt, triage_user_prompt};
use crate::model::Finding;
use crate::redact::Redactor;

/// One event of a chain, as the transcript shows it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TranscriptEvent {
    pub ts_ms: i64,
    pub event_type: String,
    pub content: Option<String>,
    pub tool_name: Option<String>,
    pub tool_params: Option<String>,
    pub tool_result: Option<String>,
    pub tool_error: Option<String>,
}

#[derive(Debug, Clone)]
pub struct ClassifyOptions {
    /// Requests in flight at once.
    pub concurrency: usize,
    /// Requests in this run at most (cache hits are free).
    pub max_calls: Option<usize>,
    /// How long the whole stage may take; findings not classified by then stay unclassified.
    pub deadline: Duration,
}

impl Default for ClassifyOptions {
    fn default() -> Self {
        Self { concurrency: 4, max_calls: None, deadline: DEFAULT_DEADLINE }
    }
}

/// The default time the LLM stage may take.
pub const DEFAULT_DEADLINE: Duration = Duration::from_secs(600);

/// Failures in a row after which an endpoint is asked nothing more in this run.
pub const FAILURES_BEFORE_GIVING_UP: usize = 5;

/// What the LLM said about one finding.
#[derive(Debug, Clone, PartialEq)]
pub struct FindingVerdict {
    pub finding_id: String,
    pub triage: Option<TriageVerdict>,
    pub classification: Option<Classification>,
    /// Why the finding stayed unclassified, if it did.
    pub error: Option<String>,
}

impl FindingVerdict {
    /// Triage said this is a false positive.
    pub fn dropped(&self) -> bool {
        self.triage.as_ref().is_some_and(|t| !t.keep)
    }
}

#[derive(Debug, Clone, Default)]
pub struct ClassifyOutcome {
    /// One per finding, in the order given.
    pub verdicts: Vec<FindingVerdict>,
    pub llm_calls: usize,
    pub cache_hits: usize,
    /// Findings left unclassified because the call budget ran out.
    pub over_budget: usize,
}

/// The two tiers: triage is optional.
pub struct Tiers {
    pub triage: Option<LlmClient>,
    pub deep: LlmClient,
}

struct Run<'a> {
    tiers: &'a Tiers,
    chains: &'a HashMap<String, Vec<TranscriptEvent>>,
    redactor: &'a Redactor,
    cache: &'a LlmCache,
    max_calls: usize,
    calls: AtomicUsize,
    cache_hits: AtomicUsize,
    over_budget: AtomicUsize,
    deadline: Instant,
    /// Failed requests in a row, per model tier (triage, deep).
    failures_in_a_row: [AtomicUsize; 2],
}

enum Asked {
    Answer(String),
    OverBudget,
    Failed(LlmError),
    /// Not asked, or not waited for (the breaker or the deadline), and why.
    GaveUp(String),
}

/// Classifies `findings`, whose chains' events are in `chains` (by chain id).
pub async fn classify(
    findings: &[Finding],
    chains: &HashMap<String, Vec<TranscriptEvent>>,
    tiers: &Tiers,
    redactor: &Redactor,
    cache: &LlmCache,
    opts: &ClassifyOptions,
) -> ClassifyOutcome {
    let run = Run {
        tiers,
        chains,
        redactor,
        cache,
        max_calls: opts.max_calls.unwrap_or(usize::MAX),
        calls: AtomicUsize::new(0),
        cache_hits: AtomicUsize::new(0),
        over_budget: AtomicUsize::new(0),
        deadline: Instant::now() + opts.deadline,
        failures_in_a_row: [AtomicUsize::new(0), AtomicUsize::new(0)],
    };
    let verdicts = futures::stream::iter(findings).map(|f| run.one(f)).buffered(opts.concurrency.max(1)).collect::<Vec<_>>().await;
    ClassifyOutcome {
        verdicts,
        llm_calls: run.calls.load(Ordering::Relaxed).min(run.max_calls),
        cache_hits: run.cache_hits.load(Ordering::Relaxed),
        over_budget: run.over_budget.load(Ordering::Relaxed),
    }
}

impl Run<'_> {
    async fn one(&self, finding: &Finding) -> FindingVerdict {
        let mut verdict = FindingVerdict { finding_id: finding.finding_id.clone(), triage: None, classification: None, error: None };
        let mut finding = finding.clone();
        if let Some(triage) = &self.tiers.triage {
            let prompt = triage_user_prompt(&finding);
            match self.ask(triage, "triage", &finding.finding_id, TRIAGE_SYSTEM_PROMPT, &prompt, parse_triage).await {
                Ok(t) => {
                    if let Some(severity) = &t.severity {
                        finding.severity = *severity;
                    }
                    let keep = t.keep;
                    verdict.triage = Some(t);
                    if !keep {
                        return verdict;
                    }
                }
                Err(e) => {
                    verdict.error = Some(e);
                    return verdict;
                }
            }
        }
        let Some(chain) = self.chains.get(&finding.chain_id) else {
            verdict.error = Some(format!("chain {} not found", finding.chain_id));
            return verdict;
        };
        let prompt = deep_user_prompt(&finding, chain);
        let deep = &self.tiers.deep;
        match self.ask(deep, "deep", &finding.finding_id, DEEP_ANALYSIS_SYSTEM_PROMPT, &prompt, parse_classification).await {
            Ok(c) => verdict.classification = Some(c),
            Err(e) => verdict.error = Some(e),
        }
        verdict
    }

    /// An answer from the cache or the model, parsed; only parsable answers are cached.
    async fn ask<T>(
        &self,
        client: &LlmClient,
        tier: &str,
        finding_id: &str,
        system: &str,
        user: &str,
        parse: fn(&str, &str) -> Option<T>,
    ) -> Result<T, String> {
        let key = LlmCache::key(tier, finding_id, client.model());
        if let Some(parsed) = self.cache.get(&key).and_then(|a| parse(&a, client.model())) {
            self.cache_hits.fetch_add(1, Ordering::Relaxed);
            return Ok(parsed);
        }
        let answer = match self.call(client, tier, system, user).await {
            Asked::Answer(a) => a,
            Asked::OverBudget => return Err("LLM call budget used up".to_owned()),
            Asked::GaveUp(why) => return Err(why),
            Asked::Failed(e) => return Err(e.to_string()),
        };
        let parsed = parse(&answer, client.model()).ok_or_else(|| format!("{tier} answer is not the JSON asked for"))?;
        self.cache.put(key, answer);
        Ok(parsed)
    }

    async fn call(&self, client: &LlmClient, tier: &str, system: &str, user: &str) -> Asked {
        let failures = &self.failures_in_a_row[usize::from(tier == "deep")];
        if failures.load(Ordering::Relaxed) >= FAILURES_BEFORE_GIVING_UP {
            return Asked::GaveUp(format!("not asked: the {tier} model failed {FAILURES_BEFORE_GIVING_UP} times in a row"));
        }
        if Instant::now() >= self.deadline {
            return Asked::GaveUp("not asked: the LLM stage ran out of time".to_owned());
        }
        if self.calls.fetch_add(1, Ordering::Relaxed) >= self.max_calls {
            self.over_budget.fetch_add(1, Ordering::Relaxed);
            return Asked::OverBudget;
        }
        // Everything that leaves the machine is redacted, whatever the lake holds.
        let user = self.redactor.redact(user);
        match tokio::time::timeout_at(self.deadline.into(), client.chat(system, &user)).await {
            Ok(Ok(answer)) => {
                failures.store(0, Ordering::Relaxed);
                Asked::Answer(answer)
            }
            Ok(Err(e)) => {
                failures.fetch_add(1, Ordering::Relaxed);
                Asked::Failed(e)
            }
            Err(_) => Asked::GaveUp("the LLM stage ran out of time while waiting for the answer".to_owned()),
        }
    }
}

impl Tiers {
    /// The configured tiers, or `None` when `llm.enabled` is false.
    pub fn from_config(config: &crate::config::LlmConfig) -> Result<Option<Self>, LlmError> {
        if !config.enabled {
            return Ok(None);
        }
        let deep = LlmClient::new(super::llm::LlmEndpoint::deep(config)?);
        let triage = match &config.triage {
            Some(t) => Some(LlmClient::new(super::llm::LlmEndpoint::triage(t)?)),
            None => None,
        };
        Ok(Some(Self { triage, deep }))
    }
}
