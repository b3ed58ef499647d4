//! The classification stage (with an LLM configured): the findings' chains as
//! transcripts, the two tiers' verdicts, and triage applied to the findings.

use datafusion::prelude::SessionContext;

use super::plan::Planned;
use super::{AnalyzeOptions, LlmStats, PipelineError};
use crate::classify::stage::{apply_triage, chain_transcripts};
use crate::classify::{ClassifyOptions, FindingVerdict, LlmCache, Tiers, classify};
use crate::engine::chains::{Slice, build_chains, define_analysis_events};
use crate::lake::Lake;
use crate::model::Finding;
use crate::redact::Redactor;

/// What the LLM said of the findings it was asked about, and what that cost.
pub struct LlmVerdicts {
    pub verdicts: Vec<FindingVerdict>,
    pub llm: LlmStats,
}

/// Asks the LLM about `findings` (the most severe of the run), dropping those triage
/// finds false.
pub async fn classify_findings(
    lake: &Lake,
    planned: &Planned,
    ctx: &SessionContext,
    tiers: &Tiers,
    redactor: &Redactor,
    opts: &AnalyzeOptions,
    findings: &mut Vec<Finding>,
) -> Result<LlmVerdicts, PipelineError> {
    // The chains of the findings' sessions, for their transcripts.
    let sessions: Vec<String> = findings.iter().map(|f| f.session.clone()).collect();
    define_analysis_events(ctx, &planned.increment, planned.context_ms, &Slice::Sessions(&sessions)).await?;
    build_chains(ctx, &planned.engine.sql_params).await?;
    let chains = chain_transcripts(ctx, findings).await?;
    let cache = LlmCache::open(lake);
    let defaults = ClassifyOptions::default();
    let options = ClassifyOptions {
        concurrency: if opts.llm_concurrency > 0 { opts.llm_concurrency } else { defaults.concurrency },
        max_calls: opts.max_llm_calls,
        deadline: opts.llm_deadline.unwrap_or(defaults.deadline),
    };
    let outcome = classify(findings, &chains, tiers, redactor, &cache, &options).await;
    cache.save()?;
    apply_triage(findings, &outcome.verdicts);
    let llm = LlmStats {
        calls: outcome.llm_calls,
        cache_hits: outcome.cache_hits,
        over_budget: outcome.over_budget,
        unclassified: outcome.verdicts.iter().filter(|v| !v.dropped() && v.classification.is_none()).count(),
    };
    Ok(LlmVerdicts { verdicts: outcome.verdicts, llm })
}
