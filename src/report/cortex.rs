//! The report's section per agent on what its conversations hold: open threads, recent
//! decisions, and mood over time (the `threads`, `decisions` and `moods` views).

use datafusion::prelude::SessionContext;
use serde::Serialize;
use serde_json::Value;

use crate::engine::{EngineError, query_json};

/// Agents shown at most (those with the most threads and decisions first), and of each
/// its open threads and decisions.
const AGENTS: usize = 10;
const THREADS: usize = 7;
const DECISIONS: usize = 5;

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentCortex {
    pub agent: String,
    /// `{title, priority, waitingFor, mood, lastActivity}` of the open threads, by
    /// priority then recency.
    pub open_threads: Vec<Value>,
    /// `{what, impact, who, ts}`, the latest first.
    pub decisions: Vec<Value>,
    /// `{day, mood, count}` of the messages with a mood other than neutral.
    pub moods: Vec<Value>,
}

/// The agents whose conversations hold threads or decisions, with theirs.
pub async fn agent_cortex(ctx: &SessionContext) -> Result<Vec<AgentCortex>, EngineError> {
    let threads = query_json(
        ctx,
        &format!(
            "SELECT agent, title, priority, waiting_for AS \"waitingFor\", mood, CAST(last_activity AS BIGINT) AS \"lastActivity\" FROM \
             (SELECT *, row_number() OVER (PARTITION BY agent ORDER BY priority = 'high' DESC, last_activity DESC) AS n \
              FROM threads WHERE status = 'open') WHERE n <= {THREADS} ORDER BY agent, n"
        ),
    )
    .await?;
    let decisions = query_json(
        ctx,
        &format!(
            "SELECT agent, what, impact, who, CAST(ts AS BIGINT) AS ts FROM \
             (SELECT *, row_number() OVER (PARTITION BY agent ORDER BY ts DESC) AS n FROM decisions) WHERE n <= {DECISIONS} ORDER BY agent, n"
        ),
    )
    .await?;
    let moods = query_json(
        ctx,
        "SELECT agent, to_char(date_trunc('day', ts), '%Y-%m-%d') AS day, mood, count(*) AS count FROM cortex_messages \
         WHERE mood <> 'neutral' GROUP BY 1, 2, 3 ORDER BY 1, 2, 3",
    )
    .await?;
    let mut agents: Vec<AgentCortex> = Vec::new();
    let without_agent = |mut row: Value| -> (String, Value) {
        let agent = row.as_object_mut().and_then(|o| o.remove("agent")).and_then(|a| a.as_str().map(str::to_owned)).unwrap_or_default();
        (agent, row)
    };
    for (agent, row) in threads.into_iter().map(without_agent) {
        entry(&mut agents, &agent).open_threads.push(row);
    }
    for (agent, row) in decisions.into_iter().map(without_agent) {
        entry(&mut agents, &agent).decisions.push(row);
    }
    for (agent, row) in moods.into_iter().map(without_agent) {
        if let Some(a) = agents.iter_mut().find(|a| a.agent == agent) {
            a.moods.push(row);
        }
    }
    agents.sort_by(|a, b| {
        (b.open_threads.len() + b.decisions.len()).cmp(&(a.open_threads.len() + a.decisions.len())).then(a.agent.cmp(&b.agent))
    });
    agents.truncate(AGENTS);
    Ok(agents)
}

/// The entry of `agent`, added when it has none yet.
fn entry<'a>(agents: &'a mut Vec<AgentCortex>, agent: &str) -> &'a mut AgentCortex {
    let at = match agents.iter().position(|a| a.agent == agent) {
        Some(at) => at,
        None => {
            agents.push(AgentCortex { agent: agent.to_owned(), open_threads: Vec::new(), decisions: Vec::new(), moods: Vec::new() });
            agents.len() - 1
        }
    };
    &mut agents[at]
}
