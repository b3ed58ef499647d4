//! POSTing an alert to the webhook, with retries.

use std::time::Duration;

use serde_json::json;

use crate::model::Finding;
use crate::report::analysis::report_finding;

#[derive(Debug, thiserror::Error)]
#[error("webhook {url} did not take the alert for finding {finding}: {reason}")]
pub struct WebhookError {
    url: String,
    finding: String,
    reason: String,
}

pub struct Webhook {
    http: reqwest::Client,
    url: String,
    attempts: u32,
}

impl Webhook {
    pub fn new(url: &str) -> Self {
        Self { http: reqwest::Client::new(), url: url.to_owned(), attempts: 4 }
    }

    /// Sends `finding`; a 2xx answer within the attempts is success.
    pub async fn post(&self, finding: &Finding) -> Result<(), WebhookError> {
        let body = json!({
            "source": "tracelake",
            "kind": "finding",
            "finding": report_finding(finding.clone(), None),
        });
        let mut reason = String::new();
        for attempt in 0..self.attempts {
            if attempt > 0 {
                tokio::time::sleep(Duration::from_millis(250) * 2u32.pow(attempt - 1)).await;
            }
            match self.http.post(&self.url).timeout(Duration::from_secs(10)).json(&body).send().await {
                Ok(response) if response.status().is_success() => return Ok(()),
                Ok(response) => reason = format!("answered {}", response.status()),
                Err(e) => reason = e.to_string(),
            }
        }
        Err(WebhookError { url: self.url.clone(), finding: finding.finding_id.clone(), reason })
    }
}
