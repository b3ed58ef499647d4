//! An OpenAI-compatible `/chat/completions` client: timeouts, and retries with backoff on
//! 429 and 5xx answers.

use std::time::Duration;

use serde_json::{Value, json};

use crate::config::{DEFAULT_LLM_TIMEOUT_MS, LlmConfig, TriageConfig};

#[derive(Debug, thiserror::Error)]
pub enum LlmError {
    #[error("LLM request to {endpoint} failed: {source}")]
    Http {
        endpoint: String,
        #[source]
        source: reqwest::Error,
    },
    #[error("LLM at {endpoint} answered {status}: {body}")]
    Status { endpoint: String, status: u16, body: String },
    #[error("LLM at {endpoint} sent an answer of more than {limit} bytes; it was not read")]
    TooLarge { endpoint: String, limit: usize },
    #[error("LLM at {endpoint} sent no message content")]
    NoContent { endpoint: String },
    #[error("LLM endpoint is not set: add `endpoint` to `traceAnalyzer.llm` (or the top-level `llm`) in the config")]
    NoEndpoint,
    #[error("LLM model is not set: add `model` to `traceAnalyzer.llm` (or the top-level `llm`) in the config")]
    NoModel,
}

/// Where and how to reach one model.
#[derive(Debug, Clone, PartialEq)]
pub struct LlmEndpoint {
    /// Base URL (`http://host/v1`) or the full `/chat/completions` URL.
    pub endpoint: String,
    pub model: String,
    pub api_key: Option<String>,
    pub timeout: Duration,
}

impl LlmEndpoint {
    /// The deep-analysis model: the analyzer's `llm` block merged onto the top-level one.
    pub fn deep(config: &LlmConfig) -> Result<Self, LlmError> {
        Ok(Self {
            endpoint: config.endpoint.clone().filter(|e| !e.is_empty()).ok_or(LlmError::NoEndpoint)?,
            model: config.model.clone().filter(|m| !m.is_empty()).ok_or(LlmError::NoModel)?,
            api_key: config.api_key.clone(),
            timeout: timeout(config.timeout_ms),
        })
    }

    /// The triage model (`llm.triage`), if configured.
    pub fn triage(config: &TriageConfig) -> Result<Self, LlmError> {
        if config.endpoint.is_empty() {
            return Err(LlmError::NoEndpoint);
        }
        if config.model.is_empty() {
            return Err(LlmError::NoModel);
        }
        Ok(Self {
            endpoint: config.endpoint.clone(),
            model: config.model.clone(),
            api_key: config.api_key.clone(),
            timeout: timeout(config.timeout_ms),
        })
    }

    fn url(&self) -> String {
        let base = self.endpoint.trim_end_matches('/');
        if base.ends_with("/chat/completions") { base.to_owned() } else { format!("{base}/chat/completions") }
    }
}

fn timeout(ms: Option<i64>) -> Duration {
    Duration::from_millis(ms.filter(|ms| *ms > 0).unwrap_or(DEFAULT_LLM_TIMEOUT_MS) as u64)
}

/// A chat client for one endpoint.
#[derive(Debug, Clone)]
pub struct LlmClient {
    http: reqwest::Client,
    endpoint: LlmEndpoint,
    retries: u32,
    backoff: Duration,
}

impl LlmClient {
    pub fn new(endpoint: LlmEndpoint) -> Self {
        Self { http: reqwest::Client::new(), endpoint, retries: 3, backoff: Duration::from_millis(500) }
    }

    /// Retries after 429/5xx: how many, and the first wait (doubled each time).
    pub fn with_retries(mut self, retries: u32, backoff: Duration) -> Self {
        self.retries = retries;
        self.backoff = backoff;
        self
    }

    pub fn model(&self) -> &str {
        &self.endpoint.model
    }

    /// Sends a system and a user message; returns the reply's text.
    pub async fn chat(&self, system: &str, user: &str) -> Result<String, LlmError> {
        let body = json!({
            "model": self.endpoint.model,
            "messages": [{"role": "system", "content": system}, {"role": "user", "content": user}],
            "temperature": 0.1,
        });
        let url = self.endpoint.url();
        let mut attempt = 0;
        loop {
            let mut request = self.http.post(&url).timeout(self.endpoint.timeout).json(&body);
            if let Some(key) = &self.endpoint.api_key {
                request = request.bearer_auth(key);
            }
            let http_error = |source| LlmError::Http { endpoint: url.clone(), source };
            let response = request.send().await.map_err(http_error)?;
            let status = response.status();
            if status.is_success() {
                let body = read_bounded(response, MAX_ANSWER_BYTES).await.map_err(http_error)?;
                let body = body.ok_or_else(|| LlmError::TooLarge { endpoint: url.clone(), limit: MAX_ANSWER_BYTES })?;
                let reply: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                return reply["choices"][0]["message"]["content"].as_str().map(str::to_owned).ok_or(LlmError::NoContent { endpoint: url });
            }
            let retryable = status.as_u16() == 429 || status.is_server_error();
            if !retryable || attempt >= self.retries {
                let text = read_bounded(response, 4096).await.ok().flatten().unwrap_or_default();
                let text = String::from_utf8_lossy(&text);
                return Err(LlmError::Status { endpoint: url, status: status.as_u16(), body: text.chars().take(200).collect() });
            }
            let wait = retry_after(&response).unwrap_or(self.backoff * 2u32.pow(attempt));
            tokio::time::sleep(wait.min(Duration::from_secs(60))).await;
            attempt += 1;
        }
    }
}

/// The largest answer read: a chat completion is a few KiB; a body beyond this is not one.
pub const MAX_ANSWER_BYTES: usize = 1 << 20;

/// The body of `response`, or `None` once it grows past `limit` bytes (the rest is not read).
async fn read_bounded(mut response: reqwest::Response, limit: usize) -> Result<Option<Vec<u8>>, reqwest::Error> {
    if response.content_length().is_some_and(|n| n > limit as u64) {
        return Ok(None);
    }
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await? {
        if body.len() + chunk.len() > limit {
            return Ok(None);
        }
        body.extend_from_slice(&chunk);
    }
    Ok(Some(body))
}

/// A `Retry-After` header in seconds.
fn retry_after(response: &reqwest::Response) -> Option<Duration> {
    let seconds: f64 = response.headers().get(reqwest::header::RETRY_AFTER)?.to_str().ok()?.trim().parse().ok()?;
    (seconds.is_finite() && seconds >= 0.0).then(|| Duration::from_secs_f64(seconds))
}
